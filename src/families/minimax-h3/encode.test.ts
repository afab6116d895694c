// AutoencoderKLMiniMaxH3's encoder against diffusers' own `encode(x).latent_dist.mode()`
// (testing/goldens/README.md: the difref tiny and small configs, synthetic encoder weights seed 4,
// seeded videos), within 1e-4 of the latent's largest value, through the encode engine: the whole
// encode (tiling off — the class has it on — 20 frames: two 17-frame clips, the second padded
// by repeating the last frame, 3 trailing latent frames dropped; one frame alone) and the class's
// own tiled loop (`_split_tiles` / `_stitch_tiles` inside every clip) through our exact planner —
// tiny at 32 px tiles with a minimum overlap of 8 px (derived overlaps 16 px on rows, 12 px on
// columns), small at the class's 256 / 64 px, on by default.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { encodeGrid } from '../../encode/engine.js';
import { DistVaeError } from '../../errors.js';
import { latentMean, latentStd, normalStream, sampleLatents } from '../../io/latent-sample.js';
import { difference } from '../../graph/testing/compare.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { seededTensor } from '../../tensor.js';
import { assertMatchesGolden, goldensBeside, subsample } from '../testing/golden-compare.js';
import { encodeClips } from './encoder.js';
import { MINIMAX_H3_SMALL, MINIMAX_H3_TINY } from './testing/configs.js';
import { resolveFamilyConfig } from '../registry.js';
import { miniMaxH3 } from './spec.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { diffusersFolderWriter } from '../testing/diffusers-folder.js';
import { miniMaxEncoderParams } from './encoder.js';
import { miniMaxDecoderParams } from './graph.js';

const golden = goldensBeside(import.meta.url);
const folder = diffusersFolderWriter('distvae-minimax-encode-');

