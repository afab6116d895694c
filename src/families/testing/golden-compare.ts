// Test helper: comparing a decode with a diffusers golden (.npy, written by difref) — the
// subsampling the goldens are stored with (every `step`-th row and column, every `frameStep`-th
// frame, from 0) and the one tolerance, 1e-4 of the output's largest value. One home for what the
// families' golden and web tests each spelled.

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { difference } from '../../graph/testing/compare.js';
import { readNpy } from '../../io/npy.js';
import type { Tensor } from '../../tensor.js';

/** Reads a golden: `goldens(import.meta.url)('tiny-whole')` is ./testing/goldens/tiny-whole.npy beside the test. */
export function goldensBeside(testUrl: string): (name: string) => Tensor {
  return (name) => readNpy(fileURLToPath(new URL(`./testing/goldens/${name}.npy`, testUrl)));
}

/**
 * Every `step`-th row and column of a (…, H, W) tensor and, with `frameStep` > 1, every
 * `frameStep`-th frame of a (B, C, F, H, W) one, from 0: how the goldens are stored.
 */
export function subsample(t: Tensor, step: number, frameStep = 1): Tensor {
  const [h, w] = t.dims.slice(-2) as [number, number];
  const f = frameStep === 1 ? 1 : t.dims.at(-3)!;
  const planes = t.data.length / (f * h * w);
  const [of, oh, ow] = [Math.ceil(f / frameStep), Math.ceil(h / step), Math.ceil(w / step)];
  const data = new Float32Array(planes * of * oh * ow);
  for (let p = 0; p < planes; p++)
    for (let k = 0; k < of; k++)
      for (let y = 0; y < oh; y++)
        for (let x = 0; x < ow; x++)
          data[((p * of + k) * oh + y) * ow + x] = t.data[((p * f + k * frameStep) * h + y * step) * w + x * step]!;
  return { dims: frameStep === 1 ? [...t.dims.slice(0, -2), oh, ow] : [...t.dims.slice(0, -3), of, oh, ow], data };
}

/** `out`, subsampled as the golden is stored, equals `expected` within 1e-4 of the largest value; `label` names it in failures. */
export function assertMatchesGolden(out: Tensor, expected: Tensor, label: string, step = 1, frameStep = 1): void {
  const ours = subsample(out, step, frameStep);
  assert.deepEqual(ours.dims, expected.dims, label);
  const { maxAbs, scale } = difference(ours, expected);
  assert.ok(maxAbs <= 1e-4 * scale, `${label}: max |ours − diffusers| = ${maxAbs} (largest |value| ${scale})`);
}
