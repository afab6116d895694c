// Sample (output) and latent shapes, and the conversion between them for a family's ratios.
// Sizes are output pixels / frames on the outside, latent units inside the planner.

import { reason, type Reason } from '../errors.js';
import type { VaeGeometry } from '../families/types.js';

/** Output size: pixels, and frames for video families (N = 1 + k · temporalRatio). */
export interface SampleShape {
  height: number;
  width: number;
  frames?: number;
}

/** Latent size in latent units; `frames` is 1 for image families. */
export interface LatentShape {
  height: number;
  width: number;
  frames: number;
}

export function isPositiveInteger(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}

/** Reasons a sample shape cannot be produced by this geometry (empty when it can). */
export function sampleShapeReasons(g: VaeGeometry, sample: SampleShape, field = 'sampleShape'): Reason[] {
  const reasons: Reason[] = [];
  for (const axis of ['height', 'width'] as const) {
    const v = sample[axis];
    if (!isPositiveInteger(v)) {
      reasons.push(reason('SIZE_INVALID', `${field}.${axis}`, v, 'a positive integer number of pixels'));
    } else if (v % g.spatialRatio !== 0) {
      reasons.push(
        reason(
          'SIZE_NOT_WHOLE_LATENT',
          `${field}.${axis}`,
          v,
          `a multiple of ${g.spatialRatio} px`,
          `${field}.${axis} = ${v} px is not a whole number of latent units: the decoder outputs multiples of ${g.spatialRatio} px (nearest: ${nearestMultiples(v, g.spatialRatio)})`,
        ),
      );
    }
  }
  const frames = sample.frames;
  if (frames !== undefined) {
    if (!g.fiveDimLatents) {
      if (frames !== 1) reasons.push(reason('FRAMES_ON_IMAGE_FAMILY', `${field}.frames`, frames, '1 (this family decodes images)'));
    } else if (!isPositiveInteger(frames) || (frames - 1) % g.temporalRatio !== 0) {
      reasons.push(
        reason(
          'FRAMES_INVALID',
          `${field}.frames`,
          frames,
          `1 + k x ${g.temporalRatio} output frames (1, ${1 + g.temporalRatio}, ${1 + 2 * g.temporalRatio}, ...)`,
        ),
      );
    }
  }
  return reasons;
}

/** Latent shape of a valid sample shape (call `sampleShapeReasons` first). */
export function latentShapeOf(g: VaeGeometry, sample: SampleShape): LatentShape {
  const frames = g.fiveDimLatents && sample.frames !== undefined ? (sample.frames - 1) / g.temporalRatio + 1 : 1;
  return { height: sample.height / g.spatialRatio, width: sample.width / g.spatialRatio, frames };
}

/** Output shape a latent decodes to (frames: (F − 1) · rt + 1). */
export function sampleShapeOf(g: VaeGeometry, latent: LatentShape): Required<SampleShape> {
  return {
    height: latent.height * g.spatialRatio,
    width: latent.width * g.spatialRatio,
    frames: (latent.frames - 1) * g.temporalRatio + 1,
  };
}

/** The multiples of m nearest to v, in words: `lo or lo + m` (just `m` below it). */
export function nearestMultiples(v: number, m: number): string {
  const lo = Math.floor(v / m) * m;
  return lo === 0 ? `${m}` : `${lo} or ${lo + m}`;
}
