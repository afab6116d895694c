// The AutoencoderKL / Flux.2 decoder graph against the independent float64 reference decoder
// (testing/reference.ts, written from the architecture notes), its parameter list against
// diffusers' key names and shapes, and the graph's initializers against that list.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { assertRelativeL2 } from '../../graph/testing/compare.js';
import { assertModelIo } from '../../graph/testing/model-io.js';
import { seededTensor } from '../../tensor.js';
import { runGraph } from '../../graph/testing/run-graph.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { buildKlDecoderGraph, klDecoderParams, renameLegacyAttentionKeys } from './graph.js';
import { attentionBytes, attentionChunksFor, checkAttentionMemory } from './runtime.js';
import { channelParts, UPSAMPLER_FORMS } from '../blocks/blocks.js';
import { getFamily } from '../registry.js';
import { referenceKlDecode, type KlReferenceArchitecture } from './testing/reference.js';
import type { RawConfig } from '../types.js';

interface Case {
  label: string;
  family: 'autoencoder-kl' | 'flux2';
  config: RawConfig;
  /** The same architecture as the reference reads it, written out by hand from the config. */
  arch: KlReferenceArchitecture;
  latent: number[];
}

const CASES: Case[] = [
  {
    label: 'tiny AutoencoderKL with attention and post_quant_conv, batch 2, odd latent',
    family: 'autoencoder-kl',
    config: { block_out_channels: [16, 32], layers_per_block: 1, norm_num_groups: 8, latent_channels: 4, sample_size: 32 },
    arch: { blockOut: [16, 32], layersPerBlock: 1, groups: 8, attention: true, postQuantConv: true },
    latent: [2, 4, 7, 9],
  },
  {
    label: 'three levels, layers_per_block 2, no attention, no post_quant_conv, 16 latent channels, 2 outputs',
    family: 'autoencoder-kl',
    config: {
      block_out_channels: [8, 16, 16],
      layers_per_block: 2,
      norm_num_groups: 4,
      latent_channels: 16,
      out_channels: 2,
      use_post_quant_conv: false,
      mid_block_add_attention: false,
    },
    arch: { blockOut: [8, 16, 16], layersPerBlock: 2, groups: 4, attention: false, postQuantConv: false },
    latent: [1, 16, 5, 6],
  },
  {
    label: 'tiny Flux.2 with its own decoder_block_out_channels',
    family: 'flux2',
    config: {
      block_out_channels: [16, 32],
      decoder_block_out_channels: [8, 24],
      layers_per_block: 1,
      norm_num_groups: 8,
      latent_channels: 32,
      sample_size: 32,
    },
    arch: { blockOut: [8, 24], layersPerBlock: 1, groups: 8, attention: true, postQuantConv: true },
    latent: [1, 32, 6, 7],
  },
];

for (const c of CASES) {
  test(`graph equals the float64 reference decoder: ${c.label}`, async () => {
    const config = getFamily(c.family).resolveConfig(c.config);
    const weights = syntheticWeights(klDecoderParams(config), 7);
    const z = seededTensor(c.latent, 11);
    const { sample } = await runGraph(buildKlDecoderGraph(config, weights), { latent: z });
    const expected = referenceKlDecode(c.arch, weights, z);
    const r = 2 ** (c.arch.blockOut.length - 1);
    assert.deepEqual(expected.dims, [c.latent[0], config.geometry.outChannels, c.latent[2]! * r, c.latent[3]! * r]);
    assertRelativeL2(sample!, expected, c.label);
  });

  test(`graph initializers are exactly the parameter list: ${c.label}`, () => {
    const config = getFamily(c.family).resolveConfig(c.config);
    const specs = klDecoderParams(config);
    assertModelIo(buildKlDecoderGraph(config, syntheticWeights(specs, 1)).toModel(), specs, { inputs: ['latent'], outputs: ['sample'] });
  });
}

for (const upsampler of UPSAMPLER_FORMS) {
  test(`every upsampler spelling computes diffusers' nearest-2× + 3×3 conv: ${upsampler}`, async () => {
    const c = CASES[1]!;
    const config = getFamily(c.family).resolveConfig(c.config);
    const weights = syntheticWeights(klDecoderParams(config), 8);
    const z = seededTensor([2, 16, 5, 4], 12);
    const { sample } = await runGraph(buildKlDecoderGraph(config, weights, { upsampler }), { latent: z });
    assertRelativeL2(sample!, referenceKlDecode(c.arch, weights, z), upsampler);
  });
}

