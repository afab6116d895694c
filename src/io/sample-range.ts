// Decoded samples to [0, 1] image values (docs/design.md §9): 'signed' families map x/2 + 0.5, 'unit'
// ones (TAE) take x as is; both clamp. Pure, so pages and files share it.

import type { Tensor } from '../tensor.js';

/** The range of a decoded sample: 'signed' ([-1, 1], mapped x/2 + 0.5) or 'unit' ([0, 1]). */
export type SampleRange = 'signed' | 'unit';

/** One decoded value as a [0, 1] image value. */
export function imageValue(v: number, range: SampleRange): number {
  const x = range === 'signed' ? v / 2 + 0.5 : v;
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

/** Maps a decoded sample to [0, 1] image values (float32, same shape). */
export function sampleToImage(sample: Tensor, range: SampleRange): Tensor {
  const out = new Float32Array(sample.data.length);
  for (let i = 0; i < out.length; i++) out[i] = imageValue(sample.data[i]!, range);
  return { dims: [...sample.dims], data: out };
}
