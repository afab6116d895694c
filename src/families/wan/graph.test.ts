// The Wan / Qwen-Image graphs, run frame by frame and segment by segment by the tile runner,
// against the independent float64 reference decoder (testing/reference.ts: one causal pass
// over all frames, written from the architecture notes); the parameter lists against diffusers'
// keys and shapes; and what each graph takes and returns.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { assertClose } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { getFamily } from '../registry.js';
import { referenceWanDecode, type WanReferenceConfig } from './testing/reference.js';
import type { RawConfig } from '../types.js';
import {
  QWEN_IMAGE_TINY,
  WAN22_PUBLISHED,
  WAN21_TINY,
  WAN21_TINY_REFERENCE,
  WAN22_TINY,
  WAN22_TINY_REFERENCE,
} from '../testing/video-configs.js';
import { buildWanGraph, wanDecoderParams, wanSegmentCount } from './graph.js';
import { qwenImageRuntime, wanRuntime } from './runtime.js';

interface Case {
  label: string;
  family: 'wan' | 'qwen-image';
  config: RawConfig;
  /** The same decoder as the reference reads it, written out by hand from the config. */
  reference: WanReferenceConfig;
  latent: number[];
}

const WAN21_TWO_TEMPORAL: RawConfig = {
  base_dim: 4,
  dim_mult: [1, 2, 2],
  num_res_blocks: 1,
  temperal_downsample: [true, true],
  z_dim: 4,
  scale_factor_spatial: 4,
  scale_factor_temporal: 4,
};

/** The decoders the cases run: family, config, and the same decoder as the reference reads it. */
const WAN21_TWO_T = {
  family: 'wan',
  config: WAN21_TWO_TEMPORAL,
  reference: { ...WAN21_TINY_REFERENCE, dimMult: [1, 2, 2], temperalDownsample: [true, true] },
} as const;
const WAN21 = { family: 'wan', config: WAN21_TINY, reference: WAN21_TINY_REFERENCE } as const;
const WAN22 = { family: 'wan', config: WAN22_TINY, reference: WAN22_TINY_REFERENCE } as const;
const QWEN = { family: 'qwen-image', config: QWEN_IMAGE_TINY, reference: WAN21_TINY_REFERENCE } as const;

const CASES: Case[] = [
  {
    label: 'Wan 2.1 with two temporal upsamples (three segments; 1, 2 and 4 frames per latent frame), 3 latent frames',
    ...WAN21_TWO_T,
    latent: [1, 4, 3, 3, 4],
  },
  { label: 'Wan 2.1, batch 2 (the history restarts per element), 2 latent frames', ...WAN21, latent: [2, 4, 2, 4, 5] },
  { label: 'Wan 2.2: residual up blocks with DupUp3D, 12 raw channels (patch 2), 3 latent frames', ...WAN22, latent: [1, 8, 3, 2, 3] },
  { label: 'Qwen-Image image: one latent frame (the only-step graph)', ...QWEN, latent: [1, 16, 1, 5, 6] },
  { label: 'Qwen-Image video: 2 latent frames', ...QWEN, latent: [1, 16, 2, 3, 4] },
];

const runtimeOf = (family: Case['family']) => (family === 'wan' ? wanRuntime : qwenImageRuntime);

for (const c of CASES) {
  test(`frame-by-frame graphs equal the float64 one-pass reference: ${c.label}`, async () => {
    const config = getFamily(c.family).resolveConfig(c.config);
    const weights = syntheticWeights(wanDecoderParams(config), 7);
    const z = seededTensor(c.latent, 11);
    const runner = await runtimeOf(c.family).createTileRunner(config, weights, { intraOpThreads: 1 });
    try {
      const raw = await runner.decode(z);
      const expected = referenceWanDecode(c.reference, weights, z);
      const [b, , f, h, w] = c.latent as [number, number, number, number, number];
      const g = config.geometry;
      const r = g.spatialRatio / g.patchSize;
      assert.deepEqual(expected.dims, [b, g.outChannels * g.patchSize ** 2, 1 + (f - 1) * g.temporalRatio, h * r, w * r]);
      assertClose(raw, expected, c.label);
    } finally {
      await runner.dispose();
    }
  });
}

test('the runner reports an abort between frames', async () => {
  const config = getFamily('wan').resolveConfig(WAN21_TINY);
  const runner = await wanRuntime.createTileRunner(config, syntheticWeights(wanDecoderParams(config), 1), { intraOpThreads: 1 });
  try {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await assert.rejects(runner.decode(seededTensor([1, 4, 2, 2, 2], 1), controller.signal), { code: 'ABORTED' });
  } finally {
    await runner.dispose();
  }
});

// ---- parameter lists and step graphs ---------------------------------------------------------

const dimsOf = (family: 'wan' | 'qwen-image', config: RawConfig | undefined) =>
  new Map(wanDecoderParams(getFamily(family).resolveConfig(config)).map((s) => [s.name, s.dims]));

