// Families: geometry and tiling defaults from published defaults and from config.json contents
// written by diffusers itself (the tiny test configs of the reference harness: literals here, and
// the LTX-2 and HunyuanVideo ones their families' encoder tests share), family inference from
// _class_name, and refusals. Expected ratios are computed here from each config the way diffusers
// does, not read back from the code.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { FAMILY_NAMES, planningVae, familyForClassName, getFamily, resolveFamily } from './registry.js';
import type { RawConfig } from './types.js';
import { HUNYUAN_VIDEO_DIFREF_TINY } from './hunyuan-video/testing/configs.js';
import { LTX2_DIFREF_TINY } from './ltx2/testing/configs.js';
import { WAN22_PUBLISHED, WAN_TINY_SAVED } from './testing/video-configs.js';

// --- diffusers-written configs (diffusers 0.40.0.dev0 `save_config`, tiny harness VAEs) -------

const KL_TINY: RawConfig = {
  _class_name: 'AutoencoderKL',
  _diffusers_version: '0.40.0.dev0',
  act_fn: 'silu',
  block_out_channels: [16, 32],
  down_block_types: ['DownEncoderBlock2D', 'DownEncoderBlock2D'],
  force_upcast: true,
  in_channels: 3,
  latent_channels: 4,
  latents_mean: null,
  latents_std: null,
  layers_per_block: 1,
  mid_block_add_attention: true,
  norm_num_groups: 8,
  out_channels: 3,
  sample_size: 128,
  scaling_factor: 0.18215,
  shift_factor: null,
  up_block_types: ['UpDecoderBlock2D', 'UpDecoderBlock2D'],
  use_post_quant_conv: true,
  use_quant_conv: true,
};
const KL_FLUX_TINY: RawConfig = {
  ...KL_TINY,
  latent_channels: 16,
  scaling_factor: 0.3611,
  shift_factor: 0.1159,
  use_post_quant_conv: false,
  use_quant_conv: false,
};
const FLUX2_TINY: RawConfig = {
  _class_name: 'AutoencoderKLFlux2',
  _diffusers_version: '0.40.0.dev0',
  act_fn: 'silu',
  batch_norm_eps: 0.0001,
  batch_norm_momentum: 0.1,
  block_out_channels: [16, 32],
  decoder_block_out_channels: null,
  down_block_types: ['DownEncoderBlock2D', 'DownEncoderBlock2D'],
  force_upcast: true,
  in_channels: 3,
  latent_channels: 32,
  layers_per_block: 1,
  mid_block_add_attention: true,
  norm_num_groups: 8,
  out_channels: 3,
  patch_size: [2, 2],
  sample_size: 128,
  up_block_types: ['UpDecoderBlock2D', 'UpDecoderBlock2D'],
  use_post_quant_conv: true,
  use_quant_conv: true,
};
const WAN21_MEAN = [
  -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921,
];
const WAN21_STD = [
  2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743, 3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.916,
];
const WAN_TINY: RawConfig = { ...WAN_TINY_SAVED, latents_mean: WAN21_MEAN, latents_std: WAN21_STD };
const WAN22_TINY: RawConfig = {
  _class_name: 'AutoencoderKLWan',
  _diffusers_version: '0.40.0.dev0',
  attn_scales: [],
  base_dim: 8,
  decoder_base_dim: 16,
  dim_mult: [1, 2, 2],
  dropout: 0.0,
  in_channels: 12,
  is_residual: true,
  latents_mean: new Array(48).fill(0),
  latents_std: new Array(48).fill(1),
  num_res_blocks: 1,
  out_channels: 12,
  patch_size: 2,
  scale_factor_spatial: 8,
  scale_factor_temporal: 2,
  temperal_downsample: [true, false],
  z_dim: 48,
};
const QWEN_TINY: RawConfig = {
  _class_name: 'AutoencoderKLQwenImage',
  _diffusers_version: '0.40.0.dev0',
  attn_scales: [],
  base_dim: 8,
  dim_mult: [1, 2],
  dropout: 0.0,
  input_channels: 3,
  latents_mean: WAN21_MEAN,
  latents_std: WAN21_STD,
  num_res_blocks: 1,
  temperal_downsample: [true],
  z_dim: 16,
};
const LTX2_TEMB_TINY: RawConfig = { ...LTX2_DIFREF_TINY, timestep_conditioning: true };
const LTX23_TINY: RawConfig = {
  ...LTX2_DIFREF_TINY,
  decoder_spatial_padding_mode: 'zeros',
  downsample_type: ['spatial', 'temporal'],
  spatial_compression_ratio: 8,
  temporal_compression_ratio: 2,
  upsample_factor: [1, 2],
  upsample_residual: [false, false],
  upsample_type: ['temporal', 'spatial'],
};
/** Published-architecture configs as the reference harness writes them (LTX-2.0; Wan 2.2 TI2V-5B is WAN22_PUBLISHED). */
const LTX2_PUBLISHED: RawConfig = {
  _class_name: 'AutoencoderKLLTX2Video',
  in_channels: 3,
  out_channels: 3,
  latent_channels: 128,
  block_out_channels: [256, 512, 1024, 2048],
  decoder_block_out_channels: [256, 512, 1024],
  layers_per_block: [4, 6, 6, 2, 2],
  decoder_layers_per_block: [5, 5, 5, 5],
  spatio_temporal_scaling: [true, true, true, true],
  decoder_spatio_temporal_scaling: [true, true, true],
  decoder_inject_noise: [false, false, false, false],
  downsample_type: ['spatial', 'temporal', 'spatiotemporal', 'spatiotemporal'],
  upsample_type: ['spatiotemporal', 'spatiotemporal', 'spatiotemporal'],
  upsample_residual: [true, true, true],
  upsample_factor: [2, 2, 2],
  timestep_conditioning: false,
  patch_size: 4,
  patch_size_t: 1,
  resnet_norm_eps: 1e-6,
  encoder_causal: true,
  decoder_causal: false,
  encoder_spatial_padding_mode: 'zeros',
  decoder_spatial_padding_mode: 'reflect',
  spatial_compression_ratio: 32,
  temporal_compression_ratio: 8,
};
/** LTX-Video 0.9 (AutoencoderKLLTXVideo): a diffusers class this project has no family for. */
const LTX_090_TINY: RawConfig = {
  _class_name: 'AutoencoderKLLTXVideo',
  _diffusers_version: '0.40.0.dev0',
  block_out_channels: [16, 32],
  decoder_block_out_channels: [16, 32],
  decoder_causal: false,
  decoder_spatio_temporal_scaling: [true, false],
  latent_channels: 16,
  patch_size: 4,
  patch_size_t: 1,
  spatial_compression_ratio: null,
  spatio_temporal_scaling: [true, false],
  temporal_compression_ratio: null,
  timestep_conditioning: false,
};

