// The encode engine on video (B, C, F, H, W), with a stand-in encoder whose output depends on the
// whole input it is given (so tiling changes it): spatial tiles carry every frame and equal
// diffusers' `tiled_encode` loop written out in float64; encoders that declare temporal tiling
// equal diffusers' `_temporal_tiled_encode` loop written out too; frame counts the declared loop
// cannot take are refused with the valid form.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { encodedFrames, encodeFramesProblem, type EncodeFrames } from '../families/encode-frames.js';
import { planningVae } from '../families/registry.js';
import { HUNYUAN_VIDEO_TINY } from '../families/testing/video-configs.js';
import type { VaeSpec } from '../families/types.js';
import { assertMatchesReference } from '../graph/testing/compare.js';
import { setTiling } from '../plan/planner.js';
import { seededTensor, type Tensor } from '../tensor.js';
import { BoundEncoder } from './bound-encoder.js';
import type { EncoderDeclaration } from './engine.js';
import { referenceTiledEncode, type Tensor64 } from './testing/tiled-reference.js';

const CAUSAL: EncodeFrames = { kind: 'causal' };

/**
 * A stand-in video encoder in float64: latent frame j of a causal loop (frame 0, then rt frames
 * each), channel 0 the mean of its r×r block over those frames and the input channels, channel 1
 * that plus the mean of the whole input it was given (what makes tiles and chunks differ).
 */
function standIn(input: Tensor, r: number, rt: number): Tensor64 {
  const [b, c, f, h, w] = input.dims as [number, number, number, number, number];
  const lf = encodedFrames(CAUSAL, rt, f);
  const [lh, lw] = [h / r, w / r];
  const out: Tensor64 = { dims: [b, 2, lf, lh, lw], data: new Float64Array(b * 2 * lf * lh * lw) };
  for (let n = 0; n < b; n++) {
    let total = 0;
    for (let i = 0; i < c * f * h * w; i++) total += input.data[n * c * f * h * w + i]!;
    const mean = total / (c * f * h * w);
    for (let j = 0; j < lf; j++) {
      const [f0, f1] = j === 0 ? [0, 1] : [1 + (j - 1) * rt, 1 + j * rt];
      for (let y = 0; y < lh; y++)
        for (let x = 0; x < lw; x++) {
          let s = 0;
          for (let ch = 0; ch < c; ch++)
            for (let t = f0; t < f1; t++)
              for (let dy = 0; dy < r; dy++)
                for (let dx = 0; dx < r; dx++) s += input.data[(((n * c + ch) * f + t) * h + y * r + dy) * w + x * r + dx]!;
          const v = s / (c * (f1 - f0) * r * r);
          out.data[(((n * 2 + 0) * lf + j) * lh + y) * lw + x] = v;
          out.data[(((n * 2 + 1) * lf + j) * lh + y) * lw + x] = v + mean;
        }
    }
  }
  return out;
}

function videoEncoder(encoding: EncoderDeclaration): BoundEncoder & VaeSpec {
  const vae = planningVae('hunyuan-video', HUNYUAN_VIDEO_TINY);
  const { spatialRatio: r, temporalRatio: rt } = vae.geometry;
  const runner = {
    decode: async (x: Tensor) => {
      const y = standIn(x, r, rt);
      return { dims: y.dims, data: Float32Array.from(y.data) };
    },
    dispose: async () => undefined,
  };
  return new BoundEncoder(vae.family, vae.config, runner, encoding);
}

/** (B, C, F, H, W) ↔ (B, C·F, H, W): the same memory, frames folded into planes (what a spatial tile loop sees). */
const fold = <T extends { dims: readonly number[] }>(t: T): T => ({
  ...t,
  dims: [t.dims[0]!, t.dims[1]! * t.dims[2]!, ...t.dims.slice(3)],
});

test('a spatially tiled video encode carries every frame in each tile and equals diffusers’ tiled_encode loop', async () => {
  const encoder = videoEncoder({ frames: CAUSAL });
  const { spatialRatio: r, temporalRatio: rt } = encoder.geometry;
  const video = seededTensor([2, 3, 1 + 2 * rt, 40, 24], 3, 0.5);
  setTiling(encoder, { window: { height: 16, width: 16 }, overlap: { height: 8, width: 8 } });
  const latents = await encoder.encode(video);
  assert.deepEqual(latents.dims, [2, 2, 3, 10, 6]);
  const frames = video.dims[2]!;
  const reference = await referenceTiledEncode(fold(video), r, 16, 8, async (tile) =>
    fold(standIn({ dims: [2, 3, frames, tile.dims[2]!, tile.dims[3]!], data: tile.data }, r, rt)),
  );
  assertMatchesReference(latents, { dims: latents.dims, data: reference.data }, 'tiled video encode');
});

