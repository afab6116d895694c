// AutoencoderKLHunyuanVideo's encoder against diffusers' own `encode(x).latent_dist.mode()`: the
// difref tiny config, synthetic encoder weights seed 4, a seeded video in [−1, 1]
// (testing/goldens/README.md), whole (diffusers' framewise encoding off, as ref_encode.py runs it).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { difference } from '../../graph/testing/compare.js';
import { readNpy } from '../../io/npy.js';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { hunyuanVideoRuntime } from './runtime.js';
import { hunyuanVideo } from './spec.js';
import { HUNYUAN_VIDEO_DIFREF_TINY } from './testing/configs.js';

const golden = (name: string) => readNpy(fileURLToPath(new URL(`./testing/goldens/${name}.npy`, import.meta.url)));

test('hunyuan-video tiny: whole encodes of 9 and 17 frames match diffusers (≤ 1e-4 of the largest value)', async () => {
  const config = resolveFamilyConfig(hunyuanVideo, HUNYUAN_VIDEO_DIFREF_TINY);
  const encoder = hunyuanVideoRuntime.encoder!;
  const runner = await encoder.createRunner(config, syntheticWeights(encoder.params(config), 4), { intraOpThreads: 1 });
  try {
    for (const [dims, seed, file] of [
      [[1, 3, 9, 32, 48], 11, 'tiny-encode-whole'],
      [[1, 3, 17, 32, 48], 12, 'tiny-encode-whole17'],
    ] as const) {
      const whole = await runner.decode(seededTensor(dims, seed));
      const expected = golden(file);
      assert.deepEqual(whole.dims, expected.dims);
      const w = difference(whole, expected);
      // Measured when made: 6.0e-6 of 5.0 (9 frames), 7.0e-6 of 3.8 (17 frames).
      assert.ok(w.maxAbs <= 1e-4 * w.scale, `${file}: max |ours − diffusers| = ${w.maxAbs} (largest ${w.scale})`);
    }
  } finally {
    await runner.dispose();
  }
});
