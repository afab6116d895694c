// Between a family's sample values and [0, 1] pixels (docs/design.md §9), both ways and per
// channel: out, `clamp(x · std[c] + mean[c], 0, 1)` (diffusers' `x/2 + 0.5` for 'signed', x for
// 'unit', MiniMax-H3's pipeline's `x · imagenet_std + imagenet_mean`); in, `(v − mean[c]) /
// std[c]` (`2v − 1` for 'signed'). Every step is rounded to float32 as torch's float32 tensors
// are, so a pipeline's own post-processing of the same .npy gives the same image values; for
// 'signed' and 'unit' that is bit for bit what x/2 + 0.5 and 2v − 1 gave (halving is exact, and
// float32 ± and ÷ through float64 round once). Pure, so pages and files share it.

import { DistVaeError } from '../errors.js';
import type { ChannelNormalization, SampleRange } from '../families/types.js';
import type { Tensor } from '../tensor.js';

export type { ChannelNormalization, SampleRange };

/** A range resolved for a number of channels: float32 mean and std per channel. */
export interface ChannelAffine {
  readonly mean: Float32Array;
  readonly std: Float32Array;
}

/**
 * The float32 mean and std of each of `channels` channels of `range`. A per-channel range must
 * have one entry per channel (TENSOR_INVALID otherwise, naming both counts).
 */
export function channelAffine(range: SampleRange, channels: number): ChannelAffine {
  if (range === 'signed' || range === 'unit') {
    const [m, s] = range === 'signed' ? [0.5, 0.5] : [0, 1];
    return { mean: new Float32Array(channels).fill(m), std: new Float32Array(channels).fill(s) };
  }
  if (range.mean.length !== channels || range.std.length !== channels) {
    throw new DistVaeError(
      'TENSOR_INVALID',
      `the sample has ${channels} channels, but its family's range gives ${range.mean.length} means and ${range.std.length} standard deviations (one per channel)`,
    );
  }
  return { mean: Float32Array.from(range.mean), std: Float32Array.from(range.std) };
}

/** One decoded value of channel `c` as a [0, 1] image value. */
export function imageValue(v: number, affine: ChannelAffine, c: number): number {
  const x = Math.fround(Math.fround(v * affine.std[c]!) + affine.mean[c]!);
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

/** One [0, 1] pixel value of channel `c` as the family's input value. */
export function inputValue(v: number, affine: ChannelAffine, c: number): number {
  return Math.fround(Math.fround(v - affine.mean[c]!) / affine.std[c]!);
}

/** `f` over every value of a (B, C, …) tensor, with its channel. */
function perChannel(t: Tensor, range: SampleRange, f: (v: number, affine: ChannelAffine, c: number) => number): Tensor {
  if (t.dims.length < 2) throw new DistVaeError('TENSOR_INVALID', `a sample is (B, C, …), got [${t.dims.join(', ')}]`);
  const channels = t.dims[1]!;
  const affine = channelAffine(range, channels);
  const plane = t.dims.slice(2).reduce((a, b) => a * b, 1);
  const out = new Float32Array(t.data.length);
  for (let p = 0; p < out.length / plane; p++) {
    const c = p % channels;
    for (let i = p * plane; i < (p + 1) * plane; i++) out[i] = f(t.data[i]!, affine, c);
  }
  return { dims: [...t.dims], data: out };
}

/** Maps a decoded (B, C, …) sample to [0, 1] image values (float32, same shape). */
export function sampleToImage(sample: Tensor, range: SampleRange): Tensor {
  return perChannel(sample, range, imageValue);
}

/** Maps a (B, C, …) image of [0, 1] pixel values to the family's input values (float32, same shape). */
export function imageToInput(image: Tensor, range: SampleRange): Tensor {
  return perChannel(image, range, inputValue);
}
