// The HunyuanVideo decoder graph against the independent float64 reference decoder
// (testing/reference.ts, written from the architecture notes), its parameter
// list against diffusers' key names and shapes, and the graph's initializers against that list.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { assertRelativeL2 } from '../../graph/testing/compare.js';
import { assertModelIo } from '../../graph/testing/model-io.js';
import { seededTensor } from '../../tensor.js';
import { runGraph } from '../../graph/testing/run-graph.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { buildHunyuanVideoDecoderGraph, hunyuanVideoDecoderParams } from './graph.js';
import { getFamily } from '../registry.js';
import { referenceHunyuanVideoDecode, type HunyuanVideoReferenceArchitecture } from './testing/reference.js';
import type { RawConfig } from '../types.js';
import { HUNYUAN_VIDEO_TINY, HUNYUAN_VIDEO_TINY_REFERENCE } from '../testing/video-configs.js';

interface Case {
  label: string;
  config: RawConfig;
  /** The same architecture as the reference reads it, written out by hand from the config. */
  arch: HunyuanVideoReferenceArchitecture;
  latent: number[];
  /** Expected output dims. */
  out: number[];
}

const TINY: RawConfig = HUNYUAN_VIDEO_TINY;
const TINY_ARCH = HUNYUAN_VIDEO_TINY_REFERENCE;

const CASES: Case[] = [
  {
    label: 'three levels (ratio 4/4), 3 latent frames, odd size',
    config: TINY,
    arch: TINY_ARCH,
    latent: [1, 4, 3, 5, 6],
    out: [1, 3, 9, 20, 24],
  },
  { label: 'one latent frame decodes to one frame', config: TINY, arch: TINY_ARCH, latent: [1, 4, 1, 4, 3], out: [1, 3, 1, 16, 12] },
  {
    label: 'batch 2, no mid attention, layers_per_block 2, two output channels',
    config: { ...TINY, layers_per_block: 2, mid_block_add_attention: false, out_channels: 2 },
    arch: { ...TINY_ARCH, layersPerBlock: 2, attention: false },
    latent: [2, 4, 2, 3, 4],
    out: [2, 2, 5, 12, 16],
  },
  {
    label: 'four levels with the published pattern (ratio 8/4: block 0 space only, blocks 1-2 space and time)',
    config: {
      block_out_channels: [8, 8, 16, 16],
      layers_per_block: 1,
      norm_num_groups: 4,
      latent_channels: 4,
      spatial_compression_ratio: 8,
    },
    arch: { blockOut: [8, 8, 16, 16], layersPerBlock: 1, groups: 4, attention: true, spatialRatio: 8 },
    latent: [1, 4, 2, 3, 2],
    out: [1, 3, 5, 24, 16],
  },
];

for (const c of CASES) {
  test(`graph equals the float64 reference decoder: ${c.label}`, async () => {
    const config = getFamily('hunyuan-video').resolveConfig(c.config);
    const weights = syntheticWeights(hunyuanVideoDecoderParams(config), 7);
    const z = seededTensor(c.latent, 11);
    const { sample } = await runGraph(buildHunyuanVideoDecoderGraph(config, weights), { latent: z });
    const expected = referenceHunyuanVideoDecode(c.arch, weights, z);
    assert.deepEqual(expected.dims, c.out);
    assertRelativeL2(sample!, expected, c.label);
  });
}

test('graph initializers are exactly the parameter list; one input, one output', () => {
  const config = getFamily('hunyuan-video').resolveConfig(TINY);
  const specs = hunyuanVideoDecoderParams(config);
  const model = buildHunyuanVideoDecoderGraph(config, syntheticWeights(specs, 1)).toModel();
  assertModelIo(model, specs, { inputs: ['latent'], outputs: ['sample'] });
});

test("the published decoder lists diffusers' keys and shapes (138 decoder tensors + post_quant_conv)", () => {
  const specs = new Map(hunyuanVideoDecoderParams(getFamily('hunyuan-video').resolveConfig(undefined)).map((s) => [s.name, s.dims]));
  assert.equal(specs.size, 140);
  assert.deepEqual(specs.get('post_quant_conv.weight'), [16, 16, 1, 1, 1]);
  assert.deepEqual(specs.get('decoder.conv_in.conv.weight'), [512, 16, 3, 3, 3]);
  assert.deepEqual(specs.get('decoder.mid_block.attentions.0.to_q.weight'), [512, 512]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.resnets.0.conv_shortcut.conv.weight'), [256, 512, 1, 1, 1]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.upsamplers.0.conv.conv.weight'), [256, 256, 3, 3, 3]);
  assert.equal(specs.has('decoder.up_blocks.3.upsamplers.0.conv.conv.weight'), false);
  assert.deepEqual(specs.get('decoder.conv_out.conv.weight'), [3, 128, 3, 3, 3]);
});

test('configs the decoder cannot build are refused with the field named', () => {
  const refused = (raw: RawConfig, field: string) =>
    assert.throws(
      () => getFamily('hunyuan-video').resolveConfig(raw),
      (e: unknown) => e instanceof DistVaeError && e.code === 'CONFIG_INVALID' && e.reasons.some((r) => r.field === field),
    );
  refused({ ...TINY, up_block_types: ['HunyuanVideoUpBlock3D', 'UpDecoderBlock2D', 'HunyuanVideoUpBlock3D'] }, 'up_block_types');
  refused({ ...TINY, norm_num_groups: 3 }, 'norm_num_groups');
  refused({ ...TINY, temporal_compression_ratio: 2 }, 'temporal_compression_ratio');
});
