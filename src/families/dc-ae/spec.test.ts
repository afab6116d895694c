// The DC-AE declaration: the published config (dc-ae-f32c32-sana-1.0) resolves to diffusers'
// geometry and tiling (32×, 32 latent channels, 512 px tiles every 448 px), its checkpoint keys
// are diffusers' own, and configs the decoder cannot build are refused up front, every reason at once.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from '../../cli/testing/in-process.js';
import { DistVaeError } from '../../errors.js';
import { planningVae } from '../registry.js';
import { dcaeDecoderParams } from './graph.js';
import { DCAE_TINY } from './testing/configs.js';

test('the published config: 32×, 32 latent channels, diffusers tiles of 512 px every 448 px', () => {
  const vae = planningVae('dc-ae');
  assert.deepEqual(vae.geometry, {
    spatialRatio: 32,
    temporalRatio: 1,
    patchSize: 1,
    latentChannels: 32,
    outChannels: 3,
    fiveDimLatents: false,
  });
  assert.deepEqual(vae.config.tiling.window, { height: 512, width: 512 });
  assert.deepEqual(vae.config.tiling.overlap, { height: 64, width: 64 });
  assert.equal(vae.family.diffusersTiling, 'window-and-stride');
  const params = dcaeDecoderParams(vae.config);
  const dims = (name: string) => params.find((p) => p.name === name)?.dims.join();
  // Level 5 (1024 wide, no up block): 3 EfficientViT blocks at up_blocks.5.0–2; level 4 starts with its up block.
  assert.equal(dims('decoder.up_blocks.5.2.attn.to_qkv_multiscale.0.proj_out.weight'), '3072,32,1,1');
  assert.equal(dims('decoder.up_blocks.5.0.attn.to_out.weight'), '1024,2048');
  assert.equal(dims('decoder.up_blocks.5.0.conv_out.conv_inverted.weight'), '8192,1024,1,1');
  assert.equal(dims('decoder.up_blocks.4.0.conv.weight'), '1024,1024,3,3');
  assert.equal(dims('decoder.up_blocks.0.3.conv2.weight'), '128,128,3,3');
  assert.equal(dims('decoder.up_blocks.0.3.conv2.bias'), undefined);
  assert.equal(dims('decoder.norm_out.bias'), '128');
  assert.ok(!params.some((p) => p.name.startsWith('decoder.up_blocks.5.3')));
  assert.ok(params.every((p) => p.name.startsWith('decoder.')));
});

function refusedFields(config: object): string[] {
  try {
    planningVae('dc-ae', { ...DCAE_TINY, ...config });
  } catch (e) {
    assert.ok(e instanceof DistVaeError && e.code === 'CONFIG_INVALID', String(e));
    return e.reasons.map((r) => r.field);
  }
  return assert.fail('expected CONFIG_INVALID');
}

test('configs the decoder cannot build (or whose encoder fields are malformed) are refused, naming each field', () => {
  assert.deepEqual(refusedFields({ decoder_norm_types: 'batch_norm' }), ['decoder_norm_types']);
  assert.deepEqual(refusedFields({ decoder_block_types: ['ResBlock', 'EfficientViTBlock'] }), ['decoder_block_types']);
  assert.deepEqual(refusedFields({ decoder_act_fns: 'gelu', decoder_qkv_multiscales: [[], [4], [5]] }), [
    'decoder_act_fns',
    'decoder_qkv_multiscales',
  ]);
  // The encoder's levels state the ratio; a decoder of other depth would not build it.
  const fourLevels = {
    encoder_block_out_channels: [16, 32, 32, 32],
    encoder_layers_per_block: [1, 1, 1, 1],
    encoder_block_types: ['ResBlock', 'EfficientViTBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
    encoder_qkv_multiscales: [[], [5], [5], [5]],
  };
  assert.deepEqual(refusedFields(fourLevels), ['decoder_block_out_channels']);
  // The encoder's per-level lists are read (type-checked) with the config, one entry per encoder level.
  assert.deepEqual(refusedFields({ encoder_layers_per_block: [1, 1], encoder_qkv_multiscales: [[], [4], [5]] }), [
    'encoder_layers_per_block',
    'encoder_qkv_multiscales',
  ]);
  assert.deepEqual(refusedFields({ latent_channels: 24 }), ['latent_channels']);
  assert.deepEqual(refusedFields({ decoder_layers_per_block: [0, 1, 1] }), ['decoder_layers_per_block[0]']);
  assert.deepEqual(refusedFields({ attention_head_dim: 64 }), ['attention_head_dim', 'attention_head_dim']);
});

test('`distvae plan` with the published config.json (_class_name picks dc-ae): 4096² in 10 × 10 diffusers tiles', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-dc-ae-plan-'));
  try {
    // dc-ae-f32c32-sana-1.0's config.json as diffusers saves it (encoder fields included).
    const published = {
      _class_name: 'AutoencoderDC',
      attention_head_dim: 32,
      decoder_act_fns: 'silu',
      decoder_block_out_channels: [128, 256, 512, 512, 1024, 1024],
      decoder_block_types: ['ResBlock', 'ResBlock', 'ResBlock', 'EfficientViTBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
      decoder_conv_act_fn: 'relu',
      decoder_in_shortcut: true,
      decoder_layers_per_block: [3, 3, 3, 3, 3, 3],
      decoder_norm_types: 'rms_norm',
      decoder_qkv_multiscales: [[], [], [], [5], [5], [5]],
      downsample_block_type: 'conv',
      encoder_block_out_channels: [128, 256, 512, 512, 1024, 1024],
      encoder_block_types: ['ResBlock', 'ResBlock', 'ResBlock', 'EfficientViTBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
      encoder_layers_per_block: [2, 2, 2, 3, 3, 3],
      encoder_out_shortcut: true,
      encoder_qkv_multiscales: [[], [], [], [5], [5], [5]],
      in_channels: 3,
      latent_channels: 32,
      scaling_factor: 0.41407,
      upsample_block_type: 'interpolate',
    };
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify(published));
    const run = await cli('plan', '--config', config, '--height', '4096', '--width', '4096', '--json');
    assert.equal(run.code, 0, run.stderr);
    const plan = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.equal(plan['family'], 'dc-ae');
    assert.deepEqual(plan['latent'], { height: 128, width: 128, frames: 1 });
    assert.deepEqual(plan['window'], { height: 512, width: 512 });
    assert.deepEqual(plan['stride'], { height: 14, width: 14 });
    assert.equal(plan['tiles'], 100);
    assert.equal(plan['diffusersEquivalent'], true);
    // The same as planning from the family name alone: its defaults are the published config.
    assert.deepEqual(planningVae('dc-ae', published).config.fields, planningVae('dc-ae').config.fields);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
