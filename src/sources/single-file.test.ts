// Single-file ldm-layout VAEs against diffusers' own conversion: the committed golden
// (testing/goldens/ldm-vae-keys.json, made by scripts/goldens/ldm-vae-keys.py from diffusers'
// convert_vae_state_dict and convert_ldm_vae_checkpoint) lists which ldm key becomes which
// diffusers key with which shape; our mapping must give exactly that, and a full checkpoint
// written in that layout must load as the same weights.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { klDecoderParams } from '../families/autoencoder-kl.graph.js';
import { getFamily } from '../families/registry.js';
import type { Tensor } from '../tensor.js';
import type { TensorEntry } from '../weights/reader.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { ldmToDiffusers, ldmVaeConfig, ldmVaePrefix, looksLikeTae } from './single-file.js';
import { readVaeSource } from './vae-source.js';

interface GoldenKey {
  ldm: string;
  ldmShape: number[];
  diffusers: string;
  shape: number[];
}
const golden = JSON.parse(readFileSync(new URL('./testing/goldens/ldm-vae-keys.json', import.meta.url), 'utf8')) as { provenance: { config: Record<string, unknown> }; keys: GoldenKey[] };
const dir = mkdtempSync(join(tmpdir(), 'distvae-ldm-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function ldmEntries(strip: string): Map<string, TensorEntry> {
  const entries = new Map<string, TensorEntry>(golden.keys.map((k) => [k.ldm.slice(strip.length), { name: k.ldm.slice(strip.length), dtype: 'F32', dims: k.ldmShape }]));
  // Keys of a full checkpoint the VAE decoder does not own.
  entries.set(`${'first_stage_model.'.slice(strip.length)}encoder.conv_in.weight`, { name: 'enc', dtype: 'F32', dims: [8, 3, 3, 3] });
  entries.set('model.diffusion_model.input_blocks.0.0.weight', { name: 'unet', dtype: 'F16', dims: [320, 4, 3, 3] });
  return entries;
}

test('ldm keys map to the diffusers keys and shapes convert_ldm_vae_checkpoint gives, with or without first_stage_model.', () => {
  for (const strip of ['', 'first_stage_model.']) {
    const entries = ldmEntries(strip);
    const prefix = ldmVaePrefix(entries)!;
    assert.equal(prefix, strip === '' ? 'first_stage_model.' : '');
    const mapped = ldmToDiffusers(entries, prefix);
    assert.deepEqual(
      [...mapped].map(([name, e]) => [name, e.name, e.dims]).sort(),
      golden.keys.map((k) => [k.diffusers, k.ldm.slice(strip.length), k.shape]).sort(),
    );
  }
  assert.equal(ldmVaePrefix(new Map([['decoder.up_blocks.0.resnets.0.conv1.weight', 0]])), null);
});

test('the architecture is read from the shapes: SD layout with quant convs; FLUX.1 (16 channels, none) without', () => {
  const entries = ldmEntries('');
  entries.set('first_stage_model.quant_conv.weight', { name: 'q', dtype: 'F32', dims: [8, 8, 1, 1] });
  assert.deepEqual(ldmVaeConfig(entries, 'first_stage_model.'), {
    _class_name: 'AutoencoderKL', latent_channels: 4, block_out_channels: [8, 8, 16, 16], layers_per_block: 2, norm_num_groups: 32, use_quant_conv: true, use_post_quant_conv: true, scaling_factor: 0.18215,
  });
  const flux = new Map([...entries].filter(([k]) => !k.includes('quant_conv')).map(([k, e]) => [k, k.endsWith('decoder.conv_in.weight') ? { ...e, dims: [16, 16, 3, 3] } : e]));
  assert.deepEqual(ldmVaeConfig(flux, 'first_stage_model.'), {
    _class_name: 'AutoencoderKL', latent_channels: 16, block_out_channels: [8, 8, 16, 16], layers_per_block: 2, norm_num_groups: 32, use_quant_conv: false, use_post_quant_conv: false,
  });
});

test('a full checkpoint in the ldm layout loads without --family as the same decoder weights', async () => {
  const config = { ...golden.provenance.config, _class_name: 'AutoencoderKL' };
  const weights = syntheticWeights(klDecoderParams(getFamily('autoencoder-kl').resolveConfig(config)), 7);
  const file = new Map<string, Tensor>();
  for (const k of golden.keys) {
    const t = weights.get(k.diffusers)!;
    file.set(k.ldm, { dims: k.ldmShape, data: t.data });
  }
  file.set('first_stage_model.encoder.conv_in.weight', { dims: [8, 3, 3, 3], data: new Float32Array(216) });
  file.set('model.diffusion_model.input_blocks.0.0.weight', { dims: [2], data: new Float32Array(2) });
  const path = join(dir, 'sd-checkpoint.safetensors');
  writeSafetensors(path, file);
  const read = await readVaeSource({ path, config: { norm_num_groups: 4 } });
  assert.equal(read.family.name, 'autoencoder-kl');
  assert.deepEqual(read.config.fields['block_out_channels'], [8, 8, 16, 16]);
  assert.deepEqual([...read.weights.keys()].sort(), [...weights.keys()].sort());
  for (const [name, t] of weights) {
    const got = read.weights.get(name)!;
    assert.deepEqual({ dims: got.dims, data: got.data }, { dims: t.dims, data: t.data }, name);
  }
  await assert.rejects(readVaeSource({ path }), { code: 'CONFIG_INVALID' }); // 8 channels do not split into the published 32 groups
});

test('TAE checkpoints are recognised by their keys (madebyollin layer indices, diffusers decoder.layers.); others are not', () => {
  assert.equal(looksLikeTae(['1.weight', '3.conv.0.weight', '19.bias']), true);
  assert.equal(looksLikeTae(['decoder.layers.1.weight']), true);
  assert.equal(looksLikeTae(['1.weight', 'decoder.conv_in.weight']), false);
  assert.equal(looksLikeTae([]), false);
});