test('the published Wan 2.1 decoder lists diffusers keys and shapes (108 tensors incl. post_quant_conv)', () => {
  const specs = dimsOf('wan', undefined);
  assert.equal(specs.size, 108);
  assert.deepEqual(specs.get('post_quant_conv.weight'), [16, 16, 1, 1, 1]);
  assert.deepEqual(specs.get('decoder.conv_in.weight'), [384, 16, 3, 3, 3]);
  assert.deepEqual(specs.get('decoder.mid_block.attentions.0.norm.gamma'), [384, 1, 1]);
  assert.deepEqual(specs.get('decoder.mid_block.attentions.0.to_qkv.weight'), [1152, 384, 1, 1]);
  assert.deepEqual(specs.get('decoder.up_blocks.1.resnets.0.norm1.gamma'), [192, 1, 1, 1]);
  assert.deepEqual(specs.get('decoder.up_blocks.1.resnets.0.conv_shortcut.weight'), [384, 192, 1, 1, 1]);
  assert.deepEqual(specs.get('decoder.up_blocks.0.upsamplers.0.time_conv.weight'), [768, 384, 3, 1, 1]);
  assert.deepEqual(specs.get('decoder.up_blocks.1.upsamplers.0.resample.1.weight'), [192, 384, 3, 3]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.upsamplers.0.resample.1.weight'), [96, 192, 3, 3]);
  assert.equal(specs.has('decoder.up_blocks.2.upsamplers.0.time_conv.weight'), false);
  assert.equal(specs.has('decoder.up_blocks.3.upsamplers.0.resample.1.weight'), false);
  assert.deepEqual(specs.get('decoder.conv_out.weight'), [3, 96, 3, 3, 3]);
  assert.deepEqual(dimsOf('qwen-image', undefined), specs, 'Qwen-Image has the Wan 2.1 decoder');
});

test('the published Wan 2.2 decoder lists diffusers keys and shapes (110 tensors)', () => {
  const specs = dimsOf('wan', WAN22_PUBLISHED);
  assert.equal(specs.size, 110);
  assert.deepEqual(specs.get('decoder.conv_in.weight'), [1024, 48, 3, 3, 3]);
  assert.deepEqual(specs.get('decoder.up_blocks.0.upsampler.resample.1.weight'), [1024, 1024, 3, 3]);
  assert.deepEqual(specs.get('decoder.up_blocks.0.upsampler.time_conv.weight'), [2048, 1024, 3, 1, 1]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.resnets.0.conv_shortcut.weight'), [512, 1024, 1, 1, 1]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.upsampler.resample.1.weight'), [512, 512, 3, 3]);
  assert.equal(specs.has('decoder.up_blocks.2.upsampler.time_conv.weight'), false);
  assert.deepEqual(specs.get('decoder.norm_out.gamma'), [256, 1, 1, 1]);
  assert.deepEqual(specs.get('decoder.conv_out.weight'), [12, 256, 3, 3, 3]);
});

test('graphs: the segments cut after the temporal upsampler, with their history inputs and outputs per kind of frame', () => {
  const config = getFamily('wan').resolveConfig(WAN21_TINY);
  const specs = wanDecoderParams(config);
  const weights = syntheticWeights(specs, 1);
  assert.equal(wanSegmentCount(config), 2);
  const io = (segment: number, step: 'only' | 'first' | 'next') => {
    const graph = buildWanGraph(config, weights, segment, step).toModel().graph!;
    return {
      inputs: graph.input!.map((i) => i.name!),
      outputs: graph.output!.map((o) => o.name!),
      initializers: new Set(graph.initializer!.map((t) => t.name!)),
    };
  };
  const all = new Set(specs.map((s) => s.name));
  const timeConv = [...all].filter((n) => n.includes('time_conv'));
  for (const segment of [0, 1]) {
    const only = io(segment, 'only');
    assert.deepEqual(only.inputs, ['x']);
    assert.deepEqual(only.outputs, ['y']);
    assert.deepEqual(only.initializers, io(segment, 'first').initializers);
  }

  const histories = (outputs: string[]) => outputs.filter((n) => n.startsWith('present:')).map((n) => n.slice('present:'.length));
  const first0 = io(0, 'first');
  const next0 = io(0, 'next');
  const first1 = io(1, 'first');
  const next1 = io(1, 'next');
  // Segment 0: conv_in, the mid block's 4 convs, up block 0's 4 convs and its time conv; segment 1: up block 1's 4 convs and conv_out.
  assert.deepEqual(histories(first0.outputs), [
    'decoder.conv_in',
    ...['0', '1'].flatMap((r) => [`decoder.mid_block.resnets.${r}.conv1`, `decoder.mid_block.resnets.${r}.conv2`]),
    ...['0', '1'].flatMap((r) => [`decoder.up_blocks.0.resnets.${r}.conv1`, `decoder.up_blocks.0.resnets.${r}.conv2`]),
    'decoder.up_blocks.0.upsamplers.0.time_conv',
  ]);
  assert.deepEqual(histories(first1.outputs), [
    ...['0', '1'].flatMap((r) => [`decoder.up_blocks.1.resnets.${r}.conv1`, `decoder.up_blocks.1.resnets.${r}.conv2`]),
    'decoder.conv_out',
  ]);
  for (const [first, next] of [
    [first0, next0],
    [first1, next1],
  ] as const) {
    assert.deepEqual(first.inputs, ['x']);
    assert.deepEqual(new Set(next.outputs), new Set(first.outputs));
    assert.deepEqual(new Set(next.inputs), new Set(['x', ...histories(first.outputs).flatMap((k) => [`past0:${k}`, `past1:${k}`])]));
  }
  assert.deepEqual(new Set([...next0.initializers, ...next1.initializers]), all);
  assert.equal(next0.initializers.size + next1.initializers.size, all.size, 'segments own disjoint weights');
  assert.deepEqual(
    first0.initializers,
    new Set([...next0.initializers].filter((n) => !timeConv.includes(n))),
    'a first frame never runs a time conv',
  );
  assert.deepEqual(first1.initializers, next1.initializers);
});

test('a Wan 2.2 config whose DupUp3D cannot repeat channels evenly is refused, as diffusers asserts', () => {
  assert.throws(
    () =>
      getFamily('wan').resolveConfig({ ...WAN22_TINY, dim_mult: [1, 1, 3], temperal_downsample: [false, false], scale_factor_temporal: 1 }),
    (e: unknown) => e instanceof DistVaeError && e.code === 'CONFIG_INVALID' && e.reasons.some((r) => r.field === 'dim_mult'),
  );
});
