// Single-file VAEs in the original layouts against diffusers' own conversion: the committed
// goldens (testing/goldens/ldm-vae-keys.json from diffusers' convert_vae_state_dict and
// convert_ldm_vae_checkpoint; flux2-vae-keys.json from scripts/convert_flux2_to_diffusers.py's
// converter; made by scripts/goldens/*.py) list which original key becomes which diffusers key
// with which shape; our mapping must give exactly that, and a file written in each layout (SD
// full checkpoint, FLUX.1 ae, Flux.2 ae) must load without --family as the same weights.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { cli } from '../cli/testing/in-process.js';
import { loadEncoder } from '../encode/encoder.js';
import { klEncoderParams } from '../families/autoencoder-kl/encoder-graph.js';
import { klDecoderParams } from '../families/autoencoder-kl/graph.js';
import { getFamily } from '../families/registry.js';
import { encodePng } from '../io/image.js';
import { assertSameBits } from '../ranks/testing/assertions.js';
import { seededTensor, type Tensor } from '../tensor.js';
import type { TensorEntry } from '../weights/reader.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { looksLikeTae, singleFileConfig, singleFileLayout, singleFileToDiffusers } from './single-file.js';
import { readVaeSource } from './vae-source.js';

interface GoldenKey {
  ldm: string;
  ldmShape: number[];
  diffusers: string;
  shape: number[];
}
interface Flux2GoldenKey {
  original: string;
  originalShape: number[];
  diffusers: string;
  shape: number[];
}
const golden = JSON.parse(readFileSync(new URL('./testing/goldens/ldm-vae-keys.json', import.meta.url), 'utf8')) as {
  provenance: { config: Record<string, unknown> };
  keys: GoldenKey[];
};
const flux2Golden = JSON.parse(readFileSync(new URL('./testing/goldens/flux2-vae-keys.json', import.meta.url), 'utf8')) as {
  provenance: { config: Record<string, unknown>; other_original_keys: string[] };
  keys: Flux2GoldenKey[];
};
const dir = mkdtempSync(join(tmpdir(), 'distvae-ldm-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function ldmEntries(strip: string): Map<string, TensorEntry> {
  const entries = new Map<string, TensorEntry>(
    golden.keys.map((k) => [k.ldm.slice(strip.length), { name: k.ldm.slice(strip.length), dtype: 'F32', dims: k.ldmShape }]),
  );
  // A key of a full checkpoint the VAE does not own.
  entries.set('model.diffusion_model.input_blocks.0.0.weight', { name: 'unet', dtype: 'F16', dims: [320, 4, 3, 3] });
  return entries;
}

test('ldm keys map to the diffusers keys and shapes convert_ldm_vae_checkpoint gives, with or without first_stage_model.', () => {
  for (const strip of ['', 'first_stage_model.']) {
    const entries = ldmEntries(strip);
    const layout = singleFileLayout(entries)!;
    assert.deepEqual(layout, { kind: 'ldm', prefix: strip === '' ? 'first_stage_model.' : '', family: 'autoencoder-kl' });
    const mapped = singleFileToDiffusers(entries, layout);
    assert.deepEqual(
      [...mapped].map(([name, e]) => [name, e.name, e.dims]).sort(),
      golden.keys.map((k) => [k.diffusers, k.ldm.slice(strip.length), k.shape]).sort(),
    );
  }
  assert.equal(singleFileLayout(new Map([['decoder.up_blocks.0.resnets.0.conv1.weight', 0]])), null);
});

/**
 * The config the shapes of the test checkpoints say: widths [8, 8, 16, 16], two layers per
 * block, diffusers' default 32 norm groups, both quant convs or neither, and what a test adds.
 */
function shapedConfig(className: string, latentChannels: number, quantConvs: boolean, extra: Record<string, unknown> = {}) {
  return {
    _class_name: className,
    latent_channels: latentChannels,
    block_out_channels: [8, 8, 16, 16],
    layers_per_block: 2,
    norm_num_groups: 32,
    use_quant_conv: quantConvs,
    use_post_quant_conv: quantConvs,
    ...extra,
  };
}

test('the architecture is read from the shapes: SD layout with quant convs; FLUX.1 (16 channels, none) without', () => {
  const entries = ldmEntries('');
  entries.set('first_stage_model.quant_conv.weight', { name: 'q', dtype: 'F32', dims: [8, 8, 1, 1] });
  const layout = singleFileLayout(entries)!;
  assert.deepEqual(singleFileConfig(entries, layout), shapedConfig('AutoencoderKL', 4, true, { scaling_factor: 0.18215 }));
  const flux = new Map(
    [...entries]
      .filter(([k]) => !k.includes('quant_conv'))
      .map(([k, e]) => [k, k.endsWith('decoder.conv_in.weight') ? { ...e, dims: [16, 16, 3, 3] } : e]),
  );
  assert.deepEqual(singleFileConfig(flux, layout), shapedConfig('AutoencoderKL', 16, false));
});

/** The golden's config, and diffusers-named synthetic weights of both halves for it. */
function ldmModel(): { config: Record<string, unknown>; decoder: Map<string, Tensor>; encoder: Map<string, Tensor> } {
  const config = { ...golden.provenance.config, _class_name: 'AutoencoderKL' };
  const resolved = getFamily('autoencoder-kl').resolveConfig(config);
  return { config, decoder: syntheticWeights(klDecoderParams(resolved), 7), encoder: syntheticWeights(klEncoderParams(resolved), 8) };
}

/** A full checkpoint in the ldm layout (every golden key under first_stage_model., and a UNet key) holding `model`'s weights. */
function writeLdmCheckpoint(model: ReturnType<typeof ldmModel>): string {
  const file = new Map<string, Tensor>();
  for (const k of golden.keys) {
    const t = model.decoder.get(k.diffusers) ?? model.encoder.get(k.diffusers)!;
    file.set(k.ldm, { dims: k.ldmShape, data: t.data });
  }
  file.set('model.diffusion_model.input_blocks.0.0.weight', { dims: [2], data: new Float32Array(2) });
  const path = join(dir, 'sd-checkpoint.safetensors');
  writeSafetensors(path, file);
  return path;
}

test('a full checkpoint in the ldm layout loads without --family as the same decoder and encoder weights', async () => {
  const model = ldmModel();
  const path = writeLdmCheckpoint(model);
  for (const [part, weights] of [
    ['decoder', model.decoder],
    ['encoder', model.encoder],
  ] as const) {
    const read = await readVaeSource({ path, config: { norm_num_groups: 4 } }, part);
    assert.equal(read.family.name, 'autoencoder-kl');
    assert.deepEqual(read.config.fields['block_out_channels'], [8, 8, 16, 16]);
    assert.deepEqual([...read.weights.keys()].sort(), [...weights.keys()].sort(), part);
    for (const [name, t] of weights) {
      const got = read.weights.get(name)!;
      assert.deepEqual({ dims: got.dims, data: got.data }, { dims: t.dims, data: t.data }, name);
    }
  }
  await assert.rejects(readVaeSource({ path }), { code: 'CONFIG_INVALID' }); // 8 channels do not split into the published 32 groups
});

test('distvae encode --vae on an ldm checkpoint gives bitwise the latents of the same weights in the diffusers layout', async () => {
  const model = ldmModel();
  const ldm = writeLdmCheckpoint(model);
  // The same weights under diffusers' names, with the config beside them: a diffusers folder.
  const folder = join(dir, 'diffusers-vae');
  mkdirSync(folder, { recursive: true });
  writeSafetensors(join(folder, 'diffusion_pytorch_model.safetensors'), new Map([...model.decoder, ...model.encoder]));
  writeFileSync(join(folder, 'config.json'), JSON.stringify(model.config));
  const image = seededTensor([1, 3, 32, 40], 3);
  const fromLdm = await loadEncoder({ path: ldm, config: { norm_num_groups: 4 } }, { threads: 1 });
  const fromDiffusers = await loadEncoder(folder, { threads: 1 });
  try {
    assertSameBits(await fromLdm.encode(image), await fromDiffusers.encode(image), 'ldm against diffusers layout');
  } finally {
    await fromLdm.dispose();
    await fromDiffusers.dispose();
  }
  // Through the CLI, as a user runs it: the config says only what the shapes cannot (the group count).
  const configPath = join(dir, 'groups.json');
  writeFileSync(configPath, JSON.stringify({ norm_num_groups: 4 }));
  const png = join(dir, 'in.png');
  writeFileSync(
    png,
    encodePng(
      seededTensor([3, 32, 40], 4).data.map((v) => (v + 1) / 2),
      3,
      32,
      40,
    ),
  );
  const [outLdm, outDiffusers] = [join(dir, 'ldm.npy'), join(dir, 'diffusers.npy')];
  const a = await cli('encode', '--vae', ldm, '--config', configPath, '--image', png, '--out', outLdm, '--threads', '1');
  assert.equal(a.code, 0, a.stderr);
  const b = await cli('encode', '--vae', folder, '--image', png, '--out', outDiffusers, '--threads', '1');
  assert.equal(b.code, 0, b.stderr);
  assert.deepEqual(readFileSync(outLdm), readFileSync(outDiffusers));
});

/** Flux.2's ae keys as the golden lists them, plus the encoder's and bn.num_batches_tracked, which the decoder does not own. */
function flux2Entries(): Map<string, TensorEntry> {
  const entries = new Map<string, TensorEntry>(
    flux2Golden.keys.map((k) => [k.original, { name: k.original, dtype: 'F32', dims: k.originalShape }]),
  );
  entries.set('encoder.conv_in.weight', { name: 'encoder.conv_in.weight', dtype: 'F32', dims: [8, 3, 3, 3] });
  entries.set('encoder.quant_conv.weight', { name: 'encoder.quant_conv.weight', dtype: 'F32', dims: [16, 16, 1, 1] });
  for (const k of flux2Golden.provenance.other_original_keys) entries.set(k, { name: k, dtype: 'I64', dims: [] });
  return entries;
}

test("Flux.2 ae keys map to the diffusers keys and shapes of diffusers' convert_flux2_vae_checkpoint_to_diffusers", () => {
  const entries = flux2Entries();
  const layout = singleFileLayout(entries)!;
  assert.deepEqual(layout, { kind: 'flux2', prefix: '', family: 'flux2' });
  assert.deepEqual(
    [...singleFileToDiffusers(entries, layout)].map(([name, e]) => [name, e.name, e.dims]).sort(),
    flux2Golden.keys.map((k) => [k.diffusers, k.original, k.shape]).sort(),
  );
  // The golden's layout really differs from the ldm one where the key says so.
  assert.ok(flux2Golden.keys.some((k) => k.original === 'decoder.post_quant_conv.weight' && k.diffusers === 'post_quant_conv.weight'));
});

test('the Flux.2 architecture is read from the shapes: widths, layers, quant convs, the latent packing of bn', () => {
  const entries = flux2Entries();
  const layout = singleFileLayout(entries)!;
  assert.deepEqual(singleFileConfig(entries, layout), shapedConfig('AutoencoderKLFlux2', 8, true, { patch_size: [2, 2] }));
  // Without bn the packing is unknown (the family's default); without the decoder's post-quant conv bn alone identifies Flux.2.
  const noBn = new Map([...entries].filter(([k]) => !k.startsWith('bn.')));
  assert.equal('patch_size' in singleFileConfig(noBn, singleFileLayout(noBn)!), false);
  const bnOnly = new Map([...entries].filter(([k]) => !k.startsWith('decoder.post_quant_conv.')));
  assert.deepEqual(singleFileLayout(bnOnly), { kind: 'flux2', prefix: '', family: 'flux2' });
  assert.equal(singleFileConfig(bnOnly, singleFileLayout(bnOnly)!)['use_post_quant_conv'], false);
});

/** Writes `weights` (diffusers names) under the original names `pairs` give, attention weights as the 1×1 convs the originals store. */
function writeOriginal(
  path: string,
  weights: ReadonlyMap<string, Tensor>,
  pairs: readonly { original: string; diffusers: string; originalShape: number[] }[],
  extra: ReadonlyMap<string, Tensor>,
): void {
  const file = new Map<string, Tensor>(extra);
  for (const k of pairs) {
    const t = weights.get(k.diffusers);
    if (!t) continue;
    file.set(k.original, { dims: k.originalShape.length === 4 && t.dims.length === 2 ? [...t.dims, 1, 1] : [...t.dims], data: t.data });
  }
  writeSafetensors(path, file);
}

async function assertSameWeights(
  path: string,
  family: string,
  weights: ReadonlyMap<string, Tensor>,
  config: Record<string, unknown>,
): Promise<void> {
  const read = await readVaeSource({ path, config });
  assert.equal(read.family.name, family);
  assert.deepEqual([...read.weights.keys()].sort(), [...weights.keys()].sort());
  for (const [name, t] of weights) {
    const got = read.weights.get(name)!;
    assert.deepEqual({ dims: got.dims, data: got.data }, { dims: t.dims, data: t.data }, name);
  }
}

test("a Flux.2 ae.safetensors loads without --family as AutoencoderKLFlux2's decoder weights", async () => {
  const config = { ...flux2Golden.provenance.config, _class_name: 'AutoencoderKLFlux2' };
  const resolved = getFamily('flux2').resolveConfig(config);
  const weights = syntheticWeights(klDecoderParams(resolved), 11);
  const path = join(dir, 'flux2-ae.safetensors');
  const extra = new Map<string, Tensor>([
    ['encoder.conv_in.weight', { dims: [8, 3, 3, 3], data: new Float32Array(216) }],
    ['encoder.quant_conv.weight', { dims: [16, 16, 1, 1], data: new Float32Array(256) }],
    ['bn.running_mean', { dims: [32], data: new Float32Array(32) }],
    ['bn.running_var', { dims: [32], data: new Float32Array(32).fill(1) }],
  ]);
  writeOriginal(path, weights, flux2Golden.keys, extra);
  await assertSameWeights(path, 'flux2', weights, { norm_num_groups: 4 });
  const read = await readVaeSource({ path, config: { norm_num_groups: 4 } });
  assert.equal(read.config.className, 'AutoencoderKLFlux2');
  assert.deepEqual(
    [read.config.fields['latent_channels'], read.config.fields['patch_size'], read.config.fields['use_post_quant_conv']],
    [8, [2, 2], true],
  );
});

test('a FLUX.1 ae.safetensors (ldm keys, no prefix, 16 channels, no quant convs) loads without --family as AutoencoderKL', async () => {
  const config = {
    ...golden.provenance.config,
    latent_channels: 16,
    use_quant_conv: false,
    use_post_quant_conv: false,
    _class_name: 'AutoencoderKL',
  };
  const weights = syntheticWeights(klDecoderParams(getFamily('autoencoder-kl').resolveConfig(config)), 13);
  assert.equal(weights.has('post_quant_conv.weight'), false);
  const path = join(dir, 'flux1-ae.safetensors');
  const pairs = golden.keys.map((k) => ({
    original: k.ldm.slice('first_stage_model.'.length),
    diffusers: k.diffusers,
    originalShape: k.ldmShape,
  }));
  writeOriginal(path, weights, pairs, new Map([['encoder.conv_in.weight', { dims: [8, 3, 3, 3], data: new Float32Array(216) }]]));
  await assertSameWeights(path, 'autoencoder-kl', weights, { norm_num_groups: 4 });
  const read = await readVaeSource({ path, config: { norm_num_groups: 4 } });
  assert.deepEqual(
    [read.config.fields['latent_channels'], read.config.fields['use_post_quant_conv'], read.config.fields['scaling_factor']],
    [16, false, null],
  ); // SD3's and FLUX.1's factors differ: none guessed
});

test('TAE checkpoints are recognised by their keys (madebyollin layer indices, diffusers decoder.layers.); others are not', () => {
  assert.equal(looksLikeTae(['1.weight', '3.conv.0.weight', '19.bias']), true);
  assert.equal(looksLikeTae(['decoder.layers.1.weight']), true);
  assert.equal(looksLikeTae(['1.weight', 'decoder.conv_in.weight']), false);
  assert.equal(looksLikeTae([]), false);
});
