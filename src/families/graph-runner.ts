// A TileRunner over one built graph: one onnxruntime session, one input, one output. Families
// whose decoder (or encoder) is a single graph run it through this.

import { throwIfAborted } from '../errors.js';
import type { TileRunner } from './runtime-types.js';
import type { GraphBuilder } from '../graph/builder.js';
import { createSession } from '../runtime/session.js';
import type { SessionOptions } from '../runtime/session-types.js';

export async function graphRunner(
  graph: GraphBuilder,
  io: { input: string; output: string },
  session: SessionOptions,
): Promise<TileRunner> {
  const s = await createSession(graph.toModel(), session);
  return {
    async decode(tile, signal) {
      throwIfAborted(signal);
      const out = await s.run({ [io.input]: tile });
      return out[io.output]!;
    },
    dispose: () => s.dispose(),
  };
}