// --- expected geometry, derived independently from each config ----------------------------------

interface Expect {
  spatial: number;
  temporal: number;
  patch: number;
  latentChannels: number;
  fiveDim: boolean;
  window: number;
  overlap: number;
  frames: { enabled: boolean; window: number; overlap: number } | null;
}

/** An image family: 4-D latents, a window of `window` px and overlap int(window · 0.25) (diffusers' factor). */
function imageExpect(spatial: number, latentChannels: number, window: number): Expect {
  return { spatial, temporal: 1, patch: 1, latentChannels, fiveDim: false, window, overlap: Math.trunc(window * 0.25), frames: null };
}

/** AutoencoderKL / Flux.2: r = 2^(len(block_out_channels) − 1); window sample_size; overlap int(sample_size · 0.25). */
function klExpect(blockOutChannels: number[], sampleSize: number, latentChannels: number): Expect {
  return imageExpect(2 ** (blockOutChannels.length - 1), latentChannels, sampleSize);
}

/** A video family: 5-D latents; diffusers' 256 px window, overlap 64 and no frame tiling unless `tiling` says otherwise. */
function videoExpect(
  spatial: number,
  temporal: number,
  patch: number,
  latentChannels: number,
  tiling: Partial<Pick<Expect, 'window' | 'overlap' | 'frames'>> = {},
): Expect {
  return { spatial, temporal, patch, latentChannels, fiveDim: true, window: 256, overlap: 64, frames: null, ...tiling };
}

/** HunyuanVideo tiles frames by default: windows of 16 latent frames, overlap 4. */
const HUNYUAN_TILING = { frames: { enabled: true, window: 16, overlap: 4 } };
/** LTX-2: a 512 px window; frame tiling off by default (window 16, overlap 8 when turned on). */
const LTX2_TILING = { window: 512, frames: { enabled: false, window: 16, overlap: 8 } };

