// Whether the installed plan is one diffusers itself can express and would run identically.

import type { VaeSpec } from '../families/types.js';

/**
 * AutoencoderKL / Flux.2 express tiling as a square `tile_sample_min_size` and a float
 * `tile_overlap_factor` f; diffusers computes stride int(Lmin·(1−f)) and blend int(Smin·f) in
 * double precision (as JS does), so the plan is equivalent when those reproduce ours exactly.
 * Family B stores window and stride per axis, so every valid plan is expressible. TAE has no
 * diffusers loop.
 */
export function diffusersEquivalent(vae: VaeSpec): boolean {
  const { window, overlap } = vae.tiling;
  const r = vae.geometry.spatialRatio;
  switch (vae.family.diffusersTiling) {
    case 'none':
      return false;
    case 'window-and-stride':
      return true;
    case 'square-with-overlap-factor': {
      if (window.height !== window.width || overlap.height !== overlap.width) return false;
      const f = overlap.height / window.height;
      const windowLatent = window.height / r;
      return (
        Math.trunc(windowLatent * (1 - f)) === (window.height - overlap.height) / r && Math.trunc(window.height * f) === overlap.height
      );
    }
  }
}
