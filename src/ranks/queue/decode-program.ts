// The rank program a queue worker decodes tiles with. It runs on a worker thread of the worker
// process (a one-rank local group per concurrent run), because an onnxruntime call blocks the
// thread it runs on: the worker's own event loop must stay free to renew its job locks, or a
// tile longer than the lock would look like a dead worker to the queue. A worker started with an
// encoder (`VaeRef.part`) runs encoder tiles the same way: image slices in, latent tiles out.

import type { Tensor } from '../../tensor.js';
import { programRef, type RankContext, type VaeRef } from '../program.js';

export const DECODE_TILE = programRef(new URL('./decode-program.js', import.meta.url), 'decodeTile');

/**
 * Decodes one latent slice with the VAE `vae` names (loaded once per thread, hash-checked) — or,
 * for a worker serving an encoder (`vae.part` 'encoder'), encodes one image slice with it; a
 * null input only loads it.
 */
export async function decodeTile(
  ctx: RankContext,
  input: { vae: VaeRef; latent: Tensor | null },
): Promise<{ tile: Tensor | null; decoderSeconds: number }> {
  const { runner } = input.vae.part === 'encoder' ? await ctx.loadEncoder(input.vae) : await ctx.loadVae(input.vae);
  if (!input.latent) return { tile: null, decoderSeconds: 0 };
  const started = performance.now();
  const tile = await runner.decode(input.latent, ctx.signal);
  return { tile, decoderSeconds: (performance.now() - started) / 1000 };
}
