// Decoded samples onto a page: RGBA pixels of a (1, 3, H, W) sample (or of one raw tile) in
// the family's sample range, as ImageData or drawn straight onto a 2-D canvas context at an
// offset, so tiles can be shown as they land and the blended image replaces them at the end.
// And back: a page's RGBA pixels (a photo on a canvas) as an encoder's input, in its family's
// input range ([−1, 1] for the diffusers classes, [0, 1] for TAE, MiniMax-H3's per channel).

import { DistVaeError } from '../errors.js';
import { channelAffine, imageValue, inputValue, type SampleRange } from '../io/sample-range.js';
import type { Tensor } from '../tensor.js';

/** The part of CanvasRenderingContext2D that drawing needs. */
export interface Context2DLike {
  putImageData(image: unknown, dx: number, dy: number): void;
}

/** RGBA bytes (alpha 255) of the first image of a (B, C, H, W) tensor with 1 or 3 channels. */
export function rgbaOf(sample: Tensor, range: SampleRange): { data: Uint8ClampedArray; width: number; height: number } {
  const [, c, h, w] = sample.dims as [number, number, number, number];
  if (sample.dims.length !== 4 || (c !== 3 && c !== 1))
    throw new DistVaeError('TENSOR_INVALID', `an image needs (B, 1|3, H, W); got [${sample.dims.join(', ')}]`);
  const affine = channelAffine(range, c);
  const plane = h * w;
  const data = new Uint8ClampedArray(4 * plane);
  for (let i = 0; i < plane; i++) {
    for (let k = 0; k < 3; k++) {
      const ch = c === 3 ? k : 0;
      data[4 * i + k] = Math.round(255 * imageValue(sample.data[ch * plane + i]!, affine, ch));
    }
    data[4 * i + 3] = 255;
  }
  return { data, width: w, height: h };
}

/** The sample as an ImageData (in a page or worker). */
export function toImageData(sample: Tensor, range: SampleRange): unknown {
  const { data, width, height } = rgbaOf(sample, range);
  const ImageDataCtor = (globalThis as { ImageData?: new (data: Uint8ClampedArray, w: number, h: number) => unknown }).ImageData;
  if (!ImageDataCtor) throw new DistVaeError('UNSUPPORTED', 'ImageData is not available here (a page or a worker has it)');
  return new ImageDataCtor(data, width, height);
}

/** Draws a sample (or a decoded tile) onto a canvas context with its top-left corner at (x, y). */
export function drawSample(context: Context2DLike, sample: Tensor, range: SampleRange, x = 0, y = 0): void {
  context.putImageData(toImageData(sample, range), x, y);
}

/**
 * RGBA bytes (a canvas's `getImageData`, alpha ignored) as a (1, 3, H, W) image in the family's
 * input range `range` (`encoder.family.sampleRange`): each 8-bit value v is v/255 in [0, 1] as
 * torchvision reads it, then mapped as io/sample-range.ts maps pixels for `distvae encode`.
 */
export function inputOfRgba(rgba: { data: ArrayLike<number>; width: number; height: number }, range: SampleRange): Tensor {
  const { data, width, height } = rgba;
  const plane = width * height;
  if (data.length !== 4 * plane)
    throw new DistVaeError('TENSOR_INVALID', `RGBA pixels of ${height}x${width} are ${4 * plane} bytes; got ${data.length}`);
  const affine = channelAffine(range, 3);
  const out = new Float32Array(3 * plane);
  for (let c = 0; c < 3; c++) for (let i = 0; i < plane; i++) out[c * plane + i] = inputValue(data[4 * i + c]! / 255, affine, c);
  return { dims: [1, 3, height, width], data: out };
}