const CASES: { name: string; family: string; config?: RawConfig; expect: Expect }[] = [
  // Published defaults (docs/design.md §3): SD 1.x KL, FLUX.2, TAE, Wan 2.1, Qwen-Image, HunyuanVideo, LTX-2.
  { name: 'autoencoder-kl published', family: 'autoencoder-kl', expect: klExpect([128, 256, 512, 512], 512, 4) },
  { name: 'flux2 published', family: 'flux2', expect: klExpect([128, 256, 512, 512], 1024, 32) },
  { name: 'tae published', family: 'tae', expect: imageExpect(8, 4, 512) },
  { name: 'wan 2.1 published', family: 'wan', expect: videoExpect(8, 4, 1, 16) },
  { name: 'qwen-image published', family: 'qwen-image', expect: videoExpect(8, 4, 1, 16) },
  { name: 'hunyuan-video published', family: 'hunyuan-video', expect: videoExpect(8, 4, 1, 16, HUNYUAN_TILING) },
  { name: 'ltx2 published', family: 'ltx2', expect: videoExpect(32, 8, 1, 128, LTX2_TILING) },
  // Published-architecture configs.
  { name: 'wan 2.2 published config', family: 'wan', config: WAN22_PUBLISHED, expect: videoExpect(16, 4, 2, 48) },
  { name: 'ltx2 published config', family: 'ltx2', config: LTX2_PUBLISHED, expect: videoExpect(32, 8, 1, 128, LTX2_TILING) },
  // diffusers-written tiny configs.
  { name: 'kl tiny', family: 'autoencoder-kl', config: KL_TINY, expect: klExpect([16, 32], 128, 4) },
  { name: 'kl-flux tiny', family: 'autoencoder-kl', config: KL_FLUX_TINY, expect: klExpect([16, 32], 128, 16) },
  { name: 'flux2 tiny', family: 'flux2', config: FLUX2_TINY, expect: klExpect([16, 32], 128, 32) },
  // Wan: diffusers' spatial ratio is scale_factor_spatial (2.2 folds patch 2 into it); temporal 2^count(temperal_downsample).
  { name: 'wan tiny', family: 'wan', config: WAN_TINY, expect: videoExpect(2, 2, 1, 16) },
  { name: 'wan 2.2 tiny', family: 'wan', config: WAN22_TINY, expect: videoExpect(8, 2, 2, 48) },
  // Qwen-Image: spatial 2^len(temperal_downsample), temporal 2^count(true).
  { name: 'qwen-image tiny', family: 'qwen-image', config: QWEN_TINY, expect: videoExpect(2, 2, 1, 16) },
  {
    name: 'hunyuan-video tiny',
    family: 'hunyuan-video',
    config: HUNYUAN_VIDEO_DIFREF_TINY,
    expect: videoExpect(4, 4, 1, 16, HUNYUAN_TILING),
  },
  { name: 'ltx2 tiny', family: 'ltx2', config: LTX2_DIFREF_TINY, expect: videoExpect(16, 4, 1, 16, LTX2_TILING) },
  { name: 'ltx2 tiny with timestep conditioning', family: 'ltx2', config: LTX2_TEMB_TINY, expect: videoExpect(16, 4, 1, 16, LTX2_TILING) },
  { name: 'ltx 2.3 tiny (mixed up-sampling)', family: 'ltx2', config: LTX23_TINY, expect: videoExpect(8, 2, 1, 16, LTX2_TILING) },
];

for (const c of CASES) {
  test(`geometry and tiling defaults: ${c.name}`, () => {
    // With a config, the family is given both ways: explicitly and inferred from _class_name.
    const vaes = c.config ? [planningVae(c.family, c.config), planningVae(undefined, c.config)] : [planningVae(c.family)];
    for (const vae of vaes) {
      assert.equal(vae.family.name, c.family);
      const g = vae.geometry;
      assert.deepEqual(
        {
          spatial: g.spatialRatio,
          temporal: g.temporalRatio,
          patch: g.patchSize,
          latentChannels: g.latentChannels,
          fiveDim: g.fiveDimLatents,
        },
        {
          spatial: c.expect.spatial,
          temporal: c.expect.temporal,
          patch: c.expect.patch,
          latentChannels: c.expect.latentChannels,
          fiveDim: c.expect.fiveDim,
        },
      );
      assert.equal(g.outChannels, 3);
      const t = vae.config.tiling;
      assert.deepEqual(t.window, { height: c.expect.window, width: c.expect.window });
      assert.deepEqual(t.overlap, { height: c.expect.overlap, width: c.expect.overlap });
      assert.deepEqual(t.frames, c.expect.frames);
      // diffusers' default: tiling off until enabled; no plan installed yet.
      assert.equal(vae.tiling.enabled, false);
      assert.deepEqual(vae.tiling.window, t.window);
    }
  });
}

