// A plain transcription of the `_decode` dispatch, `tiled_decode` and `_temporal_tiled_decode`
// of diffusers' chunked video VAEs (AutoencoderKLHunyuanVideo, AutoencoderKLLTX2Video) in
// float64, for tests: every tile and chunk is decoded and kept, blends run in place in diffusers'
// order (blend_v, blend_h; blend_t with the already blended previous chunk), crops and the final
// slices are diffusers' own. Written from diffusers' variables (tile_sample_min_*,
// tile_sample_stride_*, in output pixels / frames) and independent of the planner's grid and of
// the streaming assemblers it checks. A case runner plans a decode through the planner and
// compares the decode with these loops.

import assert from 'node:assert/strict';
import { assertRelativeL2 } from '../../graph/testing/compare.js';
import type { NumericTensor, RefTensor } from '../../graph/testing/reference-ops.js';
import * as ref from '../../graph/testing/reference-ops.js';
import { tileFramePlan, tileOverlapPlan, tileShapePlan, setTiling } from '../../plan/planner.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import type { Vae } from '../vae.js';

export interface DiffusersVideoTiling {
  spatialRatio: number;
  temporalRatio: number;
  /** use_tiling, with tile_sample_min_{height,width} and tile_sample_stride_{height,width}. */
  tiling: { minHeight: number; minWidth: number; strideHeight: number; strideWidth: number } | null;
  /** use_framewise_decoding, with tile_sample_min_num_frames and tile_sample_stride_num_frames. */
  framewise: { minFrames: number; strideFrames: number } | null;
  /** Which decoded frame chunks after the first lose: HunyuanVideo the first, LTX-2 the last. */
  dropFrame: 'first' | 'last';
}

/** b[…, x, …] = a[…, a.len − e + x, …]·(1 − x/e) + b[…, x, …]·(x/e) along `axis`, in place. */
function blend(a: RefTensor, b: RefTensor, extent: number, axis: number): void {
  const e = Math.min(a.dims[axis]!, b.dims[axis]!, extent);
  const inner = b.dims.slice(axis + 1).reduce((p, d) => p * d, 1);
  const outer = b.dims.slice(0, axis).reduce((p, d) => p * d, 1);
  const aLen = a.dims[axis]!;
  const bLen = b.dims[axis]!;
  // a and b may differ along other axes only when clipped; both are full along the shared ones.
  const aInner = a.dims.slice(axis + 1).reduce((p, d) => p * d, 1);
  if (aInner !== inner) throw new Error(`blend: tiles differ beyond axis ${axis}`);
  for (let o = 0; o < outer; o++) {
    for (let x = 0; x < e; x++) {
      const w = x / e;
      const ai = (o * aLen + aLen - e + x) * inner;
      const bi = (o * bLen + x) * inner;
      for (let i = 0; i < inner; i++) b.data[bi + i] = a.data[ai + i]! * (1 - w) + b.data[bi + i]! * w;
    }
  }
}

function crop(t: RefTensor, axis: number, length: number): RefTensor {
  return ref.slice(t, axis, 0, Math.min(length, t.dims[axis]!));
}

/** `tiled_decode`: z (B, C, F, h, w) → raw output, every tile decoded over all its frames. */
function tiledDecode(z: NumericTensor, decode: (tile: RefTensor) => RefTensor, t: DiffusersVideoTiling): RefTensor {
  const s = t.tiling!;
  const [, , , height, width] = z.dims as number[];
  const r = t.spatialRatio;
  const latentMinH = Math.floor(s.minHeight / r);
  const latentMinW = Math.floor(s.minWidth / r);
  const latentStrideH = Math.floor(s.strideHeight / r);
  const latentStrideW = Math.floor(s.strideWidth / r);
  const rows: RefTensor[][] = [];
  for (let i = 0; i < height!; i += latentStrideH) {
    const row: RefTensor[] = [];
    for (let j = 0; j < width!; j += latentStrideW) {
      const band = ref.slice(z, 3, i, Math.min(i + latentMinH, height!));
      row.push(decode(ref.slice(band, 4, j, Math.min(j + latentMinW, width!))));
    }
    rows.push(row);
  }
  const resultRows = rows.map((row, i) =>
    ref.concat(
      row.map((tile, j) => {
        if (i > 0) blend(rows[i - 1]![j]!, tile, s.minHeight - s.strideHeight, 3);
        if (j > 0) blend(row[j - 1]!, tile, s.minWidth - s.strideWidth, 4);
        return crop(crop(tile, 3, s.strideHeight), 4, s.strideWidth);
      }),
      4,
    ),
  );
  return crop(crop(ref.concat(resultRows, 3), 3, height! * r), 4, width! * r);
}

/** `_decode` without temporal tiling: the spatial loop when the latent exceeds the tile, else one call. */
function spatialDecode(z: NumericTensor, decode: (tile: RefTensor) => RefTensor, t: DiffusersVideoTiling): RefTensor {
  const [, , , height, width] = z.dims as number[];
  const s = t.tiling;
  if (s && (width! > Math.floor(s.minWidth / t.spatialRatio) || height! > Math.floor(s.minHeight / t.spatialRatio)))
    return tiledDecode(z, decode, t);
  return decode(ref.toRef(z));
}

