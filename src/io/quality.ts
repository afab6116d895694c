// Agreement between two decodes or a decode and an image: max abs difference and PSNR
// (computed in float on [0, 1] images, docs/design.md §9).

import { DistVaeError } from '../errors.js';
import type { Tensor } from '../tensor.js';

function checkSameShape(a: Tensor, b: Tensor): void {
  if (a.dims.length !== b.dims.length || a.dims.some((d, i) => d !== b.dims[i])) {
    throw new DistVaeError('TENSOR_INVALID', `cannot compare tensors of dims [${a.dims.join(', ')}] and [${b.dims.join(', ')}]`);
  }
}

export function maxAbsDiff(a: Tensor, b: Tensor): number {
  checkSameShape(a, b);
  let m = 0;
  for (let i = 0; i < a.data.length; i++) m = Math.max(m, Math.abs(a.data[i]! - b.data[i]!));
  return m;
}

/** PSNR in dB of two images with values in [0, 1] (peak 1); Infinity when identical. */
export function psnr(a: Tensor, b: Tensor): number {
  checkSameShape(a, b);
  let sum = 0;
  for (let i = 0; i < a.data.length; i++) {
    const d = a.data[i]! - b.data[i]!;
    sum += d * d;
  }
  const mse = sum / a.data.length;
  return mse === 0 ? Infinity : 10 * Math.log10(1 / mse);
}
