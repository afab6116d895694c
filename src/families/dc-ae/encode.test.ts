// AutoencoderDC's encoder against diffusers' own `encode(x).latent` (the class returns its latent
// directly: testing/goldens/README.md — the difref tiny and small configs, synthetic encoder
// weights seed 4, seeded images in [−1, 1]), within 1e-4 of the latent's largest value: the whole
// encode (linear attention, an image so small that the top level switches to diffusers'
// "quadratic" form, and pixel_unshuffle down blocks), and the tiled encode through our exact
// planner against diffusers' own `tiled_encode` — tiny at 32 px tiles every 24 px (edge tiles one
// latent row thin), small at the class's 512 / 448 px. Also: the encoder loads from a diffusers
// folder as the same weights in memory do, and a config whose encoder the class cannot build is
// refused when an encoder is asked for, while its decoder still loads.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { loadEncoder } from '../../encode/encoder.js';
import { encodeGrid } from '../../encode/engine.js';
import { DistVaeError } from '../../errors.js';
import { difference } from '../../graph/testing/compare.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { diffusersFolderWriter } from '../testing/diffusers-folder.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { resolveFamilyConfig } from '../registry.js';
import { dcaeEncoderParams } from './encoder-graph.js';
import { dcaeDecoderParams } from './graph.js';
import { dcae } from './spec.js';
import { DCAE_SMALL, DCAE_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);
const folder = diffusersFolderWriter('distvae-dcae-encode-');

test('dc-ae tiny encoder: whole (linear and switched attention; conv and pixel_unshuffle down blocks) and 32/24 px tiles match diffusers', async () => {
  const encoder = await loadEncoder({ config: DCAE_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    assert.equal(encoder.family.name, 'dc-ae');
    assert.equal(encoder.geometry.spatialRatio, 4);
    const x = seededTensor([1, 3, 48, 72], 11);
    const whole = await encoder.encode(x);
    assertMatchesGolden(whole, golden('encode-tiny-whole'), 'tiny whole');
    // A 2×4 latent: 8 positions ≤ attention_head_dim 8 at the top level, where diffusers takes its quadratic form.
    assertMatchesGolden(await encoder.encode(seededTensor([1, 3, 8, 16], 11)), golden('encode-tiny-switch'), 'tiny switch');

    // diffusers' tile_sample_min 32, tile_sample_stride 24, in input pixels: window 32, overlap 8, exactly.
    const y = seededTensor([1, 3, 52, 56], 11);
    assert.equal(tileShapePlan(encoder, 30, 32), null, 'a window off the ratio is refused, never rounded');
    setTiling(encoder, tileShapePlan(encoder, 32, 32)!);
    setTiling(encoder, tileOverlapPlan(encoder, 8, 8)!);
    const grid = encodeGrid(encoder, y);
    assert.deepEqual([grid.rows.length, grid.cols.length, grid.blend.height, grid.keep.height], [3, 3, 2, 6]);
    assert.deepEqual(grid.rows.at(-1), { start: 12, end: 13 }, 'the last row of tiles is one latent row thin');
    const tiled = await encoder.encode(y);
    assertMatchesGolden(tiled, golden('encode-tiny-tiled'), 'tiny tiled');
    setTiling(encoder, 'off');
    assert.ok(difference(await encoder.encode(y), tiled).maxAbs > 0.01, 'tiling must change the latents (per-tile attention)');
  } finally {
    await encoder.dispose();
  }
  const unshuffle = await loadEncoder(
    { config: { ...DCAE_TINY, downsample_block_type: 'pixel_unshuffle' }, weights: 'synthetic', seed: 4 },
    { threads: 1 },
  );
  try {
    assertMatchesGolden(await unshuffle.encode(seededTensor([1, 3, 48, 72], 11)), golden('encode-tiny-pixel-unshuffle'), 'pixel_unshuffle');
  } finally {
    await unshuffle.dispose();
  }
});

test("dc-ae small (32×) encoder: whole and tiled at the class's 512 / 448 px match diffusers", async () => {
  const encoder = await loadEncoder({ config: DCAE_SMALL, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    assert.equal(encoder.geometry.spatialRatio, 32);
    const x = seededTensor([1, 3, 544, 512], 11);
    assert.equal(encodeGrid(encoder, x).tiled, false, 'tiling is off by default, as in diffusers');
    assertMatchesGolden(await encoder.encode(x), golden('encode-small-whole'), 'small whole');
    setTiling(encoder);
    assert.deepEqual([encoder.tiling.window.height, encoder.tiling.overlap.height], [512, 64]);
    // 544 px > 512: rows at 0 and 448 px (14 latent units); 512 px wide is not > 512, yet both axes run the loop.
    assert.equal(encodeGrid(encoder, x).tiles.length, 4);
    assertMatchesGolden(await encoder.encode(x), golden('encode-small-tiled'), 'small tiled');
  } finally {
    await encoder.dispose();
  }
});

test('the encoder loads from a diffusers folder beside the decoder, bitwise as in memory; an encoder the class cannot build is refused only when asked for', async () => {
  const config = resolveFamilyConfig(dcae, DCAE_TINY);
  const weights = new Map([...syntheticWeights(dcaeDecoderParams(config), 3), ...syntheticWeights(dcaeEncoderParams(config), 4)]);
  const dir = folder(DCAE_TINY, weights);
  const x = seededTensor([1, 3, 16, 24], 11);
  const fromFolder = await loadEncoder(dir, { threads: 1 });
  const inMemory = await loadEncoder({ config: DCAE_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    assertSameBits(await fromFolder.encode(x), await inMemory.encode(x), 'folder vs in-memory encoder');
  } finally {
    await fromFolder.dispose();
    await inMemory.dispose();
  }
  // 4·16 / 24 is no whole group: diffusers' down block could not average its shortcut.
  const odd = { ...DCAE_TINY, encoder_block_out_channels: [16, 24, 32] };
  await assert.rejects(
    () => loadEncoder({ config: odd, weights: 'synthetic', seed: 4 }, { threads: 1 }),
    (e) => e instanceof DistVaeError && e.code === 'CONFIG_INVALID' && /from width 16 to 24/.test(e.message),
  );
  const vae = await loadVae({ config: odd, weights: 'synthetic', seed: 3 }, { threads: 1 });
  await vae.dispose();
});
