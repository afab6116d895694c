// diffusers' own AutoencoderKLHunyuanImage output as goldens (testing/goldens/README.md: the
// difref tiny and small configs, synthetic decoder weights seed 3, diffusers 58eb52c0): the whole
// decode, and the tiled decode at the class's own tiling settings through our planner's default
// plan, within 1e-4 of the output's largest value. Only outputs are stored; weights and latents
// are regenerated here from their seeds.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { difference } from '../../graph/testing/compare.js';
import { diffusersEquivalent } from '../../plan/equivalence.js';
import { setTiling } from '../../plan/planner.js';
import { seededTensor } from '../../tensor.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { HUNYUAN_IMAGE_SMALL, HUNYUAN_IMAGE_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);

const CASES = [
  { name: 'tiny', config: HUNYUAN_IMAGE_TINY, latent: [1, 64, 12, 18], step: 1, suffix: '' },
  { name: 'small', config: HUNYUAN_IMAGE_SMALL, latent: [1, 64, 9, 9], step: 3, suffix: '-every3' },
];

for (const c of CASES) {
  test(`hunyuan-image ${c.name}: whole and tiled (class defaults) decodes match diffusers within 1e-4 of the largest value`, async () => {
    const vae = await loadVae({ config: c.config, weights: 'synthetic', seed: 3 }, { threads: 1 });
    try {
      assert.equal(vae.family.name, 'hunyuan-image');
      const z = seededTensor(c.latent, 9);
      const whole = await vae.decode(z);
      setTiling(vae);
      assert.ok(diffusersEquivalent(vae), 'the default plan is the one diffusers runs');
      const tiled = await vae.decode(z);
      for (const [label, out] of [
        ['whole', whole],
        ['tiled', tiled],
      ] as const) {
        assertMatchesGolden(out, golden(`${c.name}-${label}${c.suffix}`), `${c.name} ${label}`, c.step);
      }
      assert.ok(difference(whole, tiled).maxAbs > 0.01, 'tiling must change the result (per-tile GroupNorm and attention)');
    } finally {
      await vae.dispose();
    }
  });
}
