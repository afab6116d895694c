// AutoencoderKLHunyuanVideo15's encoder against diffusers' own `encode(x).latent_dist.mode()`
// (testing/goldens/README.md: the difref tiny and small configs, synthetic encoder weights seed 4,
// seeded videos in [−1, 1], diffusers 58eb52c0): whole encodes of a video, of one frame (the
// temporal down-samplers' frame-0 path alone) and on the published depth (16×), within 1e-4 of the
// largest value; and the spatially tiled encode through loadEncoder and the planner (the class's
// `tiled_encode`: one overlap factor 0.25, every frame in each tile) against diffusers' own.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { DistVaeError } from '../../errors.js';
import { latentMean, latentStd } from '../../io/latent-sample.js';
import { diffusersEquivalent } from '../../plan/equivalence.js';
import { setTiling } from '../../plan/planner.js';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { resolveFamilyConfig } from '../registry.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { hunyuanVideo15EncoderParams, hunyuanVideo15DownLevels } from './encoder-graph.js';
import { hunyuanVideo15Runtime } from './runtime.js';
import { hunyuanVideo15 } from './spec.js';
import { HUNYUAN_VIDEO_15_SMALL, HUNYUAN_VIDEO_15_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);

const CASES = [
  { name: 'tiny-encode-whole', config: HUNYUAN_VIDEO_15_TINY, video: [1, 3, 9, 32, 48], seed: 11 },
  { name: 'tiny-encode-image', config: HUNYUAN_VIDEO_15_TINY, video: [1, 3, 1, 32, 48], seed: 13 },
  { name: 'small-encode-whole', config: HUNYUAN_VIDEO_15_SMALL, video: [1, 3, 5, 64, 96], seed: 14 },
];

for (const c of CASES) {
  test(`hunyuan-video-1.5 ${c.name} (${c.video.join('×')}): the whole encode matches diffusers within 1e-4 of the largest value`, async () => {
    const config = resolveFamilyConfig(hunyuanVideo15, c.config);
    const encoder = hunyuanVideo15Runtime.encoder!;
    const runner = await encoder.createRunner(config, syntheticWeights(encoder.params(config), 4), { intraOpThreads: 1 });
    try {
      // Measured when made: 1.2e-5 of 7.8 (tiny video), 8.8e-6 of 7.6 (one frame), 1.4e-5 of 8.4 (small).
      assertMatchesGolden(await runner.decode(seededTensor(c.video, c.seed)), golden(c.name), c.name);
    } finally {
      await runner.dispose();
    }
  });
}

test('hunyuan-video-1.5 encoder: levels as diffusers builds them, and configs the class cannot encode refused with the reason', () => {
  const small = resolveFamilyConfig(hunyuanVideo15, HUNYUAN_VIDEO_15_SMALL);
  // 16× in space from levels 0-3, 4× in time from levels 2-3 (i ≥ log2(16 / 4)), each to the next width.
  assert.deepEqual(
    hunyuanVideo15DownLevels(small).map((l) => l.downsample),
    [{ to: 16, temporal: false }, { to: 32, temporal: false }, { to: 64, temporal: true }, { to: 64, temporal: true }, null],
  );
  // A config the decoder takes (96 repeats the 32 latent channels 3 times) whose encoder's conv_out
  // shortcut would average 96 / 64 channels: refused when the encoder is asked for, naming the widths.
  const odd = resolveFamilyConfig(hunyuanVideo15, {
    ...HUNYUAN_VIDEO_15_TINY,
    block_out_channels: [16, 32, 96],
    downsample_match_channel: false,
    upsample_match_channel: false,
  });
  assert.throws(
    () => hunyuanVideo15EncoderParams(odd),
    (e: unknown) =>
      e instanceof DistVaeError && e.code === 'CONFIG_INVALID' && /96 is not a multiple of 2 × latent_channels = 64/.test(e.message),
  );
  // Packed widths that do not divide: 32 → 96 in time packs 8 positions of 32 channels into 96.
  const packed = resolveFamilyConfig(hunyuanVideo15, {
    ...HUNYUAN_VIDEO_15_TINY,
    block_out_channels: [16, 32, 96],
    upsample_match_channel: false,
  });
  assert.throws(() => hunyuanVideo15EncoderParams(packed), /down-sampler of encoder level 1 \(width 32 → 96, in time too\)/);
});

