// Runs a built graph once on the CPU provider and returns its outputs: the one-liner tests use
// to compare a graph with a reference. Single-threaded, so results do not depend on the machine.

import { createSession } from '../../runtime/session.js';
import type { Tensor } from '../../tensor.js';
import type { GraphBuilder } from '../builder.js';

export async function runGraph(g: GraphBuilder, feeds: Record<string, Tensor>): Promise<Record<string, Tensor>> {
  const session = await createSession(g.toModel(), { provider: 'cpu', intraOpThreads: 1 });
  try {
    return await session.run(feeds);
  } finally {
    await session.dispose();
  }
}
