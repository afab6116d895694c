// The latent files the model-calibration benchmarks decode (bench/memory-model.ts, bench/time-model.ts):
// uniform in [-1, 1) from a fixed linear congruential stream, so every run and every script reads the
// same values for the same shape, written once per shape and family into a scratch folder; and the
// images the encode cells encode (PNG, the same stream).

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { writeNpy } from '../src/io/npy.js';
import { PngBandWriter } from '../src/io/png-stream.js';

/** The path of `dir/z-<family>-<dims>.npy`, written on first use with the fixed stream. */
export function calibrationLatentFile(dir: string, family: string, dims: readonly number[]): string {
  const path = join(dir, `z-${family}-${dims.join('x')}.npy`);
  if (!existsSync(path)) {
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    let s = 12345;
    for (let i = 0; i < data.length; i++) {
      s = (s * 1103515245 + 12345) >>> 0;
      data[i] = (s / 2 ** 32) * 2 - 1;
    }
    writeNpy(path, { dims: [...dims], data });
  }
  return path;
}

/**
 * The path of `dir/x-<height>x<width>.png`, an 8-bit RGB image of the same fixed stream (the
 * encode cells' input), written on first use band by band (memory independent of its height:
 * a 16384² image is written without holding it).
 */
export function calibrationImageFile(dir: string, height: number, width: number): string {
  const path = join(dir, `x-${height}x${width}.png`);
  if (existsSync(path)) return path;
  const writer = new PngBandWriter(path, { width, height, channels: 3, range: 'unit' });
  const rows = Math.max(1, Math.min(height, Math.floor(2 ** 22 / (3 * width))));
  let s = 12345;
  for (let y = 0; y < height; y += rows) {
    const h = Math.min(rows, height - y);
    const data = new Float32Array(3 * h * width);
    // Smooth content with a little noise (image-like, and PNG compresses it as it would a photo).
    for (let c = 0; c < 3; c++)
      for (let i = 0; i < h; i++)
        for (let x = 0; x < width; x++) {
          s = (s * 1103515245 + 12345) >>> 0;
          const v = 0.5 + 0.35 * Math.sin((x + 3 * c) / 37 + (y + i) / 53) + 0.1 * (s / 2 ** 32 - 0.5);
          data[(c * h + i) * width + x] = Math.min(1, Math.max(0, v));
        }
    writer.writeBand({ dims: [1, 3, h, width], data });
  }
  writer.finish();
  return path;
}
