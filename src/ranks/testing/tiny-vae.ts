// The tiny synthetic AutoencoderKL the distribution tests decode with (2× spatial, 4 latent
// channels, attention in the mid block), plan helpers and a seeded latent.

import { loadVae, type Vae } from '../../decode/vae.js';
import { setTiling } from '../../plan/planner.js';
import type { Tensor } from '../../tensor.js';

export const TINY_KL = { block_out_channels: [16, 32], norm_num_groups: 8, layers_per_block: 1, sample_size: 32 };

/** One decoder thread, as the ranks of the tests use, so results compare bitwise. */
export function loadTinyVae(): Promise<Vae> {
  return loadVae({ family: 'autoencoder-kl', config: TINY_KL, weights: 'synthetic', seed: 0 }, { threads: 1 });
}

/** Installs an exact window / overlap plan (output pixels, height × width). */
export function installPlan(vae: Vae, window: [number, number], overlap: [number, number]): void {
  setTiling(vae, { window: { height: window[0], width: window[1] }, overlap: { height: overlap[0], width: overlap[1] } });
}

export function seededLatent(height: number, width: number, seed = 1): Tensor {
  const data = new Float32Array(4 * height * width);
  let s = seed;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    data[i] = (s / 2147483648) * 4 - 2;
  }
  return { dims: [1, 4, height, width], data };
}

/** Plans with clipped edges, strips, odd sizes, one tile, few tiles, zero and large overlap (latent h × w). */
export const TILE_CASES: { name: string; latent: [number, number]; window: [number, number]; overlap: [number, number] }[] = [
  { name: 'grid with clipped last row and column', latent: [40, 56], window: [32, 32], overlap: [8, 8] },
  { name: 'odd latent, rectangular window, unequal overlaps', latent: [37, 53], window: [24, 40], overlap: [6, 12] },
  { name: 'horizontal strips', latent: [50, 20], window: [24, 64], overlap: [8, 0] },
  { name: 'vertical strips', latent: [14, 45], window: [32, 20], overlap: [0, 6] },
  { name: 'zero overlap', latent: [21, 19], window: [16, 16], overlap: [0, 0] },
  { name: 'two tiles (fewer than ranks)', latent: [12, 20], window: [32, 32], overlap: [8, 8] },
  { name: 'one tile (latent fits the window): decoded whole on one rank', latent: [9, 7], window: [32, 32], overlap: [8, 8] },
  { name: 'overlap above half the window: raw tiles, raster assembly', latent: [14, 17], window: [16, 16], overlap: [12, 10] },
];
