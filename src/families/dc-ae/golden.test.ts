// diffusers' own AutoencoderDC output as goldens (testing/goldens/README.md: the difref tiny and
// small configs, synthetic decoder weights seed 3, diffusers 58eb52c0), within 1e-4 of the
// output's largest value: the whole decode (also a latent so small that diffusers switches the
// top level's attention to its "quadratic" form, H·W ≤ head dim), and the tiled decode through
// our exact planner — tiny at 32 px tiles with a 24 px stride (clipped edge tiles one latent row
// thin, whose top level switches form too), small at the class's own 512 / 448 px. Only outputs
// are stored; weights and latents are regenerated here from their seeds.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { difference } from '../../graph/testing/compare.js';
import { diffusersEquivalent } from '../../plan/equivalence.js';
import { setTiling } from '../../plan/planner.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { DCAE_SMALL, DCAE_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);
const assertClose = (out: Tensor, name: string, step = 1): void => assertMatchesGolden(out, golden(name), name, step);

test('dc-ae tiny: whole decodes (linear and switched attention) and 32/24 px tiles match diffusers within 1e-4 of the largest value', async () => {
  const vae = await loadVae({ config: DCAE_TINY, weights: 'synthetic', seed: 3 }, { threads: 1 });
  try {
    assert.equal(vae.family.name, 'dc-ae');
    assert.equal(vae.geometry.spatialRatio, 4);
    assertClose(await vae.decode(seededTensor([1, 32, 12, 18], 9)), 'tiny-whole');
    // 2×4 latent: 8 positions ≤ attention_head_dim 8 at the top level, where diffusers takes its quadratic form.
    assertClose(await vae.decode(seededTensor([1, 32, 2, 4], 9)), 'tiny-switch');
    const z = seededTensor([1, 32, 13, 14], 9);
    const whole = await vae.decode(z);
    // diffusers' tile_sample_min 32, tile_sample_stride 24: window 32 px, overlap 8 px, exactly.
    setTiling(vae, { window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } });
    assert.ok(diffusersEquivalent(vae), 'the plan is the one diffusers runs');
    const tiled = await vae.decode(z);
    assertClose(tiled, 'tiny-tiled');
    assert.ok(difference(whole, tiled).maxAbs > 0.01, 'tiling must change the result (per-tile attention)');
  } finally {
    await vae.dispose();
  }
});

test("dc-ae small (32×): the whole decode and the tiled decode at the class's 512 / 448 px match diffusers within 1e-4", async () => {
  const vae = await loadVae({ config: DCAE_SMALL, weights: 'synthetic', seed: 3 }, { threads: 1 });
  try {
    assert.equal(vae.geometry.spatialRatio, 32);
    const z = seededTensor([1, 32, 17, 16], 9);
    assertClose(await vae.decode(z), 'small-whole-every4', 4);
    setTiling(vae);
    assert.deepEqual(vae.tiling.window, { height: 512, width: 512 });
    assert.deepEqual(vae.tiling.overlap, { height: 64, width: 64 });
    assert.ok(diffusersEquivalent(vae), 'the default plan is the one diffusers runs');
    assertClose(await vae.decode(z), 'small-tiled-every4', 4);
  } finally {
    await vae.dispose();
  }
});
