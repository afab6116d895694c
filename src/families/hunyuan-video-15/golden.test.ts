// diffusers' own AutoencoderKLHunyuanVideo15 output as goldens (testing/goldens/README.md: the
// difref tiny and small configs, synthetic decoder weights seed 3, diffusers 58eb52c0): the whole
// decode (a video and a one-frame image), and the tiled decode through our planner at the class's
// tiling arithmetic — its own defaults (256 px, overlap factor 0.25) on the small 16× config, the
// same factor on 32 px tiles for the tiny 4× one — within 1e-4 of the output's largest value.
// Only outputs are stored; weights and latents are regenerated here from their seeds.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { difference } from '../../graph/testing/compare.js';
import { diffusersEquivalent } from '../../plan/equivalence.js';
import { setTiling } from '../../plan/planner.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { HUNYUAN_VIDEO_15_SMALL, HUNYUAN_VIDEO_15_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);
const assertGolden = (out: Tensor, name: string, step: number): void => assertMatchesGolden(out, golden(name), name, step);

const CASES = [
  // 4×: diffusers' 256 px default never tiles a small latent, so its arithmetic at 32 px tiles (8 latent units, stride 6, blend 8 px).
  { name: 'tiny', config: HUNYUAN_VIDEO_15_TINY, latent: [1, 32, 2, 12, 18], step: 2, window: 32 },
  // 16×: the class's own settings (setTiling's default): 256 px tiles, stride 12 latent units, blend 64 px, 2 × 2 tiles.
  { name: 'small', config: HUNYUAN_VIDEO_15_SMALL, latent: [1, 32, 2, 18, 18], step: 6, window: null },
];

for (const c of CASES) {
  test(`hunyuan-video-1.5 ${c.name}: whole and tiled decodes of 2 latent frames (5 frames) match diffusers within 1e-4 of the largest value`, async () => {
    const vae = await loadVae({ config: c.config, weights: 'synthetic', seed: 3 }, { threads: 1 });
    try {
      assert.equal(vae.family.name, 'hunyuan-video-1.5');
      const z = seededTensor(c.latent, 9);
      const whole = await vae.decode(z);
      setTiling(
        vae,
        c.window ? { window: { height: c.window, width: c.window }, overlap: { height: c.window / 4, width: c.window / 4 } } : {},
      );
      assert.ok(diffusersEquivalent(vae), 'the plan is one diffusers runs');
      const tiled = await vae.decode(z);
      assertGolden(whole, `${c.name}-whole-every${c.step}`, c.step);
      assertGolden(tiled, `${c.name}-tiled-every${c.step}`, c.step);
      assert.ok(difference(whole, tiled).maxAbs > 0.01, 'tiling must change the result (per-tile attention and causal-conv edges)');
    } finally {
      await vae.dispose();
    }
  });
}

test('hunyuan-video-1.5 tiny: one latent frame (an image) decodes to one frame, as diffusers does', async () => {
  const vae = await loadVae({ config: HUNYUAN_VIDEO_15_TINY, weights: 'synthetic', seed: 3 }, { threads: 1 });
  try {
    assertGolden(await vae.decode(seededTensor([1, 32, 1, 12, 18], 9)), 'tiny-image-whole', 1);
  } finally {
    await vae.dispose();
  }
});

test('hunyuan-video-1.5 tiny: rectangular tiles with the one overlap factor (32x48 px, 0.25) are diffusers-equivalent and match it', async () => {
  const vae = await loadVae({ config: HUNYUAN_VIDEO_15_TINY, weights: 'synthetic', seed: 3 }, { threads: 1 });
  try {
    // tile_sample_min 32 x 48 with factor 0.25: strides int(8·0.75) = 6 and int(12·0.75) = 9 latent units, blends 8 and 12 px.
    setTiling(vae, { window: { height: 32, width: 48 }, overlap: { height: 8, width: 12 } });
    assert.ok(diffusersEquivalent(vae));
    assertGolden(await vae.decode(seededTensor([1, 32, 2, 12, 18], 9)), 'tiny-tiled-32x48-every2', 2);
    // No one factor gives 8 px on 32 and 8 px on 48: not a plan diffusers can run.
    setTiling(vae, { window: { height: 32, width: 48 }, overlap: { height: 8, width: 8 } });
    assert.equal(diffusersEquivalent(vae), false);
  } finally {
    await vae.dispose();
  }
});
