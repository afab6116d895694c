// What a built decoder model exposes, checked the same way for every family: its initializers
// are exactly the family's parameter list (names and dims, none twice), and it reads and writes
// the named inputs and outputs (for staged decoders: the first stage's inputs, the last's outputs).

import assert from 'node:assert/strict';
import type { ParamSpec } from '../../weights/synthetic.js';
import type { ModelProto } from '../onnx-proto.js';

/** Asserts the initializers of `models` (one model, or a decoder's stages in order) are `specs`, and the graph inputs / outputs. */
export function assertModelIo(
  models: ModelProto | ModelProto[],
  specs: readonly ParamSpec[],
  io: { inputs: string[]; outputs: string[] },
): void {
  const stages = Array.isArray(models) ? models : [models];
  const initializers = stages.flatMap((m) => m.graph!.initializer!.map((t): [string, number[]] => [t.name!, (t.dims ?? []).map(Number)]));
  assert.equal(initializers.length, specs.length, 'one initializer per parameter');
  assert.deepEqual(new Map(initializers), new Map(specs.map((s) => [s.name, [...s.dims]])));
  assert.deepEqual(
    stages[0]!.graph!.input!.map((i) => i.name),
    io.inputs,
  );
  assert.deepEqual(
    stages.at(-1)!.graph!.output!.map((o) => o.name),
    io.outputs,
  );
}
