// Latent tensors against a VAE: shape checks before any work (rank, channels, sizes, finite
// values), and the slicing of latent tiles and temporal chunks.

import { reason, type Reason, refuse } from '../errors.js';
import { clipPlan } from '../families/clip-frames.js';
import type { VaeSpec } from '../families/types.js';
import { validateLatents } from '../io/latents-check.js';
import type { Span, Tile } from '../plan/grid.js';
import type { LatentShape } from '../plan/shapes.js';
import type { Tensor } from '../tensor.js';

/** Checks `latents` fit the VAE (docs/design.md §9: 4-D for image families, 5-D for video ones) and returns the latent shape. */
export function checkLatents(vae: VaeSpec, latents: Tensor, source = 'latents'): LatentShape {
  const g = vae.geometry;
  const rank = g.fiveDimLatents ? 5 : 4;
  const layout = g.fiveDimLatents ? '(B, C, F, H, W)' : '(B, C, H, W)';
  const reasons: Reason[] = [];
  const dims = latents.dims;
  if (dims.length !== rank) {
    reasons.push(
      reason(
        'LATENT_RANK',
        `${source}.dims`,
        dims,
        `${rank} dimensions ${layout} for ${vae.family.name}`,
        `${source} has ${dims.length} dimensions [${dims.join(', ')}]; ${vae.family.name} expects ${rank}: ${layout}`,
      ),
    );
  } else {
    if (dims[1] !== g.latentChannels) {
      reasons.push(
        reason(
          'LATENT_CHANNELS',
          `${source}.channels`,
          dims[1],
          `${g.latentChannels} latent channels`,
          `${source} has ${dims[1]} channels; this ${vae.family.name} VAE expects ${g.latentChannels}`,
        ),
      );
    }
    dims.forEach((d, i) => {
      if (!Number.isInteger(d) || d < 1)
        reasons.push(
          reason(
            'LATENT_EMPTY',
            `${source}.dims[${i}]`,
            d,
            'a positive size',
            `${source} dimension ${i} is ${d}: latents must not be empty`,
          ),
        );
    });
  }
  if (reasons.length === 0 && g.clips && clipPlan(g.clips, dims[2]!) === null) {
    const least = Array.from({ length: g.clips.chunk + 1 }, (_, i) => i + 1).find((t) => clipPlan(g.clips!, t) !== null);
    reasons.push(
      reason(
        'LATENT_SIZE',
        `${source}.frames`,
        dims[2],
        `at least ${least} latent frames`,
        `${source} has ${dims[2]} latent frame(s): ${vae.family.name} decodes in clips of ${g.clips.chunk} latent frames and runs none for fewer than ${least} (diffusers raises there)`,
      ),
    );
  }
  if (reasons.length > 0) refuse('TENSOR_INVALID', reasons);
  validateLatents(latents, source);
  const [h, w] = dims.slice(-2) as [number, number];
  return { height: h, width: w, frames: g.fiveDimLatents ? dims[2]! : 1 };
}

/** Copies latent frames [f0, f1) (5-D) and rows/cols of a tile into a new tensor. */
export function sliceLatent(latents: Tensor, tile: Pick<Tile, 'y0' | 'y1' | 'x0' | 'x1'>, frames?: Span): Tensor {
  const dims = latents.dims;
  const five = dims.length === 5;
  const [b, c] = dims as [number, number];
  const f = five ? dims[2]! : 1;
  const [h, w] = dims.slice(-2) as [number, number];
  const f0 = frames?.start ?? 0;
  const f1 = frames?.end ?? f;
  const th = tile.y1 - tile.y0;
  const tw = tile.x1 - tile.x0;
  const tf = f1 - f0;
  const out = new Float32Array(b * c * tf * th * tw);
  let o = 0;
  for (let p = 0; p < b * c; p++) {
    for (let t = f0; t < f1; t++) {
      for (let y = tile.y0; y < tile.y1; y++) {
        const from = ((p * f + t) * h + y) * w + tile.x0;
        out.set(latents.data.subarray(from, from + tw), o);
        o += tw;
      }
    }
  }
  return { dims: five ? [b, c, tf, th, tw] : [b, c, th, tw], data: out };
}

/** Latent frames [f0, f1) of a 5-D latent (all rows and columns). */
export function sliceFrames(latents: Tensor, frames: Span): Tensor {
  const [h, w] = latents.dims.slice(-2) as [number, number];
  return sliceLatent(latents, { y0: 0, y1: h, x0: 0, x1: w }, frames);
}
