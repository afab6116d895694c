// Whether the installed plan is one diffusers itself can express and would run identically.

import type { Size2, VaeSpec } from '../families/types.js';

/**
 * AutoencoderKL / Flux.2 express tiling as a square `tile_sample_min_size` and a float
 * `tile_overlap_factor` f; diffusers computes stride int(Lmin·(1−f)) and blend int(Smin·f) in
 * double precision (as JS does), so the plan is equivalent when those reproduce ours exactly.
 * HunyuanVideo 1.5 has per-axis windows and one factor. Family B stores window and stride per
 * axis, so every valid plan is expressible. TAE has no diffusers loop.
 */
export function diffusersEquivalent(vae: VaeSpec): boolean {
  return diffusersDifference(vae) === null;
}

/** Why diffusers cannot run the installed plan identically (see `diffusersEquivalent`), in plain words; null when it can. */
export function diffusersDifference(vae: VaeSpec): string | null {
  const { window, overlap } = vae.tiling;
  const r = vae.geometry.spatialRatio;
  switch (vae.family.diffusersTiling) {
    case 'none':
      return `diffusers has no tiled decode for ${vae.family.name}`;
    case 'window-and-stride':
    case 'tile-and-min-overlap':
      // The tile and the minimum overlap are the class's own attributes, set exactly.
      return null;
    case 'windows-with-overlap-factor':
      return overlapFactorDifference(window, overlap, r);
    case 'square-with-overlap-factor': {
      if (window.height !== window.width)
        return `diffusers tiles with square windows (tile_sample_min_size); this window is ${window.height}x${window.width}`;
      if (overlap.height !== overlap.width)
        return `diffusers has one overlap factor for both axes; this overlap is ${overlap.height}x${overlap.width}`;
      const f = overlap.height / window.height;
      const stride = Math.trunc((window.height / r) * (1 - f));
      const blend = Math.trunc(window.height * f);
      if (stride === (window.height - overlap.height) / r && blend === overlap.height) return null;
      return `with tile_overlap_factor ${f} diffusers strides int(${window.height / r}·(1−f)) = ${stride} latent units and blends int(${window.height}·f) = ${blend} px, not ${(window.height - overlap.height) / r} and ${overlap.height}`;
    }
  }
}

/**
 * Per-axis windows with one overlap factor f (HunyuanVideo 1.5): diffusers strides
 * int(Lmin·(1−f)) latent units and blends int(Smin·f) px on each axis; the plan is equivalent when
 * the factor of one axis (overlap / window) reproduces both axes exactly.
 */
function overlapFactorDifference(window: Size2, overlap: Size2, r: number): string | null {
  const axes = ['height', 'width'] as const;
  const reproduces = (f: number) =>
    axes.every((a) => Math.trunc((window[a] / r) * (1 - f)) === (window[a] - overlap[a]) / r && Math.trunc(window[a] * f) === overlap[a]);
  if (axes.some((a) => reproduces(overlap[a] / window[a]))) return null;
  return `diffusers has one tile_overlap_factor for both axes; no factor gives this overlap ${overlap.height}x${overlap.width} on the ${window.height}x${window.width} window`;
}