test('every family name resolves and each diffusers class name selects its family (docs/design.md §9)', () => {
  assert.deepEqual([...FAMILY_NAMES].sort(), [
    'autoencoder-kl',
    'dc-ae',
    'flux2',
    'hunyuan-image',
    'hunyuan-video',
    'hunyuan-video-1.5',
    'ltx2',
    'minimax-h3',
    'qwen-image',
    'tae',
    'wan',
  ]);
  const byClass: Record<string, string> = {
    AutoencoderKL: 'autoencoder-kl',
    AutoencoderKLFlux2: 'flux2',
    AutoencoderKLWan: 'wan',
    AutoencoderKLQwenImage: 'qwen-image',
    AutoencoderKLHunyuanVideo: 'hunyuan-video',
    AutoencoderKLLTX2Video: 'ltx2',
    AutoencoderKLHunyuanImage: 'hunyuan-image',
    AutoencoderDC: 'dc-ae',
    AutoencoderKLHunyuanVideo15: 'hunyuan-video-1.5',
    AutoencoderKLMiniMaxH3: 'minimax-h3',
  };
  for (const [cls, name] of Object.entries(byClass)) {
    assert.equal(familyForClassName(cls)?.name, name, cls);
    assert.equal(resolveFamily(undefined, { _class_name: cls }).name, name);
    assert.equal(resolveFamily(name, { _class_name: cls }).name, name);
  }
  for (const name of FAMILY_NAMES) assert.equal(getFamily(name).name, name);
  assert.equal(familyForClassName('AutoencoderKLLTXVideo'), null);
});

