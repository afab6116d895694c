// Blend primitives on plane-major tiles, exactly diffusers' formulas (docs/design.md §3): for
// e = min(a.extent, b.extent, E) and y < e, b[y] = a[a.extent − e + y]·(1 − y/e) + b[y]·(y/e).
// Every caller — single-rank streaming, distributed ranks, the coordinator — goes through these
// functions, so the same inputs give bitwise the same output on every path.

/**
 * A block of `planes` 2-D planes (batch × channels × frames, flattened), each height × width,
 * stored plane-major, row-major: data[(p·height + y)·width + x].
 */
export interface Planes {
  planes: number;
  height: number;
  width: number;
  data: Float32Array;
}

export function planes(count: number, height: number, width: number, data?: Float32Array): Planes {
  return { planes: count, height, width, data: data ?? new Float32Array(count * height * width) };
}

/** Rows [y0, y1) of every plane, copied. */
export function sliceRows(src: Planes, y0: number, y1: number): Planes {
  const out = planes(src.planes, y1 - y0, src.width);
  const plane = src.height * src.width;
  for (let p = 0; p < src.planes; p++) {
    out.data.set(src.data.subarray(p * plane + y0 * src.width, p * plane + y1 * src.width), p * out.height * out.width);
  }
  return out;
}

/** Columns [x0, x1) of every plane, copied. */
export function sliceCols(src: Planes, x0: number, x1: number): Planes {
  const w = x1 - x0;
  const out = planes(src.planes, src.height, w);
  for (let p = 0; p < src.planes; p++) {
    for (let y = 0; y < src.height; y++) {
      const from = (p * src.height + y) * src.width + x0;
      out.data.set(src.data.subarray(from, from + w), (p * src.height + y) * w);
    }
  }
  return out;
}

/**
 * blend_v in place: `above` holds (at least) the last rows of the tile above, full width of
 * `tile`; the last `e` of them are blended into tile rows [0, e).
 */
export function blendV(above: Planes, tile: Planes, e: number): void {
  if (e <= 0) return;
  const w = tile.width;
  const aOff = above.height - e;
  for (let p = 0; p < tile.planes; p++) {
    for (let y = 0; y < e; y++) {
      const wb = y / e;
      const wa = 1 - wb;
      const a = (p * above.height + aOff + y) * w;
      const b = (p * tile.height + y) * w;
      for (let x = 0; x < w; x++) tile.data[b + x] = above.data[a + x]! * wa + tile.data[b + x]! * wb;
    }
  }
}

/**
 * blend_h in place: `left` holds (at least) the last columns of the tile on the left, full
 * height of `tile`; the last `e` of them are blended into tile columns [0, e).
 */
export function blendH(left: Planes, tile: Planes, e: number): void {
  if (e <= 0) return;
  const aOff = left.width - e;
  for (let p = 0; p < tile.planes; p++) {
    for (let y = 0; y < tile.height; y++) {
      const a = (p * left.height + y) * left.width + aOff;
      const b = (p * tile.height + y) * tile.width;
      for (let x = 0; x < e; x++) {
        const wb = x / e;
        tile.data[b + x] = left.data[a + x]! * (1 - wb) + tile.data[b + x]! * wb;
      }
    }
  }
}

/** Copies rows [0, h) × cols [0, w) of `src` into `dst` at (y0, x0), plane by plane. */
export function writeBlock(src: Planes, h: number, w: number, dst: Planes, y0: number, x0: number): void {
  for (let p = 0; p < src.planes; p++) {
    for (let y = 0; y < h; y++) {
      const from = (p * src.height + y) * src.width;
      dst.data.set(src.data.subarray(from, from + w), (p * dst.height + y0 + y) * dst.width + x0);
    }
  }
}
