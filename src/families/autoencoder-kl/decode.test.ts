// End to end through the public path: `loadVae` (synthetic weights or a diffusers folder),
// a plan from the planner, `vae.decode` — against an independent float64 transcription of
// diffusers' tiling loop running the float64 reference decoder per tile; and strict binding
// of folders: full checkpoints load as is, legacy attention names load, wrong ones fail.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { diffusersTiledDecode, diffusersTiling, type DiffusersTiling } from '../../decode/testing/diffusers-tiled-decode.js';
import { DistVaeError } from '../../errors.js';
import { assertRelativeL2 } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import type { Tensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { klDecoderParams } from './graph.js';
import { getFamily } from '../registry.js';
import { referenceKlDecode, type KlReferenceArchitecture } from './testing/reference.js';
import type { RawConfig } from '../types.js';
import { decodeOnce, diffusersFolderWriter } from '../testing/diffusers-folder.js';

const SEED = 5;
const TINY: RawConfig = { block_out_channels: [16, 32], layers_per_block: 1, norm_num_groups: 8, latent_channels: 4, sample_size: 16 };
const TINY_ARCH: KlReferenceArchitecture = { blockOut: [16, 32], layersPerBlock: 1, groups: 8, attention: true, postQuantConv: true };
const DEEP: RawConfig = {
  block_out_channels: [8, 8, 16],
  layers_per_block: 1,
  norm_num_groups: 4,
  latent_channels: 4,
  use_post_quant_conv: false,
};
const DEEP_ARCH: KlReferenceArchitecture = { blockOut: [8, 8, 16], layersPerBlock: 1, groups: 4, attention: true, postQuantConv: false };

interface TiledCase {
  label: string;
  config: RawConfig;
  arch: KlReferenceArchitecture;
  latent: number[];
  /** The plan in output pixels (height × width). */
  window: [number, number];
  overlap: [number, number];
  /** For strips: the sample shape the shape plan is made for (its untiled axes get overlap 0). */
  sample?: [number, number];
  /** diffusers' loop variables for the same tiling. */
  diffusers: DiffusersTiling;
  tiles: number;
}

/**
 * A case on the TINY decoder (DEEP where `model` says so): the latent, the plan in output pixels
 * (window, overlap; for strips the sample shape), diffusers' loop variables and the tile count.
 */
function tiled(
  latent: number[],
  plan: { window: [number, number]; overlap: [number, number]; sample?: [number, number] },
  diffusers: DiffusersTiling,
  tiles: number,
  model: { config: RawConfig; arch: KlReferenceArchitecture } = { config: TINY, arch: TINY_ARCH },
): Omit<TiledCase, 'label'> {
  return { ...model, latent, ...plan, diffusers, tiles };
}

/** diffusers' loop variables given per axis ([height, width]), for tilings its one-number form cannot say. */
function loopVars(
  window: [number, number],
  stride: [number, number],
  blend: [number, number],
  rowLimit: [number, number],
): DiffusersTiling {
  const axes = ([height, width]: [number, number]) => ({ height, width });
  return { latentWindow: axes(window), latentStride: axes(stride), blendExtent: axes(blend), rowLimit: axes(rowLimit) };
}

const TILED_BY_LABEL: [string, Omit<TiledCase, 'label'>][] = [
  [
    'diffusers default form (window 16 px, factor 0.25) on an odd latent with a 1-row edge tile',
    tiled([1, 4, 13, 21], { window: [16, 16], overlap: [4, 4] }, diffusersTiling(16, 2, 0.25), 3 * 4),
  ],
  [
    'batch 2, rectangular window 16×24 px with overlaps 4×8 px',
    tiled([2, 4, 11, 17], { window: [16, 24], overlap: [4, 8] }, loopVars([8, 12], [6, 8], [4, 8], [12, 16]), 2 * 3),
  ],
  [
    'a strip: the height fits one window (overlap 0 there), the width is tiled',
    tiled([1, 4, 6, 30], { window: [16, 16], overlap: [0, 4], sample: [12, 60] }, loopVars([8, 8], [8, 6], [0, 4], [16, 12]), 5),
  ],
  [
    'overlap beyond half the window (factor 0.75): blends reach already-blended rows',
    tiled([1, 4, 9, 10], { window: [16, 16], overlap: [12, 12] }, diffusersTiling(16, 2, 0.75), 5 * 5),
  ],
  [
    'a single tile: the latent fits the window, so diffusers decodes it whole',
    tiled([1, 4, 8, 7], { window: [16, 16], overlap: [4, 4] }, diffusersTiling(16, 2, 0.25), 1),
  ],
  [
    'three levels (ratio 4), no post_quant_conv, window 32 px factor 0.25',
    tiled([1, 4, 10, 15], { window: [32, 32], overlap: [8, 8] }, diffusersTiling(32, 4, 0.25), 2 * 3, { config: DEEP, arch: DEEP_ARCH }),
  ],
];
const TILED: TiledCase[] = TILED_BY_LABEL.map(([label, c]) => ({ label, ...c }));

for (const c of TILED) {
  test(`tiled vae.decode equals diffusers' loop over the float64 reference: ${c.label}`, async () => {
    const vae = await loadVae({ family: 'autoencoder-kl', config: c.config, weights: 'synthetic', seed: SEED }, { threads: 1 });
    try {
      const options = c.sample ? { sampleShape: { height: c.sample[0], width: c.sample[1] } } : {};
      setTiling(vae, tileShapePlan(vae, c.window[0], c.window[1], options)!);
      setTiling(vae, tileOverlapPlan(vae, c.overlap[0], c.overlap[1], options)!);
      const z = seededTensor(c.latent, 21);
      let tiles = 0;
      const out = await vae.decode(z, { onProgress: (e) => (tiles = e.tilesTotal) });
      assert.equal(tiles, c.tiles);
      const weights = syntheticWeights(klDecoderParams(vae.config), SEED);
      const expected = diffusersTiledDecode(z, (tile) => referenceKlDecode(c.arch, weights, tile), c.diffusers);
      assertRelativeL2(out, expected, c.label);
    } finally {
      await vae.dispose();
    }
  });
}

test("the family's default plan on a loaded VAE is diffusers' own tiling (sample_size window, factor 0.25)", async () => {
  const vae = await loadVae({ family: 'autoencoder-kl', config: TINY, weights: 'synthetic', seed: SEED }, { threads: 1 });
  try {
    setTiling(vae);
    const z = seededTensor([1, 4, 13, 21], 21);
    const weights = syntheticWeights(klDecoderParams(vae.config), SEED);
    const expected = diffusersTiledDecode(z, (tile) => referenceKlDecode(TINY_ARCH, weights, tile), diffusersTiling(16, 2, 0.25));
    assertRelativeL2(await vae.decode(z), expected, 'default plan');
  } finally {
    await vae.dispose();
  }
});

// ---- loading diffusers folders ---------------------------------------------------------------

const diffusersFolder = diffusersFolderWriter('distvae-kl-');

const tinyWeights = (family: 'autoencoder-kl' | 'flux2', config: RawConfig, seed = SEED) =>
  syntheticWeights(klDecoderParams(getFamily(family).resolveConfig(config)), seed);
const small = (dims: number[]): Tensor => seededTensor(dims, 3);

test('a full AutoencoderKL folder (encoder.*, quant_conv.* too) loads as is and decodes like the same weights given directly', async () => {
  const weights = new Map([
    ...tinyWeights('autoencoder-kl', TINY),
    ['encoder.conv_in.weight', small([16, 3, 3, 3])],
    ['quant_conv.weight', small([8, 8, 1, 1])],
    ['quant_conv.bias', small([8])],
  ]);
  const dir = diffusersFolder({ _class_name: 'AutoencoderKL', ...TINY }, weights);
  const z = seededTensor([1, 4, 5, 6], 2);
  const fromFolder = await decodeOnce(dir, z);
  const synthetic = await decodeOnce({ family: 'autoencoder-kl', config: TINY, weights: 'synthetic', seed: SEED }, z);
  assert.deepEqual(fromFolder, synthetic);
});

test('a Flux.2 folder with its pipeline-only bn.* statistics loads as is', async () => {
  const config = { block_out_channels: [16, 32], layers_per_block: 1, norm_num_groups: 8, latent_channels: 32, sample_size: 16 };
  const weights = new Map([
    ...tinyWeights('flux2', config),
    ['bn.running_mean', small([128])],
    ['bn.running_var', small([128])],
    ['bn.num_batches_tracked', small([1])],
  ]);
  const dir = diffusersFolder({ _class_name: 'AutoencoderKLFlux2', ...config }, weights);
  const z = seededTensor([1, 32, 4, 5], 2);
  const out = await decodeOnce(dir, z);
  const weightsOnly = tinyWeights('flux2', config);
  assertRelativeL2(out, referenceKlDecode({ ...TINY_ARCH }, weightsOnly, z), 'flux2 folder');
});

test('legacy attention key names (query/key/value/proj_attn) load and decode identically', async () => {
  const legacy = new Map<string, Tensor>();
  for (const [key, t] of tinyWeights('autoencoder-kl', TINY)) {
    legacy.set(
      key
        .replace(/\.to_q\./, '.query.')
        .replace(/\.to_k\./, '.key.')
        .replace(/\.to_v\./, '.value.')
        .replace(/\.to_out\.0\./, '.proj_attn.'),
      t,
    );
  }
  assert.ok(legacy.has('decoder.mid_block.attentions.0.proj_attn.weight'));
  const dir = diffusersFolder({ _class_name: 'AutoencoderKL', ...TINY }, legacy);
  const z = seededTensor([1, 4, 5, 6], 2);
  assert.deepEqual(
    await decodeOnce(dir, z),
    await decodeOnce({ family: 'autoencoder-kl', config: TINY, weights: 'synthetic', seed: SEED }, z),
  );
});

test('a checkpoint of another architecture is refused before any decode, naming each key and both shapes', async () => {
  const other = new Map(tinyWeights('autoencoder-kl', { ...TINY, latent_channels: 16 }));
  other.delete('decoder.conv_out.bias');
  other.set('decoder.extra.weight', small([2]));
  const dir = diffusersFolder({ _class_name: 'AutoencoderKL', ...TINY }, other);
  await assert.rejects(loadVae(dir), (e: unknown) => {
    assert.ok(e instanceof DistVaeError && e.code === 'WEIGHTS_MISMATCH', String(e));
    const byKey = new Map(e.reasons.map((r) => [r.field, r]));
    assert.equal(byKey.get('decoder.conv_in.weight')?.code, 'WEIGHT_SHAPE');
    assert.match(byKey.get('decoder.conv_in.weight')!.message, /\[32, 16, 3, 3\].*\[32, 4, 3, 3\]/);
    assert.equal(byKey.get('post_quant_conv.weight')?.code, 'WEIGHT_SHAPE');
    assert.equal(byKey.get('decoder.conv_out.bias')?.code, 'WEIGHT_MISSING');
    assert.equal(byKey.get('decoder.extra.weight')?.code, 'WEIGHT_UNEXPECTED');
    assert.equal(e.reasons.length, 5, e.reasons.map((r) => r.field).join(', '));
    return true;
  });
});
