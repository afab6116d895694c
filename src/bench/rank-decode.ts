// A whole decode on one rank of a local group, for the benchmark's arms that run on a single
// rank (the untiled baseline, and every tiled plan when there is one rank): the rank loads the
// VAE (cached across runs), installs the arm's tiling and decodes locally, so the process's
// peak RSS of the run is the arm's. Ranks given no input idle.

import type { TilingState } from '../families/types.js';
import { installTiling } from '../plan/planner.js';
import { programRef, type RankContext, type VaeRef } from '../ranks/program.js';
import type { Tensor } from '../tensor.js';

export const RANK_DECODE_PROGRAM = programRef(new URL('./rank-decode.js', import.meta.url), 'rankDecode');

export interface RankDecodeInput {
  vae: VaeRef;
  latents: Tensor;
  tiling: TilingState;
}

export interface RankDecodeResult {
  output: Tensor;
  /** Seconds inside `vae.decode` on the rank. */
  seconds: number;
}

export async function rankDecode(ctx: RankContext, input: RankDecodeInput | null): Promise<RankDecodeResult | null> {
  if (input === null) return null;
  const vae = await ctx.loadVae(input.vae);
  installTiling(vae, input.tiling);
  const t0 = performance.now();
  const output = await vae.decode(input.latents, { signal: ctx.signal });
  return { output, seconds: (performance.now() - t0) / 1000 };
}

export const RANK_LOAD_PROGRAM = programRef(new URL('./rank-decode.js', import.meta.url), 'rankLoad');

/** Loads (and caches) the VAE on every rank, so that no timed run pays for it. */
export async function rankLoad(ctx: RankContext, input: VaeRef): Promise<null> {
  await ctx.loadVae(input);
  return null;
}
