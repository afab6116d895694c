// TAE configs: what resolveConfig accepts and refuses, what a checkpoint's keys imply
// (variant, latent channels, pool blocks, key layout) for every published variant in both
// layouts, and loading a diffusers AutoencoderTiny folder (both halves in one file).

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { loadEncoder } from '../../encode/encoder.js';
import { DistVaeError } from '../../errors.js';
import { elementCount, type Tensor, seededTensor } from '../../tensor.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { TAE_VARIANTS, tae, type TaeVariant } from './spec.js';
import { taeConfigFromWeights, taeRuntime } from './runtime.js';
import type { RawConfig } from '../types.js';
import { TAE_SMALL } from '../testing/config-files.js';

const configError = (pattern: RegExp) => (e: unknown) =>
  e instanceof DistVaeError && e.code === 'CONFIG_INVALID' && pattern.test(e.message);

function paramsOf(raw: RawConfig, half: 'decoder' | 'encoder') {
  const config = tae.resolveConfig(raw);
  return half === 'decoder' ? taeRuntime.decoderParams(config) : taeRuntime.encoder!.params(config);
}

function weightsOf(raw: RawConfig, half: 'decoder' | 'encoder', seed = 1): Map<string, Tensor> {
  return syntheticWeights(paramsOf(raw, half), seed);
}

/** Zero tensors of the right shapes: all that reading a config from keys looks at. */
function shapesOf(raw: RawConfig, half: 'decoder' | 'encoder'): Map<string, Tensor> {
  return new Map(paramsOf(raw, half).map((p) => [p.name, { dims: p.dims, data: new Float32Array(elementCount(p.dims)) }]));
}

