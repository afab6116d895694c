// AutoencoderKLLTX2Video's encoder against diffusers' own `encode(x).latent_dist.mode()`
// (testing/goldens/README.md: the difref tiny and small configs, synthetic encoder weights seed 4,
// seeded videos in [−1, 1], diffusers 58eb52c0): whole encodes — the tiny config's spatio-temporal
// down-samplers, the small one's spatial, temporal and spatio-temporal ones — and, through
// loadEncoder and the planner, spatial tiles, temporal chunks (`_temporal_tiled_encode`, which
// LTX-2's `_encode` switches with `use_framewise_decoding`) and both; all within 1e-4 of the largest value.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { DistVaeError } from '../../errors.js';
import { latentMean, latentStd } from '../../io/latent-sample.js';
import { setTiling } from '../../plan/planner.js';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { ltx2EncoderArchitecture } from './encoder-graph.js';
import { ltx2Runtime } from './runtime.js';
import { ltx2 } from './spec.js';
import { LTX2_CONV_TINY, LTX2_DIFREF_SMALL, LTX2_DIFREF_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);

const WHOLE = [
  { name: 'tiny-encode-whole', config: LTX2_DIFREF_TINY, video: [1, 3, 9, 64, 96], seed: 11 },
  { name: 'tiny-encode-whole17', config: LTX2_DIFREF_TINY, video: [1, 3, 17, 64, 96], seed: 12 },
  { name: 'small-encode-whole', config: LTX2_DIFREF_SMALL, video: [1, 3, 9, 64, 96], seed: 14 },
  { name: 'tiny-conv-encode-whole', config: LTX2_CONV_TINY, video: [1, 3, 9, 64, 96], seed: 11 },
];

for (const c of WHOLE) {
  test(`ltx2 ${c.name} (${c.video.join('×')}): the whole encode matches diffusers within 1e-4 of the largest value`, async () => {
    const config = resolveFamilyConfig(ltx2, c.config);
    const encoder = ltx2Runtime.encoder!;
    const runner = await encoder.createRunner(config, syntheticWeights(encoder.params(config), 4), { intraOpThreads: 1 });
    try {
      // Measured when made: 2.7e-6 of 1.9 (tiny, 9 frames), 3.6e-6 of 2.4 (small), 4.8e-6 of 3.4 (conv, non-causal, reflect).
      assertMatchesGolden(await runner.decode(seededTensor(c.video, c.seed)), golden(c.name), c.name);
    } finally {
      await runner.dispose();
    }
  });
}

test('ltx2 tiny: spatial, temporal and temporal-of-spatial tiled encodes through loadEncoder match diffusers', async () => {
  const encoder = await loadEncoder({ config: LTX2_DIFREF_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    // diffusers' defaults: tiling off, framewise off (16 frames every 8 when on).
    assert.equal(encoder.tiling.enabled, false);
    assert.deepEqual(encoder.tiling.frames, { enabled: false, window: 16, overlap: 8 });
    const x9 = seededTensor([1, 3, 9, 64, 96], 11);
    const x17 = seededTensor([1, 3, 17, 64, 96], 12);
    // 32 px tiles every 16 (blend 1 latent unit), time whole.
    setTiling(encoder, { window: { height: 32, width: 32 }, overlap: { height: 16, width: 16 }, frames: null });
    assertMatchesGolden(await encoder.encode(x9), golden('tiny-encode-tiled'), 'tiny-encode-tiled');
    // Chunks of 8 + 1 frames every 4 (the last chunk one frame), no spatial tiles.
    setTiling(encoder, { window: { height: 64, width: 96 }, overlap: { height: 0, width: 0 }, frames: { window: 8, overlap: 4 } });
    assertMatchesGolden(await encoder.encode(x17), golden('tiny-encode-frames'), 'tiny-encode-frames');
    // Each chunk tiled: 32 × 48 px every 16 × 32.
    setTiling(encoder, { window: { height: 32, width: 48 }, overlap: { height: 16, width: 16 }, frames: { window: 8, overlap: 4 } });
    assertMatchesGolden(await encoder.encode(x17), golden('tiny-encode-frames-tiled'), 'tiny-encode-frames-tiled');
  } finally {
    await encoder.dispose();
  }
});

test('ltx2 encoder: the published down-samplers as diffusers builds them; configs the class cannot encode refused when an encoder is asked for', () => {
  const published = ltx2EncoderArchitecture(resolveFamilyConfig(ltx2, undefined));
  assert.deepEqual(
    published.blocks.map((b) => [b.channels, b.resnets, b.downsample?.type, b.downsample?.to]),
    [
      [128, 4, 'spatial', 256],
      [256, 6, 'temporal', 512],
      [512, 6, 'spatiotemporal', 1024],
      [1024, 2, 'spatiotemporal', 2048],
    ],
  );
  assert.equal(published.top, 2048);
  assert.equal(published.midResnets, 2);
  // A `conv` down-sampler keeps its width (16, the latent channels), so block 1, built for 32 channels, would receive 16: diffusers crashes.
  const conv = resolveFamilyConfig(ltx2, { ...LTX2_CONV_TINY, block_out_channels: [32, 32] });
  assert.throws(
    () => ltx2Runtime.encoder!.params(conv),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'CONFIG_INVALID' &&
      /encoder block 1 is built for 32 channels but receives 16/.test(e.message),
  );
  // The decoder of the same config still loads: encoder fields never refuse a decode.
  assert.doesNotThrow(() => ltx2Runtime.decoderParams(conv));
});

test("ltx2 tiny --sample: the moments (conv_out's last channel repeated into the log-variance), blended over chunks and tiles, give diffusers' std (≤ 1e-4 relative)", async () => {
  const encoder = await loadEncoder({ config: LTX2_DIFREF_TINY, weights: 'synthetic', seed: 4 }, { threads: 1, moments: true });
  try {
    setTiling(encoder, { window: { height: 32, width: 48 }, overlap: { height: 16, width: 16 }, frames: { window: 8, overlap: 4 } });
    const moments = await encoder.encode(seededTensor([1, 3, 17, 64, 96], 12));
    const std = latentStd(moments);
    const expected = golden('tiny-encode-std-frames-tiled');
    assert.deepEqual(std.dims, expected.dims);
    let worst = 0;
    for (let i = 0; i < std.data.length; i++) worst = Math.max(worst, Math.abs(std.data[i]! - expected.data[i]!) / expected.data[i]!);
    assert.ok(worst <= 1e-4, `std relative error ${worst}`);
    // Every log-variance channel is the same one (diffusers' repeat).
    const plane = std.data.length / std.dims[1]!;
    assert.deepEqual(std.data.subarray(0, plane), std.data.subarray(std.data.length - plane));
    assertMatchesGolden(latentMean(moments), golden('tiny-encode-frames-tiled'), 'mean half');
  } finally {
    await encoder.dispose();
  }
});