test('an encoder that declares temporal tiling equals diffusers’ _temporal_tiled_encode loop', async () => {
  const encoder = videoEncoder({ frames: CAUSAL, temporalTiling: { dropFrame: 'first' } });
  const { spatialRatio: r, temporalRatio: rt } = encoder.geometry;
  // 8-frame windows every 4 frames (overlap 4 = 1 latent frame blended), 21 frames: chunks at 0, 4, 8, 12, 16.
  setTiling(encoder, { window: { height: 16, width: 16 }, overlap: { height: 0, width: 0 }, frames: { window: 2 * rt, overlap: rt } });
  const video = seededTensor([1, 3, 1 + 5 * rt, 8, 12], 4, 0.5);
  const latents = await encoder.encode(video);
  // diffusers' loop, literally: tiles of window + 1 frames every stride, drop the first latent frame of later ones, blend_t, keep.
  const [tMin, tStride] = [2 * rt, rt];
  const blend = tMin / rt - tStride / rt;
  const keepLatent = tStride / rt;
  const frames = video.dims[2]!;
  const row: Tensor64[] = [];
  for (let i = 0; i < frames; i += tStride) {
    const f1 = Math.min(i + tMin + 1, frames);
    const chunk = sliceFrames64(video, i, f1);
    let tile = standIn(chunk, r, rt);
    if (i > 0) tile = dropFirstFrame(tile);
    row.push(tile);
  }
  const parts: Tensor64[] = row.map((tile, i) => {
    if (i > 0) blendT(row[i - 1]!, tile, blend);
    return keepFrames(tile, i > 0 ? keepLatent : keepLatent + 1);
  });
  const latentFrames = encodedFrames(CAUSAL, rt, frames);
  const expected = concatFrames(parts, latentFrames);
  assert.deepEqual(latents.dims, expected.dims);
  assertMatchesReference(latents, expected, 'temporally tiled encode');
  // Without the declaration, time is never cut: one call over all frames.
  const plain = videoEncoder({ frames: CAUSAL });
  plain.tiling = { ...encoder.tiling };
  assertMatchesReference(await plain.encode(video), standIn(video, r, rt), 'undeclared: one call');
});

test('video encoders refuse frame counts their loop cannot take, naming the valid form, and 4-D input', async () => {
  const encoder = videoEncoder({ frames: { kind: 'first-then-chunks', chunk: 4 } });
  const refused = (pattern: RegExp) => (e: unknown) => e instanceof DistVaeError && e.code === 'TENSOR_INVALID' && pattern.test(e.message);
  await assert.rejects(
    encoder.encode(seededTensor([1, 3, 7, 8, 8], 1)),
    refused(/7 frames is not of the form 1 \+ 4·k \(nearest: 5 or 9\)/),
  );
  await assert.rejects(encoder.encode(seededTensor([1, 3, 8, 8], 1)), refused(/takes \(B, C, F, H, W\) \(an image is one frame: F = 1\)/));
  assert.equal(encodeFramesProblem({ kind: 'clips', clipLength: 17, tokenDrop: 3 }, 4, 23), null);
  assert.equal(encodedFrames({ kind: 'clips', clipLength: 17, tokenDrop: 3 }, 4, 1), 1);
  assert.equal(encodedFrames({ kind: 'clips', clipLength: 17, tokenDrop: 3 }, 4, 18), 7);
  assert.equal(encodedFrames({ kind: 'first-then-chunks', chunk: 4 }, 2, 9), 5);
  assert.equal(encodedFrames({ kind: 'first-then-chunks', chunk: 4 }, 4, 9), 3);
});

// ---- float64 helpers of the temporal reference ----

function sliceFrames64(video: Tensor, f0: number, f1: number): Tensor {
  const [b, c, f, h, w] = video.dims as [number, number, number, number, number];
  const plane = h * w;
  const data = new Float32Array(b * c * (f1 - f0) * plane);
  for (let p = 0; p < b * c; p++) data.set(video.data.subarray((p * f + f0) * plane, (p * f + f1) * plane), p * (f1 - f0) * plane);
  return { dims: [b, c, f1 - f0, h, w], data };
}

function framesOf(t: Tensor64, from: number, count: number): Tensor64 {
  const [b, c, f, h, w] = t.dims as [number, number, number, number, number];
  const plane = h * w;
  const data = new Float64Array(b * c * count * plane);
  for (let p = 0; p < b * c; p++) data.set(t.data.subarray((p * f + from) * plane, (p * f + from + count) * plane), p * count * plane);
  return { dims: [b, c, count, h, w], data };
}

const dropFirstFrame = (t: Tensor64): Tensor64 => framesOf(t, 1, t.dims[2]! - 1);
const keepFrames = (t: Tensor64, n: number): Tensor64 => framesOf(t, 0, Math.min(n, t.dims[2]!));

/** diffusers' blend_t, in place on b. */
function blendT(a: Tensor64, b: Tensor64, extent: number): void {
  const [, , af, h, w] = a.dims as [number, number, number, number, number];
  const [n, c, bf] = b.dims as [number, number, number];
  const e = Math.min(af, bf, extent);
  const plane = h * w;
  for (let p = 0; p < n * c; p++)
    for (let x = 0; x < e; x++)
      for (let i = 0; i < plane; i++) {
        const o = (p * bf + x) * plane + i;
        b.data[o] = a.data[(p * af + af - e + x) * plane + i]! * (1 - x / e) + b.data[o]! * (x / e);
      }
}

function concatFrames(parts: Tensor64[], limit: number): Tensor64 {
  const [b, c, , h, w] = parts[0]!.dims as [number, number, number, number, number];
  const total = Math.min(
    limit,
    parts.reduce((s, t) => s + t.dims[2]!, 0),
  );
  const plane = h * w;
  const out: Tensor64 = { dims: [b, c, total, h, w], data: new Float64Array(b * c * total * plane) };
  for (let p = 0; p < b * c; p++) {
    let t0 = 0;
    for (const part of parts) {
      const f = part.dims[2]!;
      const n = Math.min(f, total - t0);
      if (n <= 0) break;
      out.data.set(part.data.subarray(p * f * plane, (p * f + n) * plane), (p * total + t0) * plane);
      t0 += n;
    }
  }
  return out;
}