function refusal(fn: () => unknown): DistVaeError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof DistVaeError, `expected a DistVaeError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a refusal');
}

test('a --family that conflicts with the config _class_name is refused, naming both', () => {
  const e = refusal(() => planningVae('flux2', WAN_TINY));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.equal(e.reasons.length, 1);
  assert.equal(e.reasons[0]!.code, 'FAMILY_CONFLICT');
  assert.equal(e.reasons[0]!.field, 'family');
  assert.equal(e.reasons[0]!.value, 'flux2');
  assert.equal(e.reasons[0]!.valid, 'wan');
  assert.match(e.message, /flux2/);
  assert.match(e.message, /AutoencoderKLWan/);
  // KL and Flux.2 share a decoder but not a family: still a conflict.
  assert.equal(refusal(() => planningVae('autoencoder-kl', FLUX2_TINY)).reasons[0]!.code, 'FAMILY_CONFLICT');
});

test('an unknown family name and an unknown _class_name are refused with the known ones listed', () => {
  const e = refusal(() => planningVae('sdxl'));
  assert.equal(e.code, 'UNKNOWN_FAMILY');
  assert.equal(e.reasons[0]!.field, 'family');
  assert.equal(e.reasons[0]!.value, 'sdxl');
  for (const name of FAMILY_NAMES) assert.match(e.reasons[0]!.valid, new RegExp(name));

  const c = refusal(() => planningVae(undefined, LTX_090_TINY));
  assert.equal(c.code, 'UNKNOWN_FAMILY');
  assert.equal(c.reasons[0]!.code, 'UNKNOWN_CLASS_NAME');
  assert.equal(c.reasons[0]!.field, '_class_name');
  assert.equal(c.reasons[0]!.value, 'AutoencoderKLLTXVideo');
  assert.match(c.reasons[0]!.valid, /AutoencoderKLLTX2Video/);

  const none = refusal(() => planningVae(undefined, { sample_size: 512 }));
  assert.equal(none.reasons[0]!.code, 'FAMILY_REQUIRED');
  assert.equal(refusal(() => planningVae(undefined)).reasons[0]!.code, 'FAMILY_REQUIRED');
});

test('invalid config fields are refused all at once, each reason naming its field and value', () => {
  const e = refusal(() =>
    planningVae('autoencoder-kl', {
      _class_name: 'AutoencoderKL',
      block_out_channels: [16, 'wide'],
      sample_size: -64,
      latent_channels: 0,
      use_post_quant_conv: 'yes',
      act_fn: 'gelu',
    }),
  );
  assert.equal(e.code, 'CONFIG_INVALID');
  const byField = new Map(e.reasons.map((r) => [r.field, r]));
  assert.deepEqual([...byField.keys()].sort(), ['act_fn', 'block_out_channels', 'latent_channels', 'sample_size', 'use_post_quant_conv']);
  assert.equal(byField.get('sample_size')!.value, -64);
  assert.equal(byField.get('latent_channels')!.value, 0);
  assert.deepEqual(byField.get('block_out_channels')!.value, [16, 'wide']);
  assert.equal(byField.get('use_post_quant_conv')!.value, 'yes');
  for (const r of e.reasons) {
    assert.equal(r.code, 'CONFIG_FIELD_INVALID');
    assert.ok(r.message.includes(r.field), r.message);
    assert.ok(r.valid.length > 0);
  }
  // The message lists them all too.
  for (const field of byField.keys()) assert.ok(e.message.includes(field), field);
});

test('cross-field inconsistencies are refused with the derived value and the one the decoder implies', () => {
  // Wan: scale_factor_spatial must equal 2^(len(dim_mult)−1)·patch_size (diffusers trusts the config; the decoder does not).
  const wan = refusal(() => planningVae('wan', { ...WAN_TINY, scale_factor_spatial: 4, scale_factor_temporal: 8 }));
  assert.deepEqual(
    wan.reasons.map((r) => [r.code, r.field, r.value]),
    [
      ['CONFIG_INCONSISTENT', 'scale_factor_spatial', 4],
      ['CONFIG_INCONSISTENT', 'scale_factor_temporal', 8],
    ],
  );
  assert.match(wan.reasons[0]!.valid, /^2 /);
  // KL: every width must be divisible by norm_num_groups.
  const kl = refusal(() => planningVae('autoencoder-kl', { ...KL_TINY, block_out_channels: [16, 36] }));
  assert.deepEqual(
    kl.reasons.map((r) => r.field),
    ['block_out_channels[1]'],
  );
  // LTX-2: explicit ratios must agree with the decoder's up-sampling (16 here).
  const ltx = refusal(() => planningVae('ltx2', { ...LTX2_DIFREF_TINY, spatial_compression_ratio: 32 }));
  assert.deepEqual(
    ltx.reasons.map((r) => [r.field, r.value]),
    [['spatial_compression_ratio', 32]],
  );
  // HunyuanVideo's decoder only supports temporal ratio 4.
  const hv = refusal(() => planningVae('hunyuan-video', { ...HUNYUAN_VIDEO_DIFREF_TINY, temporal_compression_ratio: 8 }));
  assert.deepEqual(
    hv.reasons.map((r) => [r.field, r.value]),
    [['temporal_compression_ratio', 8]],
  );
});

test('a config without explicit LTX-2 ratios falls back the way diffusers does (patch · 2^count(spatio_temporal_scaling))', () => {
  // Encoder flags [true, true] → 4·2² = 16 spatial and 1·2² = 4 temporal: consistent with the tiny decoder.
  const { spatial_compression_ratio: _s, temporal_compression_ratio: _t, ...rest } = LTX2_DIFREF_TINY;
  const vae = planningVae('ltx2', rest);
  assert.deepEqual([vae.geometry.spatialRatio, vae.geometry.temporalRatio], [16, 4]);
});

test("Flux.2 patch_size is the pipeline's latent packing and adds no constraint; sample_size may be a list", () => {
  const vae = planningVae('flux2', { ...FLUX2_TINY, patch_size: [4, 4] });
  assert.equal(vae.geometry.patchSize, 1);
  const listed = planningVae('autoencoder-kl', { ...KL_TINY, sample_size: [96, 96] });
  assert.deepEqual(listed.config.tiling.window, { height: 96, width: 96 });
  assert.deepEqual(listed.config.tiling.overlap, { height: 24, width: 24 });
});
