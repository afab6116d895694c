// A model split into stages, each its own ONNX model and session, run one after another. An
// ONNX model is one protobuf message, which cannot exceed 2 GiB, and serialising one costs a
// multiple of its weights in memory: a decoder with about 2 GiB of float32 weights (LTX-2's)
// can be built only in parts. Stages are serialised and opened one at a time, so a build holds
// at most one stage's bytes. Every value a stage outputs is available, by name, to every later
// stage; inputs no stage produces come from the caller's feeds.

import { DistVaeError } from '../errors.js';
import type { GraphBuilder } from '../graph/builder.js';
import type { Tensor } from '../tensor.js';
import { createSession } from './session.js';
import type { Session, SessionOptions } from './session-types.js';

export interface StagedSession {
  /** Runs every stage in order; returns the last stage's outputs. */
  run(feeds: Readonly<Record<string, Tensor>>): Promise<Record<string, Tensor>>;
  dispose(): Promise<void>;
}

export async function createStagedSession(stages: readonly GraphBuilder[], options: SessionOptions): Promise<StagedSession> {
  if (stages.length === 0) throw new DistVaeError('INVALID_ARGUMENT', 'a staged model needs at least one stage');
  const sessions: Session[] = [];
  try {
    for (const stage of stages) sessions.push(await createSession(stage.toModel(), options));
  } catch (e) {
    await Promise.all(sessions.map((s) => s.dispose()));
    throw e;
  }
  return {
    async run(feeds) {
      const values: Record<string, Tensor> = { ...feeds };
      let last: Record<string, Tensor> = {};
      for (const [k, session] of sessions.entries()) {
        const missing = session.inputNames.filter((name) => !(name in values));
        if (missing.length > 0)
          throw new DistVaeError(
            'INVALID_ARGUMENT',
            `stage ${k} of ${stages[k]!.name} needs ${missing.join(', ')}, which neither the feeds nor an earlier stage provide`,
          );
        last = await session.run(Object.fromEntries(session.inputNames.map((name) => [name, values[name]!])));
        Object.assign(values, last);
      }
      return last;
    },
    async dispose() {
      await Promise.all(sessions.map((s) => s.dispose()));
    },
  };
}