for (const upsampler of UPSAMPLER_FORMS) {
  for (const c of [CASES[0]!, CASES[1]!]) {
    test(`channel parts (the tile runner's spelling) compute the same decoder: ${upsampler}, ${c.label}`, async () => {
      const config = getFamily(c.family).resolveConfig(c.config);
      const weights = syntheticWeights(klDecoderParams(config), 9);
      const z = seededTensor(c.latent, 13);
      const graph = buildKlDecoderGraph(config, weights, { upsampler, channelParts: true });
      // The narrowing resnet reads two slices: two GroupNorms where the plain graph has one.
      assert.ok(graph.toModel().graph!.node!.some((n) => n.name!.includes('resnets.0.norm1.part1/')));
      const { sample } = await runGraph(graph, { latent: z });
      assertRelativeL2(sample!, referenceKlDecode(c.arch, weights, z), `${upsampler} parts`);
    });
  }
}

test('channel parts: cout slices of cin when groups stay whole, else one part', () => {
  assert.equal(channelParts(256, 128, 32), 2); // SD's last up block
  assert.equal(channelParts(512, 256, 32), 2);
  assert.equal(channelParts(512, 512, 32), 1); // not narrowing
  assert.equal(channelParts(128, 256, 32), 1); // widening
  assert.equal(channelParts(24, 8, 8), 1); // 3 channels per group do not divide 8
  assert.equal(channelParts(24, 8, 12), 3);
  assert.equal(channelParts(24, 16, 8), 1); // 16 does not divide 24
});

test('the SD 1.x decoder lists diffusers keys and shapes (140 tensors incl. post_quant_conv)', () => {
  const specs = new Map(klDecoderParams(getFamily('autoencoder-kl').resolveConfig(undefined)).map((s) => [s.name, s.dims]));
  assert.equal(specs.size, 140);
  assert.deepEqual(specs.get('post_quant_conv.weight'), [4, 4, 1, 1]);
  assert.deepEqual(specs.get('decoder.conv_in.weight'), [512, 4, 3, 3]);
  assert.deepEqual(specs.get('decoder.mid_block.attentions.0.to_out.0.weight'), [512, 512]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.resnets.0.conv1.weight'), [256, 512, 3, 3]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.resnets.0.conv_shortcut.weight'), [256, 512, 1, 1]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.upsamplers.0.conv.weight'), [256, 256, 3, 3]);
  assert.equal(specs.has('decoder.up_blocks.3.upsamplers.0.conv.weight'), false);
  assert.equal(specs.has('decoder.up_blocks.0.resnets.0.conv_shortcut.weight'), false);
  assert.deepEqual(specs.get('decoder.conv_norm_out.weight'), [128]);
  assert.deepEqual(specs.get('decoder.conv_out.weight'), [3, 128, 3, 3]);
  const flux = new Map(klDecoderParams(getFamily('flux2').resolveConfig(undefined)).map((s) => [s.name, s.dims]));
  assert.equal(flux.size, 140);
  assert.deepEqual(flux.get('post_quant_conv.weight'), [32, 32, 1, 1]);
  assert.deepEqual(flux.get('decoder.conv_in.weight'), [512, 32, 3, 3]);
});

test('legacy mid-block attention names are renamed as diffusers does on load; both spellings keep the legacy key', () => {
  const p = 'decoder.mid_block.attentions.0';
  const renamed = renameLegacyAttentionKeys(
    new Map([
      [`${p}.query.weight`, 1],
      [`${p}.proj_attn.bias`, 2],
      [`${p}.group_norm.weight`, 3],
      ['decoder.conv_in.weight', 4],
    ]),
  );
  assert.deepEqual(
    [...renamed],
    [
      [`${p}.to_q.weight`, 1],
      [`${p}.to_out.0.bias`, 2],
      [`${p}.group_norm.weight`, 3],
      ['decoder.conv_in.weight', 4],
    ],
  );
  const both = renameLegacyAttentionKeys(
    new Map([
      [`${p}.to_k.weight`, 1],
      [`${p}.key.weight`, 2],
    ]),
  );
  assert.deepEqual(
    [...both],
    [
      [`${p}.to_k.weight`, 1],
      [`${p}.key.weight`, 2],
    ],
  );
});

