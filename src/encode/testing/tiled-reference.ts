// Test reference: diffusers' `_tiled_encode` loop written out literally in float64 (rows of
// tiles every `stride` input pixels, each encoded alone by `encodeTile`, blend_v with the tile
// above then blend_h with the tile on the left over E latent units, crop to the stride, concat)
// — independent of the engine's grid, layout and assembler, which the tests compare with it.

import type { Tensor } from '../../tensor.js';

/** A (B, C, h, w) tensor in float64. */
export interface Tensor64 {
  dims: number[];
  data: Float64Array;
}

const at = (t: Tensor64, b: number, c: number, y: number, x: number) => {
  const [, C, H, W] = t.dims as [number, number, number, number];
  return ((b * C + c) * H + y) * W + x;
};

function blendV(a: Tensor64, t: Tensor64, extent: number): void {
  const [B, C, ah] = a.dims as [number, number, number];
  const [, , th, w] = t.dims as [number, number, number, number];
  const e = Math.min(ah, th, extent);
  for (let b = 0; b < B; b++)
    for (let c = 0; c < C; c++)
      for (let y = 0; y < e; y++)
        for (let x = 0; x < w; x++)
          t.data[at(t, b, c, y, x)] = a.data[at(a, b, c, ah - e + y, x)]! * (1 - y / e) + t.data[at(t, b, c, y, x)]! * (y / e);
}

function blendH(a: Tensor64, t: Tensor64, extent: number): void {
  const [B, C, h, aw] = a.dims as [number, number, number, number];
  const tw = t.dims[3]!;
  const e = Math.min(aw, tw, extent);
  for (let b = 0; b < B; b++)
    for (let c = 0; c < C; c++)
      for (let y = 0; y < h; y++)
        for (let x = 0; x < e; x++)
          t.data[at(t, b, c, y, x)] = a.data[at(a, b, c, y, aw - e + x)]! * (1 - x / e) + t.data[at(t, b, c, y, x)]! * (x / e);
}

function crop(image: Tensor, y0: number, y1: number, x0: number, x1: number): Tensor {
  const [B, C, H, W] = image.dims as [number, number, number, number];
  const h = Math.min(y1, H) - y0;
  const w = Math.min(x1, W) - x0;
  const data = new Float32Array(B * C * h * w);
  for (let p = 0; p < B * C; p++)
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) data[(p * h + y) * w + x] = image.data[(p * H + y0 + y) * W + x0 + x]!;
  return { dims: [B, C, h, w], data };
}

/**
 * diffusers' `_tiled_encode` with a square `window` and `overlap` in input pixels (ratio r):
 * stride = window − overlap px, blend extent overlap / r and row limit stride / r latent units.
 */
export async function referenceTiledEncode(
  image: Tensor,
  r: number,
  window: number,
  overlap: number,
  encodeTile: (tile: Tensor) => Promise<Tensor64>,
): Promise<Tensor64> {
  const stride = window - overlap;
  const blend = overlap / r;
  const limit = stride / r;
  const rows: Tensor64[][] = [];
  for (let i = 0; i < image.dims[2]!; i += stride) {
    const row: Tensor64[] = [];
    for (let j = 0; j < image.dims[3]!; j += stride) row.push(await encodeTile(crop(image, i, i + window, j, j + window)));
    rows.push(row);
  }
  const [B, C] = rows[0]![0]!.dims as [number, number];
  const H = image.dims[2]! / r;
  const W = image.dims[3]! / r;
  const out: Tensor64 = { dims: [B, C, H, W], data: new Float64Array(B * C * H * W) };
  let y0 = 0;
  for (const [i, row] of rows.entries()) {
    let x0 = 0;
    let kept = 0;
    for (const [j, tile] of row.entries()) {
      if (i > 0) blendV(rows[i - 1]![j]!, tile, blend);
      if (j > 0) blendH(row[j - 1]!, tile, blend);
      const [, , th, tw] = tile.dims as [number, number, number, number];
      kept = Math.min(limit, th);
      const kw = Math.min(limit, tw);
      for (let b = 0; b < B; b++)
        for (let c = 0; c < C; c++)
          for (let y = 0; y < kept; y++)
            for (let x = 0; x < kw; x++) out.data[at(out, b, c, y0 + y, x0 + x)] = tile.data[at(tile, b, c, y, x)]!;
      x0 += kw;
    }
    y0 += kept;
  }
  return out;
}

/** A tensor (float32 or already float64) as a float64 copy. */
export function toFloat64(t: { dims: readonly number[]; data: ArrayLike<number> }): Tensor64 {
  return { dims: [...t.dims], data: Float64Array.from(t.data) };
}
