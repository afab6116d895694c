// Image output: the family's value mapping (DESIGN §9: `tae` → clamp(x, 0, 1), every other
// family → clamp(x/2 + 0.5, 0, 1); 8-bit = round(v·255)) and PNG files through pngjs, 8-bit by
// default or 16-bit on request. A batch or a video becomes one file per image / frame.

import { PNG } from 'pngjs';
import { DistVaeError, reason } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { writeFileBytes } from './files.js';

export type SampleRange = 'signed' | 'unit';

/** Maps a decoded sample to [0, 1] image values (float32, same shape). */
export function sampleToImage(sample: Tensor, range: SampleRange): Tensor {
  const out = new Float32Array(sample.data.length);
  for (let i = 0; i < out.length; i++) {
    const v = range === 'signed' ? sample.data[i]! / 2 + 0.5 : sample.data[i]!;
    out[i] = v < 0 ? 0 : v > 1 ? 1 : v;
  }
  return { dims: [...sample.dims], data: out };
}

/** The (C, H, W) planes of each image in a (B, C, H, W) or (B, C, F, H, W) tensor, batch-major then frame-major. */
export function imagesOf(t: Tensor): { channels: number; height: number; width: number; frames: Float32Array[] } {
  const d = t.dims;
  if (d.length !== 4 && d.length !== 5) {
    throw new DistVaeError('TENSOR_INVALID', `an image tensor must be (B, C, H, W) or (B, C, F, H, W), got [${d.join(', ')}]`);
  }
  const [b, c] = d as [number, number];
  const f = d.length === 5 ? d[2]! : 1;
  const [h, w] = d.slice(-2) as [number, number];
  if (c !== 1 && c !== 3 && c !== 4) {
    throw new DistVaeError('TENSOR_INVALID', `an image needs 1, 3 or 4 channels, got ${c} (dims [${d.join(', ')}])`);
  }
  const frames: Float32Array[] = [];
  const plane = h * w;
  for (let bi = 0; bi < b; bi++) {
    for (let fi = 0; fi < f; fi++) {
      const img = new Float32Array(c * plane);
      for (let ci = 0; ci < c; ci++) {
        const from = ((bi * c + ci) * f + fi) * plane;
        img.set(t.data.subarray(from, from + plane), ci * plane);
      }
      frames.push(img);
    }
  }
  return { channels: c, height: h, width: w, frames };
}

/** PNG bytes of one (C, H, W) image with values in [0, 1]. */
export function encodePng(image: Float32Array, channels: number, height: number, width: number, bitDepth: 8 | 16 = 8): Uint8Array {
  const png = new PNG({ width, height, bitDepth, colorType: 6, inputColorType: 6, inputHasAlpha: true });
  const max = bitDepth === 16 ? 65535 : 255;
  const plane = height * width;
  const rgba = bitDepth === 16 ? new Uint16Array(plane * 4) : new Uint8Array(plane * 4);
  for (let i = 0; i < plane; i++) {
    for (let k = 0; k < 3; k++) {
      const v = image[(channels === 1 ? 0 : k) * plane + i]!;
      rgba[i * 4 + k] = Math.round(v * max);
    }
    rgba[i * 4 + 3] = channels === 4 ? Math.round(image[3 * plane + i]! * max) : max;
  }
  // pngjs takes 16-bit samples as a Uint16Array in its data slot.
  (png as unknown as { data: Uint8Array | Uint16Array }).data = rgba;
  return PNG.sync.write(png, { bitDepth, colorType: 6, inputColorType: 6, inputHasAlpha: true });
}

/**
 * Writes a decoded sample as PNG: one file for a single image, else `<stem>-<index>.png` per
 * image / frame (zero-padded). Returns the paths written.
 */
export function writeSamplePng(path: string, sample: Tensor, range: SampleRange, options: { bitDepth?: 8 | 16 } = {}): string[] {
  const bitDepth = options.bitDepth ?? 8;
  if (bitDepth !== 8 && bitDepth !== 16) {
    const r = reason('BIT_DEPTH', 'bitDepth', bitDepth, '8 or 16');
    throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
  }
  const { channels, height, width, frames } = imagesOf(sampleToImage(sample, range));
  const stem = path.replace(/\.png$/i, '');
  const digits = String(frames.length - 1).length;
  const paths = frames.length === 1 ? [path] : frames.map((_, i) => `${stem}-${String(i).padStart(digits, '0')}.png`);
  frames.forEach((img, i) => writeFileBytes(paths[i]!, encodePng(img, channels, height, width, bitDepth)));
  return paths;
}