test('configs the decoder cannot build are refused with the field named', () => {
  const refusedFields = (family: 'autoencoder-kl' | 'flux2', config: RawConfig): string[] => {
    try {
      getFamily(family).resolveConfig(config);
    } catch (e) {
      assert.ok(e instanceof DistVaeError && e.code === 'CONFIG_INVALID', String(e));
      return e.reasons.map((r) => r.field);
    }
    return [];
  };
  assert.deepEqual(
    refusedFields('autoencoder-kl', { block_out_channels: [16, 32], norm_num_groups: 8, up_block_types: ['UpDecoderBlock2D'] }),
    ['up_block_types'],
  );
  assert.deepEqual(
    refusedFields('autoencoder-kl', {
      block_out_channels: [16, 32],
      norm_num_groups: 8,
      up_block_types: ['UpDecoderBlock2D', 'AttnUpDecoderBlock2D'],
    }),
    ['up_block_types'],
  );
  assert.deepEqual(refusedFields('flux2', { block_out_channels: [16, 32], decoder_block_out_channels: [16, 20], norm_num_groups: 8 }), [
    'decoder_block_out_channels[1]',
  ]);
  assert.deepEqual(refusedFields('flux2', { block_out_channels: [16, 32], decoder_block_out_channels: [16, 24], norm_num_groups: 8 }), []);
});

test('attention cut into query chunks equals the unchunked graph, for any chunk count up to the positions', async () => {
  const c = CASES[0]!;
  const config = getFamily(c.family).resolveConfig(c.config);
  const weights = syntheticWeights(klDecoderParams(config), 7);
  // 7 × 9 = 63 positions: 4 chunks of 15, 16, 16, 16; 15 chunks of 4 or 5 (a Split-18 with
  // num_outputs 15 would cut 12 of 5 and fail on the 3 rows left); one position each.
  const z = seededTensor(c.latent, 11);
  const whole = (await runGraph(buildKlDecoderGraph(config, weights), { latent: z })).sample!;
  for (const chunks of [4, 15, 63]) {
    const chunked = (await runGraph(buildKlDecoderGraph(config, weights, { attentionChunks: chunks }), { latent: z })).sample!;
    let max = 0;
    for (let i = 0; i < whole.data.length; i++) max = Math.max(max, Math.abs(whole.data[i]! - chunked.data[i]!));
    assert.ok(max <= 1e-5, `${chunks} chunks differ from the whole attention by ${max}`);
  }
});

test('attention chunks: one for a default-plan tile, powers of two bounding each chunk above', () => {
  assert.equal(attentionChunksFor([1, 4, 64, 64]), 1);
  assert.equal(attentionChunksFor([1, 4, 128, 128]), 8);
  assert.equal(attentionChunksFor([1, 4, 256, 256]), 128);
  assert.equal(attentionChunksFor([1, 4, 2, 2], 1), 4, 'never more chunks than queries');
  for (const dims of [
    [1, 4, 128, 128],
    [2, 4, 96, 100],
    [1, 4, 256, 256],
  ]) {
    const k = attentionChunksFor(dims);
    assert.ok(attentionBytes(dims, k) <= 256 * 2 ** 20 && attentionBytes(dims, k / 2) > 256 * 2 ** 20, `${dims}: ${k}`);
  }
});

test('a whole decode whose attention cannot fit in memory is refused before any work, with the numbers', () => {
  assert.equal(attentionBytes([1, 4, 256, 256]), 2 * 65536 ** 2 * 4);
  assert.equal(attentionBytes([1, 4, 256, 256], 128), 2 * 512 * 65536 * 4);
  assert.doesNotThrow(() => checkAttentionMemory([1, 4, 256, 256], 24 * 2 ** 30, 128));
  assert.doesNotThrow(() => checkAttentionMemory([1, 4, 64, 64], 24 * 2 ** 30));
  assert.throws(
    () => checkAttentionMemory([1, 4, 256, 256], 24 * 2 ** 30),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'UNSUPPORTED' &&
      e.reasons[0]!.code === 'ATTENTION_MEMORY' &&
      /256×256 latent.*32\.0 GiB.*24\.0 GiB.*tiled/.test(e.message),
  );
});