/** `vae.decode(z).sample` under the given tile attributes (no post-processing: both families have none). */
export function diffusersVideoDecode(z: NumericTensor, decode: (tile: RefTensor) => RefTensor, t: DiffusersVideoTiling): RefTensor {
  const frames = z.dims[2]!;
  const f = t.framewise;
  const rt = t.temporalRatio;
  if (!f || frames <= Math.floor(f.minFrames / rt)) return spatialDecode(z, decode, t);
  const latentMinFrames = Math.floor(f.minFrames / rt);
  const latentStrideFrames = Math.floor(f.strideFrames / rt);
  const row: RefTensor[] = [];
  for (let i = 0; i < frames; i += latentStrideFrames) {
    let decoded = spatialDecode(ref.slice(z, 2, i, Math.min(i + latentMinFrames + 1, frames)), decode, t);
    if (i > 0) {
      const n = decoded.dims[2]!;
      decoded = t.dropFrame === 'first' ? ref.slice(decoded, 2, 1, n) : ref.slice(decoded, 2, 0, n - 1);
    }
    row.push(decoded);
  }
  const kept = row.map((tile, i) => {
    if (i === 0) return crop(tile, 2, f.strideFrames + 1);
    blend(row[i - 1]!, tile, f.minFrames - f.strideFrames, 2);
    return crop(tile, 2, f.strideFrames);
  });
  return crop(ref.concat(kept, 2), 2, (frames - 1) * rt + 1);
}

/**
 * Decodes `z` with `vae` as planned and checks it against these loops over `decode` (a float64
 * reference decoder): both make `calls` decoder calls, and the samples agree.
 */
export async function assertDecodesLikeDiffusersVideo(
  vae: Vae,
  z: Tensor,
  calls: number,
  decode: (tile: RefTensor) => RefTensor,
  t: DiffusersVideoTiling,
  label: string,
): Promise<void> {
  let tiles = 0;
  const out = await vae.decode(z, { onProgress: (e) => (tiles = e.tilesTotal) });
  assert.equal(tiles, calls, `${label}: decoder calls`);
  let referenceCalls = 0;
  const expected = diffusersVideoDecode(z, (tile) => (referenceCalls++, decode(tile)), t);
  assert.equal(referenceCalls, calls, `${label}: diffusers' decoder calls`);
  assertRelativeL2(out, expected, label);
}

/** diffusers' loop variables: square spatial tiles [min, stride] px and frame chunks [min, stride] frames, each null when off. */
export function diffusersLoops(
  spatial: [number, number] | null,
  frames: [number, number] | null,
): Pick<DiffusersVideoTiling, 'tiling' | 'framewise'> {
  return {
    tiling: spatial && { minHeight: spatial[0], minWidth: spatial[0], strideHeight: spatial[1], strideWidth: spatial[1] },
    framewise: frames && { minFrames: frames[0], strideFrames: frames[1] },
  };
}

/** A video decode case: a latent, the plan the planner installs, and diffusers' loops and decoder calls for the same decode. */
export interface VideoDecodeCase {
  label: string;
  latent: number[];
  /** Square spatial plan [window, overlap] in output pixels, or null to leave spatial tiling as the family has it (off). */
  spatial: [number, number] | null;
  /** Temporal plan [window, overlap] in output frames; 'default' keeps the family default; null turns it off. */
  frames: [number, number] | 'default' | null;
  diffusers: Pick<DiffusersVideoTiling, 'tiling' | 'framewise'>;
  calls: number;
}

/** A case as a table row: latent, spatial [window, overlap] px, frames [window, overlap], diffusers' loops, decoder calls. */
export type VideoCaseRow = [number[], VideoDecodeCase['spatial'], VideoDecodeCase['frames'], VideoDecodeCase['diffusers'], number];

/** Cases from [label, row] pairs: a table that states each case on two lines. */
export function videoCases(rows: [string, VideoCaseRow][]): VideoDecodeCase[] {
  return rows.map(([label, [latent, spatial, frames, diffusers, calls]]) => ({ label, latent, spatial, frames, diffusers, calls }));
}

/**
 * Installs the case's plan through the planner, decodes its seeded latent and checks the decoder
 * calls and the output against diffusers' loops over `decode` (the family's float64 reference),
 * with the family's ratios and dropped chunk frame.
 */
export async function assertVideoCase(
  vae: Vae,
  c: VideoDecodeCase,
  decode: (tile: RefTensor) => RefTensor,
  family: Pick<DiffusersVideoTiling, 'spatialRatio' | 'temporalRatio' | 'dropFrame'>,
): Promise<void> {
  if (c.spatial) {
    const [window, overlap] = c.spatial;
    setTiling(vae, tileShapePlan(vae, window, window)!);
    setTiling(vae, tileOverlapPlan(vae, overlap, overlap)!);
  }
  if (c.frames !== 'default') setTiling(vae, tileFramePlan(vae, c.frames && { window: c.frames[0], overlap: c.frames[1] })!);
  await assertDecodesLikeDiffusersVideo(vae, seededTensor(c.latent, 21), c.calls, decode, { ...c.diffusers, ...family }, c.label);
}