test('resolveConfig: a variant sets latent channels and pool blocks; conflicts and unbuildable shapes are refused', () => {
  const taef2 = tae.resolveConfig({ variant: 'taef2' });
  assert.equal(taef2.className, 'taef2');
  assert.equal(taef2.geometry.latentChannels, 32);
  assert.equal(taef2.fields['use_midblock_gn'], true);
  assert.equal(taef2.geometry.spatialRatio, 8);
  assert.deepEqual(taef2.tiling.window, { height: 512, width: 512 });
  assert.deepEqual(taef2.tiling.overlap, { height: 128, width: 128 });

  const custom = tae.resolveConfig({ latent_channels: 8, use_midblock_gn: true });
  assert.equal(custom.className, 'AutoencoderTiny');
  assert.equal(custom.fields['variant'], null);

  assert.throws(
    () => tae.resolveConfig({ variant: 'taef2', latent_channels: 16 }),
    configError(/latent_channels = 16 does not match the taef2 variant \(32\)/),
  );
  assert.throws(
    () => tae.resolveConfig({ variant: 'taesd', use_midblock_gn: true }),
    configError(/use_midblock_gn = true does not match the taesd variant/),
  );
  assert.throws(() => tae.resolveConfig({ variant: 'taesd4' }), configError(/variant.*one of taesd, taesdxl, taesd3, taef1, taef2/));
  assert.throws(
    () => tae.resolveConfig({ decoder_block_out_channels: [64, 64, 128, 64] }),
    configError(/keeps one width through all stages/),
  );
  assert.throws(
    () => tae.resolveConfig({ num_encoder_blocks: [1, 3, 3] }),
    configError(/encoder's 3 stages downsample 4x but the decoder upsamples 8x/),
  );
  assert.throws(() => tae.resolveConfig({ act_fn: 'silu' }), configError(/act_fn/));
  assert.throws(() => tae.resolveConfig({ key_layout: 'comfy' }), configError(/key_layout.*madebyollin, diffusers/));
});

test('resolveConfig accepts the config.json of a diffusers AutoencoderTiny', () => {
  const diffusers = {
    _class_name: 'AutoencoderTiny',
    act_fn: 'relu',
    decoder_block_out_channels: [64, 64, 64, 64],
    encoder_block_out_channels: [64, 64, 64, 64],
    force_upcast: false,
    in_channels: 3,
    latent_channels: 16,
    latent_magnitude: 3,
    latent_shift: 0.5,
    num_decoder_blocks: [3, 3, 3, 1],
    num_encoder_blocks: [1, 3, 3, 3],
    out_channels: 3,
    scaling_factor: 1.0,
    shift_factor: 0.0,
    upsample_fn: 'nearest',
    upsampling_scaling_factor: 2,
  };
  const config = tae.resolveConfig(diffusers);
  assert.equal(config.geometry.latentChannels, 16);
  assert.equal(config.geometry.spatialRatio, 8);
});

test('configFromWeights reads every published variant from either half, in both key layouts; twins resolve to the first', () => {
  const expectedVariant: Record<TaeVariant, TaeVariant> = {
    taesd: 'taesd',
    taesdxl: 'taesd',
    taesd3: 'taesd3',
    taef1: 'taesd3',
    taef2: 'taef2',
  };
  for (const variant of Object.keys(TAE_VARIANTS) as TaeVariant[]) {
    for (const key_layout of ['madebyollin', 'diffusers'] as const) {
      for (const half of ['decoder', 'encoder'] as const) {
        const implied = taeConfigFromWeights(shapesOf({ variant, key_layout }, half), half);
        const { latentChannels, midblockGn } = TAE_VARIANTS[variant];
        assert.deepEqual(
          implied,
          { variant: expectedVariant[variant], latent_channels: latentChannels, use_midblock_gn: midblockGn, key_layout },
          `${variant} ${key_layout} ${half}`,
        );
      }
    }
  }
});

test('configFromWeights: a shape no variant has loads as a custom TAE; a missing half is named', () => {
  const raw = { latent_channels: 8, use_midblock_gn: true, decoder_block_out_channels: [8, 8, 8, 8], num_decoder_blocks: [1, 1, 1, 1] };
  assert.deepEqual(taeConfigFromWeights(weightsOf(raw, 'decoder'), 'decoder'), {
    latent_channels: 8,
    use_midblock_gn: true,
    key_layout: 'madebyollin',
  });
  const mismatch = (pattern: RegExp) => (e: unknown) =>
    e instanceof DistVaeError && e.code === 'WEIGHTS_MISMATCH' && pattern.test(e.message);
  const decoderOnly = shapesOf({ variant: 'taesd', key_layout: 'diffusers' }, 'decoder');
  assert.throws(() => taeConfigFromWeights(decoderOnly, 'encoder'), mismatch(/no TAE encoder: encoder\.layers\.0\.weight is missing/));
  assert.throws(() => taeConfigFromWeights(new Map(), 'decoder'), mismatch(/no TAE decoder: 1\.weight is missing \(keys: none/));
});

test('a diffusers AutoencoderTiny folder loads both halves from its one file, each ignoring the other', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-tae-folder-'));
  const raw = TAE_SMALL;
  writeFileSync(join(dir, 'config.json'), JSON.stringify(raw));
  const decoder = weightsOf({ ...raw, key_layout: 'diffusers' }, 'decoder', 4);
  const encoder = weightsOf({ ...raw, key_layout: 'diffusers' }, 'encoder', 5);
  writeSafetensors(join(dir, 'diffusion_pytorch_model.safetensors'), new Map([...decoder, ...encoder]));

  const vae = await loadVae(dir, { threads: 1 });
  const enc = await loadEncoder(dir, { threads: 1 });
  const synthetic = await loadVae(
    { family: 'tae', config: { ...raw, key_layout: 'diffusers' }, weights: 'synthetic', seed: 4 },
    { threads: 1 },
  );
  try {
    assert.equal(vae.config.fields['key_layout'], 'diffusers');
    assert.equal(vae.config.className, 'taesd');
    const image = seededTensor([1, 3, 16, 24], 3, 0.5);
    const latents = await enc.encode(image);
    assert.deepEqual(latents.dims, [1, 4, 2, 3]);
    const out = await vae.decode(latents);
    assert.deepEqual(out.data, (await synthetic.decode(latents)).data, 'the folder decoder holds the decoder.* weights');
    assert.ok(
      out.data.some((v) => v < 0 || v > 1),
      'raw output, not clamped (docs/design.md §9)',
    );
  } finally {
    await Promise.all([vae.dispose(), enc.dispose(), synthetic.dispose()]);
  }
});
