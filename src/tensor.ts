// The library's one tensor type: a dense float32 array in C (row-major) order with its
// dimensions. Latents are (B, C, H, W) for image families and (B, C, F, H, W) for video
// families; decoder outputs follow the same layout.

import { invalidArgument } from './errors.js';

/** A float32 tensor: row-major `data` with the sizes in `dims`. */
export interface Tensor {
  readonly dims: readonly number[];
  readonly data: Float32Array;
}

/** The number of elements of a tensor with `dims` (1 for no dims). */
export function elementCount(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

/** A tensor of `dims`, zero-filled or over `data` (refused when its length does not match). */
export function tensor(dims: readonly number[], data?: Float32Array): Tensor {
  for (const [i, d] of dims.entries()) {
    if (!Number.isInteger(d) || d < 0) invalidArgument(`dims[${i}]`, d, 'a non-negative integer');
  }
  const n = elementCount(dims);
  if (data && data.length !== n) invalidArgument('data.length', data.length, `${n} elements for dims [${dims.join(', ')}]`);
  return { dims: [...dims], data: data ?? new Float32Array(n) };
}

/** Row-major strides of a shape, in elements. */
export function stridesOf(dims: readonly number[]): number[] {
  const strides = new Array<number>(dims.length);
  let s = 1;
  for (let i = dims.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i]!;
  }
  return strides;
}

/**
 * Deterministic data: a float32 tensor of pseudo-random values uniform in [-scale, scale) from a
 * 32-bit LCG, so a seed gives the same tensor on every machine (`distvae bench` latents, tests).
 *
 * @example
 * const latents = seededTensor([1, 4, 64, 64], 7);
 */
export function seededTensor(dims: readonly number[], seed: number, scale = 1): Tensor {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = (((s >>> 8) / 16777216) * 2 - 1) * scale;
  }
  return { dims: [...dims], data };
}

/** Index of the first NaN or ±Infinity in `data`, or -1 when every value is finite. */
export function firstNonFinite(data: Float32Array): number {
  for (let i = 0; i < data.length; i++) {
    // x - x is 0 for finite x and NaN for NaN and ±Infinity.
    if (data[i]! - data[i]! !== 0) return i;
  }
  return -1;
}
