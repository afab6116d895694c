// The HunyuanImage declaration: the published config resolves to diffusers' geometry and tiling
// (32×, 64 latent channels, 384 px tiles with a 96 px blend); configs the class cannot build or
// run are refused up front, every reason at once.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { planningVae } from '../registry.js';
import { hunyuanImageDecoderParams } from './graph.js';
import { HUNYUAN_IMAGE_TINY } from './testing/configs.js';

test('the published config: 32×, 64 latent channels, diffusers tiles of 384 px blended over 96 px', () => {
  const vae = planningVae('hunyuan-image');
  assert.deepEqual(vae.geometry, {
    spatialRatio: 32,
    temporalRatio: 1,
    patchSize: 1,
    latentChannels: 64,
    outChannels: 3,
    fiveDimLatents: false,
  });
  assert.deepEqual(vae.config.tiling.window, { height: 384, width: 384 });
  assert.deepEqual(vae.config.tiling.overlap, { height: 96, width: 96 });
  const params = hunyuanImageDecoderParams(vae.config);
  // 6 levels of 3 resnets and 5 upsamplers in one flat list, as the checkpoint names them: the last
  // upsampler (256 → 128 channels) is up_blocks.19, a conv to 4 · 128 channels.
  assert.ok(params.some((p) => p.name === 'decoder.up_blocks.19.conv.weight' && p.dims.join() === '512,256,3,3'));
  assert.ok(params.some((p) => p.name === 'decoder.up_blocks.22.conv2.weight'));
  assert.ok(!params.some((p) => p.name.startsWith('decoder.up_blocks.23.')));
  assert.ok(params.some((p) => p.name === 'decoder.mid_block.attentions.0.proj.weight' && p.dims.join() === '1024,1024,1,1'));
  assert.ok(params.every((p) => p.name.startsWith('decoder.')));
});

function refusedFields(config: object): string[] {
  try {
    planningVae('hunyuan-image', { ...HUNYUAN_IMAGE_TINY, ...config });
  } catch (e) {
    assert.ok(e instanceof DistVaeError && e.code === 'CONFIG_INVALID', String(e));
    return e.reasons.map((r) => r.field);
  }
  return assert.fail('expected CONFIG_INVALID');
}

test('configs the class cannot build or decode are refused, naming each field', () => {
  // GroupNorm(32) is hard-coded; 100 is also no multiple of the 64 latent channels, and 4 · 64 is no multiple of 100.
  assert.deepEqual(refusedFields({ block_out_channels: [32, 64, 100] }), [
    'block_out_channels[2]',
    'latent_channels',
    'block_out_channels',
  ]);
  assert.deepEqual(refusedFields({ latent_channels: 48 }), ['latent_channels']);
  // 3 levels build at most 4×; a ratio that is no power of two is not what the upsamplers build.
  assert.deepEqual(refusedFields({ spatial_compression_ratio: 8 }), ['spatial_compression_ratio']);
  assert.deepEqual(refusedFields({ spatial_compression_ratio: 3 }), ['spatial_compression_ratio']);
  // 2×: the level after the last upsampler is entered at the wrong width (diffusers' resnet cannot change width).
  assert.deepEqual(refusedFields({ spatial_compression_ratio: 2 }), ['block_out_channels']);
  assert.deepEqual(refusedFields({ upsample_match_channel: false }), ['block_out_channels', 'block_out_channels']);
});