test('the encoder loads from a diffusers folder beside the decoder (quant_conv read, post_quant_conv ignored), bitwise as in memory', async () => {
  const config = resolveFamilyConfig(miniMaxH3, MINIMAX_H3_TINY);
  const weights = new Map([...syntheticWeights(miniMaxDecoderParams(config), 3), ...syntheticWeights(miniMaxEncoderParams(config), 4)]);
  assert.ok(weights.has('quant_conv.weight') && weights.has('post_quant_conv.weight'));
  const dir = folder(MINIMAX_H3_TINY, weights);
  const x = seededTensor([1, 3, 5, 16, 16], 11);
  const fromFolder = await loadEncoder(dir, { threads: 1 });
  const inMemory = await loadEncoder({ config: MINIMAX_H3_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    assertSameBits(await fromFolder.encode(x), await inMemory.encode(x), 'folder vs in-memory encoder');
  } finally {
    await fromFolder.dispose();
    await inMemory.dispose();
  }
});

test('minimax-h3 tiny encoder: whole (two clips, padded, token_drop; one frame alone) and its own tiled loop match diffusers', async () => {
  const encoder = await loadEncoder({ config: MINIMAX_H3_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    assert.equal(encoder.family.name, 'minimax-h3');
    assert.equal(encoder.tiling.enabled, true, 'tiling is on by default, as the class ships it');
    const x = seededTensor([1, 3, 20, 48, 72], 11);
    setTiling(encoder, 'off');
    const whole = await encoder.encode(x);
    // ⌈20/17⌉·⌈17/4⌉ − 3 = 7 latent frames.
    assert.deepEqual(whole.dims, [1, 24, 7, 12, 18]);
    assertMatchesGolden(whole, golden('encode-tiny-whole-every2'), 'tiny whole', 2);
    assertMatchesGolden(await encoder.encode(seededTensor([1, 3, 1, 32, 48], 11)), golden('encode-tiny-one-frame'), 'one frame');

    // diffusers' tile_sample_min 32, tile_sample_min_overlap 8, in input pixels: the slack spread in whole latent units.
    assert.equal(tileShapePlan(encoder, 30, 32), null, 'a tile off the ratio is refused, never rounded');
    setTiling(encoder, tileShapePlan(encoder, 32, 32)!);
    setTiling(encoder, tileOverlapPlan(encoder, 8, 8)!);
    const grid = encodeGrid(encoder, x);
    assert.deepEqual(
      [grid.rowBlend, grid.colBlend],
      [
        [0, 4],
        [0, 3, 3],
      ],
      'derived seam overlaps, latent units',
    );
    const tiled = await encoder.encode(x);
    assertMatchesGolden(tiled, golden('encode-tiny-tiled-every2'), 'tiny tiled', 2);
    assert.ok(difference(whole, tiled).maxAbs > 0.01, 'tiling must change the latents');
  } finally {
    await encoder.dispose();
  }
});

test("minimax-h3 tiny --sample: the clips' concatenated, token-dropped, tiled moments give diffusers' std (≤ 1e-4 relative) and mean; sample = mean + std·ε", async () => {
  const encoder = await loadEncoder({ config: MINIMAX_H3_TINY, weights: 'synthetic', seed: 4 }, { threads: 1, moments: true });
  try {
    setTiling(encoder, tileShapePlan(encoder, 32, 32)!);
    setTiling(encoder, tileOverlapPlan(encoder, 8, 8)!);
    const moments = await encoder.encode(seededTensor([1, 3, 20, 48, 72], 11));
    assert.deepEqual(moments.dims, [1, 48, 7, 12, 18], '2·Cz channels, 7 latent frames (two clips, 3 dropped)');
    const std = latentStd(moments);
    const ours = subsample(std, 2);
    const expected = golden('encode-tiny-std-tiled-every2');
    assert.deepEqual(ours.dims, expected.dims);
    let worst = 0;
    for (let i = 0; i < expected.data.length; i++) worst = Math.max(worst, Math.abs(ours.data[i]! - expected.data[i]!) / expected.data[i]!);
    assert.ok(worst <= 1e-4, `std relative error ${worst}`);
    assertMatchesGolden(latentMean(moments), golden('encode-tiny-tiled-every2'), 'mean half', 2);
    // The draw: mean + std·ε, ε our seeded stream in the output's C order.
    const sample = sampleLatents(moments, 5);
    const mean = latentMean(moments);
    const eps = normalStream(5, sample.data.length);
    for (const i of [0, 1, 777, sample.data.length - 1])
      assert.ok(
        Math.abs(sample.data[i]! - (mean.data[i]! + std.data[i]! * eps[i]!)) <= 1e-6 * (1 + Math.abs(sample.data[i]!)),
        `sample[${i}]`,
      );
  } finally {
    await encoder.dispose();
  }
});

test("minimax-h3 small (16× / 4×) encoder: tiled at the class's 256 / 64 px (its default) and whole match diffusers", async () => {
  const encoder = await loadEncoder({ config: MINIMAX_H3_SMALL, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    const x = seededTensor([1, 3, 17, 288, 256], 11);
    // 288 px > 256: two rows of tiles, the 160 px slack spread as 10 latent units on the one seam; one column.
    const grid = encodeGrid(encoder, x);
    assert.deepEqual([grid.rows.length, grid.cols.length, grid.rowBlend[1]], [2, 1, 14]);
    assertMatchesGolden(await encoder.encode(x), golden('encode-small-tiled'), 'small tiled');
    setTiling(encoder, 'off');
    assertMatchesGolden(await encoder.encode(x), golden('encode-small-whole'), 'small whole');
  } finally {
    await encoder.dispose();
  }
});

test('the clip loop alone: frames padded to whole clips by repeating the last, latents concatenated, token_drop trailing frames cut', async () => {
  const config = resolveFamilyConfig(miniMaxH3, MINIMAX_H3_TINY);
  const seen: number[][] = [];
  // A stand-in clip encoder: one latent frame per 4 input frames (⌈17/4⌉ = 5), each holding its clip's first and last input values.
  const out = await encodeClips(config, seededTensor([1, 1, 20, 1, 1], 2), async (clip) => {
    seen.push([clip.dims[2]!, clip.data[0]!, clip.data[clip.data.length - 1]!]);
    return { dims: [1, 1, 5, 1, 1], data: Float32Array.from({ length: 5 }, (_, i) => (i === 0 ? clip.data[0]! : clip.data.at(-1)!)) };
  });
  const x = seededTensor([1, 1, 20, 1, 1], 2).data;
  assert.deepEqual(seen, [
    [17, x[0], x[16]],
    [17, x[17], x[19]],
  ]);
  assert.deepEqual(out.dims, [1, 1, 7, 1, 1]);
  assert.equal(out.data[5], x[17]);
  // A config whose encoder the class cannot run is refused when an encoder is asked for, naming the field.
  await assert.rejects(
    () => loadEncoder({ config: { ...MINIMAX_H3_TINY, spatial_padding_mode: 'circular' }, weights: 'synthetic', seed: 4 }, { threads: 1 }),
    (e) => e instanceof DistVaeError && e.code === 'CONFIG_INVALID' && /spatial_padding_mode/.test(e.message),
  );
});
