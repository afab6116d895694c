// The latent files the model-calibration benchmarks decode (bench/memory-model.ts, bench/time-model.ts):
// uniform in [-1, 1) from a fixed linear congruential stream, so every run and every script reads the
// same values for the same shape, written once per shape and family into a scratch folder.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { writeNpy } from '../src/io/npy.js';

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
