// Test helper: a family's decoder graph run on onnxruntime-web's WASM provider (one thread) — the
// module package.json's `browser` map puts in a page — here in Node, for the families' web tests.

import assert from 'node:assert/strict';
import type { GraphBuilder } from '../../graph/builder.js';
import { configureWebRuntime, createSession } from '../../runtime/web-session.js';
import type { Tensor } from '../../tensor.js';

/**
 * Opens a WASM session on `graph` (one input `latent`, one output `sample`), checks it is WASM,
 * and hands `decode` its run; by default the decode is one run of `latent`. Disposes of it after.
 */
export async function decodeOnWasm(
  graph: GraphBuilder,
  latent: Tensor,
  decode: (run: (latent: Tensor) => Promise<Tensor>, latent: Tensor) => Promise<Tensor> = (run, z) => run(z),
): Promise<Tensor> {
  configureWebRuntime({ threads: 1 });
  const session = await createSession(graph.toModel(), { provider: 'wasm' });
  try {
    assert.equal(session.provider, 'wasm');
    return await decode(async (z) => (await session.run({ latent: z }))['sample']!, latent);
  } finally {
    await session.dispose();
  }
}
