// Decoded samples onto a page: RGBA pixels of a (1, 3, H, W) sample (or of one raw tile) in
// the family's sample range, as ImageData or drawn straight onto a 2-D canvas context at an
// offset, so tiles can be shown as they land and the blended image replaces them at the end.

import { DistVaeError } from '../errors.js';
import { channelAffine, imageValue, type SampleRange } from '../io/sample-range.js';
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