test('hunyuan-video-1.5 tiny: tiled encodes (16 × 16 and 16 × 32 px tiles, overlap factor 0.25) match diffusers within 1e-4 of the largest value', async () => {
  const encoder = await loadEncoder({ config: HUNYUAN_VIDEO_15_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    const x = seededTensor([1, 3, 9, 32, 48], 11);
    for (const [h, w, name] of [
      [16, 16, 'tiny-encode-tiled'],
      [16, 32, 'tiny-encode-tiled-16x32'],
    ] as const) {
      // diffusers: tiles every int(S · 0.75) px, blend int(S/r · 0.25) latent units — overlaps of S/4 px here.
      setTiling(encoder, { window: { height: h, width: w }, overlap: { height: h / 4, width: w / 4 } });
      assert.ok(diffusersEquivalent(encoder), `${h}×${w}: a plan diffusers runs`);
      assertMatchesGolden(await encoder.encode(x), golden(name), name);
    }
    // No temporal tiling in the class: a frame plan is refused.
    assert.throws(() => setTiling(encoder, { frames: { window: 8, overlap: 4 } }), DistVaeError);
  } finally {
    await encoder.dispose();
  }
});

test("hunyuan-video-1.5 tiny --sample: the tiled moments give diffusers' std (≤ 1e-4 relative) and the tiled mean", async () => {
  const encoder = await loadEncoder({ config: HUNYUAN_VIDEO_15_TINY, weights: 'synthetic', seed: 4 }, { threads: 1, moments: true });
  try {
    setTiling(encoder, { window: { height: 16, width: 16 }, overlap: { height: 4, width: 4 } });
    const moments = await encoder.encode(seededTensor([1, 3, 9, 32, 48], 11));
    const std = latentStd(moments);
    const expected = golden('tiny-encode-std-tiled');
    assert.deepEqual(std.dims, expected.dims);
    let worst = 0;
    for (let i = 0; i < std.data.length; i++) worst = Math.max(worst, Math.abs(std.data[i]! - expected.data[i]!) / expected.data[i]!);
    assert.ok(worst <= 1e-4, `std relative error ${worst}`);
    assertMatchesGolden(latentMean(moments), golden('tiny-encode-tiled'), 'mean half');
  } finally {
    await encoder.dispose();
  }
});

/** The original (Tencent) name of a diffusers key, spelled from diffusers' conversion script (the inverse of what it renames). */
function originalKey(key: string): string {
  return key
    .replace(/^(decoder|encoder)\.mid_block\.resnets\.(\d)\./, (_, half: string, i: string) => `${half}.mid.block_${Number(i) + 1}.`)
    .replace(/^(decoder|encoder)\.mid_block\.attentions\.0\.to_(q|k|v)\./, '$1.mid.attn_1.$2.')
    .replace(/^(decoder|encoder)\.mid_block\.attentions\.0\./, '$1.mid.attn_1.')
    .replace(/^decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\./, 'decoder.up.$1.block.$2.')
    .replace(/^decoder\.up_blocks\.(\d+)\.upsamplers\.0\./, 'decoder.up.$1.upsample.')
    .replace(/^encoder\.down_blocks\.(\d+)\.resnets\.(\d+)\./, 'encoder.down.$1.block.$2.')
    .replace(/^encoder\.down_blocks\.(\d+)\.downsamplers\.0\./, 'encoder.down.$1.downsample.');
}

test("hunyuan-video-1.5: Tencent's original full file (both halves renamed) loads as an encoder with --family, its config from the decoder's shapes", async () => {
  const config = resolveFamilyConfig(hunyuanVideo15, HUNYUAN_VIDEO_15_TINY);
  const weights = new Map([
    ...syntheticWeights(hunyuanVideo15Runtime.decoderParams(config), 3),
    ...syntheticWeights(hunyuanVideo15EncoderParams(config), 4),
  ]);
  const original = new Map([...weights].map(([k, t]) => [originalKey(k), t]));
  assert.ok(original.has('encoder.mid.attn_1.q.weight') && original.has('encoder.down.1.downsample.conv.conv.weight'));
  assert.ok(original.has('encoder.mid.block_2.norm1.gamma') && original.has('encoder.down.0.block.0.conv2.conv.bias'));
  const dir = mkdtempSync(join(tmpdir(), 'distvae-hv15-enc-'));
  try {
    const file = join(dir, 'hunyuanvideo15-vae.safetensors');
    writeSafetensors(file, original);
    const encoder = await loadEncoder(file, { family: 'hunyuan-video-1.5', threads: 1 });
    try {
      assertMatchesGolden(await encoder.encode(seededTensor([1, 3, 9, 32, 48], 11)), golden('tiny-encode-whole'), 'original layout');
    } finally {
      await encoder.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
