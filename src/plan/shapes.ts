// Sample (output) and latent shapes, and the conversion between them for a family's ratios.
// Sizes are output pixels / frames on the outside, latent units inside the planner.

import { reason, type Reason } from '../errors.js';
import { clipOutputFrames } from '../families/clip-frames.js';
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
    } else if (g.clips) {
      if (!isPositiveInteger(frames) || clipLatentFrames(g, frames) === null) {
        const latent = Array.from({ length: 12 }, (_, i) => i + 1)
          .filter((t) => clipOutputFrames(g.clips!, t) !== null)
          .slice(0, 6);
        const valid = latent.map((t) => clipOutputFrames(g.clips!, t)!);
        reasons.push(
          reason(
            'FRAMES_INVALID',
            `${field}.frames`,
            frames,
            `a frame count the clip loop yields (${valid.join(', ')}, ...)`,
            `${field}.frames = ${frames}: this decoder runs in fixed clips (clip_length ${g.clips.clipLength}, token_drop ${g.clips.tokenDrop}), so T = ${latent.join(', ')}, ... latent frames give ${valid.join(', ')}, ... frames`,
          ),
        );
      }
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

/** The latent frames a clip-decoding geometry decodes to exactly `frames` output frames, or null (none does). */
function clipLatentFrames(g: VaeGeometry, frames: number): number | null {
  // Output frames grow with latent frames and are never fewer, so T ≤ frames.
  for (let t = 1; t <= frames; t++) if (clipOutputFrames(g.clips!, t) === frames) return t;
  return null;
}

/** Output frames of `latentFrames` latent frames: (F − 1) · rt + 1, or the clip loop's count (MiniMax-H3). */
export function outputFramesOf(g: VaeGeometry, latentFrames: number): number {
  if (g.clips) return clipOutputFrames(g.clips, latentFrames) ?? 0;
  return (latentFrames - 1) * g.temporalRatio + 1;
}

/** Latent shape of a valid sample shape (call `sampleShapeReasons` first). */
export function latentShapeOf(g: VaeGeometry, sample: SampleShape): LatentShape {
  const given = g.fiveDimLatents && sample.frames !== undefined;
  const frames = !given ? 1 : g.clips ? clipLatentFrames(g, sample.frames!)! : (sample.frames! - 1) / g.temporalRatio + 1;
  return { height: sample.height / g.spatialRatio, width: sample.width / g.spatialRatio, frames };
}

/** Output shape a latent decodes to (frames: (F − 1) · rt + 1, or the clip loop's count). */
export function sampleShapeOf(g: VaeGeometry, latent: LatentShape): Required<SampleShape> {
  return {
    height: latent.height * g.spatialRatio,
    width: latent.width * g.spatialRatio,
    frames: outputFramesOf(g, latent.frames),
  };
}

/** The multiples of m nearest to v, in words: `lo or lo + m` (just `m` below it). */
export function nearestMultiples(v: number, m: number): string {
  const lo = Math.floor(v / m) * m;
  return lo === 0 ? `${m}` : `${lo} or ${lo + m}`;
}
