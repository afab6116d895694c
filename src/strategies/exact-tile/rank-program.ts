// The rank program of a halo-exact tile decode or encode: load the VAE's decoder or its encoder
// (`VaeRef.part`, cached by the rank), run each dealt tile (core + halo) through the rank's own
// runner, and return only the tiles' cores.

import { throwIfAborted } from '../../errors.js';
import { asPlanes } from '../../decode/engine.js';
import type { RankContext, VaeRef } from '../../ranks/program.js';
import type { Tensor } from '../../tensor.js';
import { copyBlock, corePlacement, type ExactTile, type PlaneBlock } from './halo.js';

export interface ExactTileWork {
  index: number;
  tile: ExactTile;
  /** The tile's input: a latent slice, or an encoder's image slice (read × r pixels). */
  latent: Tensor;
}

export interface ExactTileRankInput {
  vae: VaeRef;
  perLatent: number;
  work: ExactTileWork[];
}

export interface ExactTileRankResult {
  /** Each tile's core planes (B·C planes of core rows × core cols), by tile index. */
  cores: (PlaneBlock & { index: number; leading: number[] })[];
  seconds: number;
  loadSeconds: number;
}

export async function exactTileRank(ctx: RankContext, input: ExactTileRankInput): Promise<ExactTileRankResult> {
  const started = performance.now();
  // An encoder's tiles are image slices through its runner, a decoder's latent slices through its.
  const { runner } = input.vae.part === 'encoder' ? await ctx.loadEncoder(input.vae) : await ctx.loadVae(input.vae);
  const loaded = performance.now();
  const cores: ExactTileRankResult['cores'] = [];
  for (const w of input.work) {
    throwIfAborted(ctx.signal);
    const raw = await runner.decode(w.latent, ctx.signal);
    const planes = asPlanes(raw);
    const c = corePlacement(w.tile, input.perLatent);
    const core: PlaneBlock = { planes: planes.planes, height: c.h, width: c.w, data: new Float32Array(planes.planes * c.h * c.w) };
    copyBlock(planes, c.sy, c.sx, c.h, c.w, core, 0, 0);
    cores.push({ ...core, index: w.index, leading: raw.dims.slice(0, -2) as number[] });
  }
  return { cores, seconds: (performance.now() - started) / 1000, loadSeconds: (loaded - started) / 1000 };
}
