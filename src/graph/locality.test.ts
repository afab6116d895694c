// Locality analysis: halos computed from graphs of known receptive field, checked two ways — the
// arithmetic written out by hand, and onnxruntime itself (a crop of the input with the analysed
// halo reproduces the whole graph's output there; one latent row less does not). Nonlocal ops
// are named, with or without sync-region metadata, and the metadata survives serialisation.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { architectureModel } from '../decode/decoder-model.js';
import { resolveFamily, runtimeOf } from '../families/registry.js';
import type { RawConfig } from '../families/types.js';
import type { Tensor } from '../tensor.js';
import { GraphBuilder, type Value } from './builder.js';
import { analyzeLocality } from './locality.js';
import { decodeModel } from './onnx-proto.js';
import { formatRatio } from './ratio.js';
import { difference } from './testing/compare.js';
import { seededTensor } from '../tensor.js';
import * as ref from './testing/reference-ops.js';
import { runGraph } from './testing/run-graph.js';

function familyModel(family: string, config: RawConfig) {
  const spec = resolveFamily(family, config);
  return architectureModel(spec, runtimeOf(spec), spec.resolveConfig(config));
}

/** x (1, 2, h, w) → conv3×3 → ReLU → nearest 2× → conv5×5 → dilated conv3×3 (d=2) → conv1×1. */
function localChain(): GraphBuilder {
  const g = new GraphBuilder('chain');
  const p = (name: string, dims: number[], seed: number) => g.param(name, seededTensor(dims, seed, 0.4));
  let x: Value = g.input('x', [1, 2, 'h', 'w']);
  x = g.relu(g.conv(x, p('c1.weight', [3, 2, 3, 3], 1), p('c1.bias', [3], 2), { pads: 1 }));
  x = g.resizeNearest(x, [1, 1, 2, 2]);
  x = g.conv(x, p('c2.weight', [3, 3, 5, 5], 3), undefined, { pads: 2 });
  x = g.conv(x, p('c3.weight', [3, 3, 3, 3], 4), undefined, { pads: 2, dilations: 2 });
  g.output('y', g.conv(x, p('c4.weight', [2, 3, 1, 1], 5), undefined));
  return g;
}

/** Rows/cols [r0, r1) × [c0, c1) of a (1, C, H, W) tensor. */
function crop(t: Tensor, r0: number, r1: number, c0: number, c1: number): Tensor {
  return ref.slice(ref.slice(t, 2, r0, r1), 3, c0, c1) as unknown as Tensor;
}

/** Decodes the latent crop around [a, b) × [a, b) with `halo` and compares with the whole output there. */
async function cropError(g: GraphBuilder, x: Tensor, a: number, b: number, halo: number, scale: number): Promise<number> {
  const whole = (await runGraph(g, { x })).y!;
  const [h, w] = x.dims.slice(2) as [number, number];
  const r0 = Math.max(0, a - halo);
  const c0 = Math.max(0, a - halo);
  const part = crop(x, r0, Math.min(h, b + halo), c0, Math.min(w, b + halo));
  const out = (await runGraph(g, { x: { dims: part.dims, data: Float32Array.from(part.data) } })).y!;
  const mine = crop(out, (a - r0) * scale, (b - r0) * scale, (a - c0) * scale, (b - c0) * scale);
  return difference(mine, crop(whole, a * scale, b * scale, a * scale, b * scale)).maxAbs;
}

test('a chain of local ops: halo from kernels, dilation and the upsampler, confirmed by onnxruntime', async () => {
  const g = localChain();
  const report = analyzeLocality(g.toModel());
  // Depth at a cut edge: conv3×3 → 1 row at 1x; 2× → 2 rows at 2x; conv5×5 +2 → 4; dilated +2 → 6;
  // 1×1 +0 → 6 rows at 2x = 3 latent rows.
  assert.equal(report.stages.length, 1);
  assert.deepEqual(report.stages[0]!.outputs[0]!.depth, { top: 6, bottom: 6, left: 6, right: 6 });
  assert.deepEqual(report.exactTiling, { possible: true, halo: { rows: 3, cols: 3 } });
  assert.equal(formatRatio(report.outputScale.rows), '2');
  assert.deepEqual(
    report.stages[0]!.growth.map((s) => s.op),
    ['Conv', 'Resize', 'Conv', 'Conv'],
  );
  assert.deepEqual(report.nonlocal, []);
  const x = seededTensor([1, 2, 16, 16], 9);
  assert.ok((await cropError(g, x, 5, 10, 3, 2)) < 1e-5, 'the analysed halo reproduces the whole output');
  assert.ok((await cropError(g, x, 5, 10, 2, 2)) > 1e-3, 'one latent row less does not');
});

test('asymmetric pads and a stride-2 conv: the halo is in whole rows of every value', async () => {
  const g = new GraphBuilder('strided');
  let x: Value = g.input('x', [1, 1, 'h', 'w']);
  // pads [top, left, bottom, right] = [1, 1, 0, 0] with stride 2 keeps h/2 rows for even h.
  x = g.conv(x, g.param('down.weight', seededTensor([2, 1, 3, 3], 1)), undefined, { pads: [1, 1, 0, 0], strides: 2 });
  x = g.conv(x, g.param('mid.weight', seededTensor([2, 2, 3, 3], 2)), undefined, { pads: [2, 2, 0, 0] });
  g.output('y', x);
  const report = analyzeLocality(g.toModel());
  const stage = report.stages[0]!;
  // Down: top ⌈(0+1)/2⌉ = 1, bottom ⌈(0+2−1−2+1)/2⌉ = 0; mid (pads 2/0): top 3, bottom 0.
  assert.deepEqual(stage.outputs[0]!.depth, { top: 3, bottom: 0, left: 3, right: 0 });
  assert.equal(formatRatio(stage.outputs[0]!.scale.rows), '1/2');
  // 3 rows at ½ = 6 latent rows, a whole number of rows at both resolutions.
  assert.deepEqual(report.exactTiling, { possible: true, halo: { rows: 6, cols: 6 } });
  const x0 = seededTensor([1, 1, 24, 24], 3);
  const whole = (await runGraph(g, { x: x0 })).y!;
  const part = crop(x0, 4, 16, 4, 16);
  const out = (await runGraph(g, { x: { dims: part.dims, data: Float32Array.from(part.data) } })).y!;
  // Latent rows [10, 16) → output rows [5, 8); the crop starts at latent row 4 (output row 2).
  assert.ok(difference(crop(out, 3, 6, 3, 6), crop(whole, 5, 8, 5, 8)).maxAbs < 1e-5);
});

test('nonlocal ops are named: GroupNorm and attention as sync regions, unmarked ones by node', () => {
  const g = new GraphBuilder('nonlocal');
  const x = g.input('x', [1, 4, 'h', 'w']);
  const norm = g.scope('norm');
  const n = norm.groupNorm(x, norm.param('weight', seededTensor([4], 1)), norm.param('bias', seededTensor([4], 2)), {
    groups: 2,
    epsilon: 1e-6,
  });
  const y = g.scope('stats').reduceMean(n, [2, 3]);
  g.output('y', g.add(n, y));
  const report = analyzeLocality(decodeModel(g.toModelBytes()));
  assert.deepEqual(
    report.regions.map((r) => [r.kind, r.name]),
    [['group-norm', 'norm']],
  );
  assert.deepEqual(
    report.nonlocal.map((o) => [o.kind, o.op, o.node]),
    [
      ['sync-region', 'GroupNorm', 'norm'],
      ['nonlocal', 'ReduceMean', 'stats/ReduceMean'],
    ],
  );
  assert.equal(report.exactTiling.possible, false);
  assert.equal(report.sharding.possible, false);
  assert.match(report.sharding.blockers.join(), /stats\/ReduceMean \(ReduceMean: ReduceMean over positions\)/);

  const kl = analyzeLocality(familyModel('autoencoder-kl', { block_out_channels: [16, 32], norm_num_groups: 8, layers_per_block: 1 }));
  assert.ok(kl.nonlocal.some((o) => o.op === 'Attention' && o.node === 'decoder.mid_block.attentions.0'));
  // Two GroupNorms per resnet (2 in the mid block, 2 per up block), the attention's, conv_norm_out.
  assert.equal(kl.regions.filter((r) => r.kind === 'group-norm').length, 2 * 2 + 2 * 2 * 2 + 1 + 1);
  assert.equal(kl.sharding.possible, true);
  if (kl.exactTiling.possible) assert.fail('exact tiling of a graph with GroupNorm');
  assert.match(kl.exactTiling.blockers[0]!, /decoder\.mid_block\.resnets\.0\.norm1 \(GroupNorm/);
});

test('without sync metadata the same ops are found from the nodes themselves', () => {
  const cases: [string, (g: GraphBuilder, x: Value) => Value, RegExp][] = [
    [
      'instance norm',
      (g, x) => g.instanceNorm(x, g.param('s', seededTensor([4], 1)), g.param('b', seededTensor([4], 2)), { epsilon: 1e-5 }),
      /InstanceNormalization: statistics over every position/,
    ],
    ['softmax over positions', (g, x) => g.softmax(x, 3), /Softmax over positions/],
    ['a position-dependent operand', (g, x) => g.add(x, g.param('pos', seededTensor([1, 4, 8, 8], 3))), /varies along the spatial axis 2/],
    ['padding of rows not read by a Conv', (g, x) => g.pad(x, [0, 0, 1, 0, 0, 0, 1, 0]), /only a Conv may read the padding/],
    ['a size-changing conv', (g, x) => g.conv(x, g.param('w', seededTensor([4, 4, 3, 3], 4)), undefined), /change the spatial size/],
  ];
  for (const [label, body, reason] of cases) {
    const g = new GraphBuilder(label);
    g.output('y', body(g, g.input('x', [1, 4, 'h', 'w'])));
    const report = analyzeLocality(g.toModel());
    assert.equal(report.exactTiling.possible, false, label);
    assert.equal(report.nonlocal.length, 1, label);
    assert.match(report.nonlocal[0]!.reason, reason, label);
  }
});

test('family graphs: TAESD is local with a 19-row halo; TAEF2 stages cut at its three pool GroupNorms', () => {
  const taesd = analyzeLocality(familyModel('tae', { variant: 'taesd' }));
  // Depth from the layer list: conv + 3 blocks × 3 convs = 10 rows at 1x; each of the three
  // stages doubles it and adds its conv and blocks (1 + 9, 1 + 9, then 1 + 3 + the last conv):
  // 10 → 20 + 10 = 30 → 60 + 10 = 70 → 140 + 5 = 145 rows at 8x, ⌈145/8⌉ = 19 latent rows.
  assert.deepEqual(taesd.stages[0]!.outputs[0]!.depth.top, 145);
  assert.deepEqual(taesd.exactTiling, { possible: true, halo: { rows: 19, cols: 19 } });

  const taef2 = analyzeLocality(familyModel('tae', { variant: 'taef2' }));
  assert.deepEqual(
    taef2.regions.map((r) => r.name),
    ['3.pool.1', '4.pool.1', '5.pool.1'],
  );
  assert.deepEqual(
    taef2.stages.map((s) => (s.halo ? formatRatio(s.halo.rows) : null)),
    ['1', '3', '3', '12'],
  );
  assert.equal(taef2.exactTiling.possible, false);
  assert.equal(taef2.sharding.possible, true);
});

test('video graphs (B, C, F, H, W): an edge-padded valid conv deepens the wrong band as a zero-padded one; channel-to-space is an upsampling', () => {
  // Edge Pad of 1 frame in front and 1 row/column each side, then a valid 3-D conv: 1 row of depth per side, like pads 1.
  const g = new GraphBuilder('video');
  const x = g.input('x', [1, 2, 'f', 'h', 'w']);
  const w = g.param('w', seededTensor([8, 2, 2, 3, 3], 1));
  const conv = g.conv(g.pad(x, [0, 0, 1, 1, 1, 0, 0, 0, 1, 1], { mode: 'edge' }), w, undefined);
  // (B, 4·2, F, H, W) → (B, 2, F, 2H, 2W): channels read as (r2, r3, C), C fastest, through computed shapes.
  const shape = g.shape(conv);
  const batch = g.slice(shape, { starts: [0], ends: [1] });
  const fhw = g.slice(shape, { starts: [2], ends: [5] });
  const grouped = g.reshape(conv, g.concat([batch, g.int64Constant([1, 2, 2, 2]), fhw], 0));
  const interleaved = g.transpose(grouped, [0, 4, 5, 1, 6, 2, 7, 3]);
  g.output('y', g.reshape(interleaved, g.concat([batch, g.int64Constant([2]), g.mul(fhw, g.int64Constant([1, 2, 2]))], 0)));
  const report = analyzeLocality(g.toModel());
  assert.deepEqual(report.nonlocal, []);
  const out = report.stages[0]!.outputs[0]!;
  // 1 row deep at 1x, doubled by the interleave: 2 rows at 2x, one latent row of halo.
  assert.deepEqual(out.depth, { top: 2, bottom: 2, left: 2, right: 2 });
  assert.equal(formatRatio(out.scale.rows), '2');
  assert.equal(formatRatio(report.stages[0]!.halo!.rows), '1');
  const y = report.values.get('y')!;
  assert.deepEqual([y.rank, y.frameAxis, y.rowAxis, y.colAxis], [5, 2, 3, 4]);
  // One frame in front and a 2-frame kernel: F + 1 − 1 frames.
  assert.deepEqual(y.frames, { a: 1, b: 0 });

  // Rows merged under an outer constant axis move positions: unanalysed, named.
  const bad = new GraphBuilder('bad');
  const v = bad.input('x', [1, 4, 'f', 'h', 'w']);
  const s = bad.shape(v);
  const b0 = bad.slice(s, { starts: [0], ends: [1] });
  const rest = bad.slice(s, { starts: [2], ends: [5] });
  const split = bad.reshape(v, bad.concat([b0, bad.int64Constant([2, 2]), rest], 0));
  const moved = bad.transpose(split, [0, 2, 3, 1, 4, 5]); // (B, 2, F, 2, H, W): the 2 lands outside the rows
  bad.output(
    'y',
    bad.reshape(
      moved,
      bad.concat(
        [
          b0,
          bad.int64Constant([2]),
          bad.slice(s, { starts: [2], ends: [3] }),
          bad.mul(bad.slice(s, { starts: [3], ends: [5] }), bad.int64Constant([2, 1])),
        ],
        0,
      ),
    ),
  );
  const blocked = analyzeLocality(bad.toModel());
  assert.equal(blocked.sharding.possible, false);
  assert.match(blocked.sharding.blockers.join(), /Reshape/);
});

test('family graphs: HunyuanVideo 1.5 is row-shardable — RMS norms per voxel, one frame-causal attention, halos of 3 and 11 latent rows', () => {
  const config = {
    _class_name: 'AutoencoderKLHunyuanVideo15',
    block_out_channels: [16, 32, 64],
    latent_channels: 32,
    layers_per_block: 1,
    spatial_compression_ratio: 4,
    temporal_compression_ratio: 4,
  };
  const report = analyzeLocality(familyModel('hunyuan-video-1.5', config));
  assert.deepEqual(report.sharding, { possible: true, blockers: [] });
  assert.deepEqual(
    report.regions.map((r) => [r.kind, r.description]),
    [['attention', 'every query attends to every position of its own and earlier frames']],
  );
  // conv_in and the first resnet's two convs: 3 rows; after the attention, 1 + 2 + the up blocks' convs at 1x, 2x, 4x.
  assert.deepEqual(
    report.stages.map((s) => formatRatio(s.halo!.rows)),
    ['3', '11'],
  );
  assert.equal(formatRatio(report.outputScale.rows), '4');
  // 1 + 4(F − 1) output frames.
  assert.deepEqual(report.values.get(report.output)!.frames, { a: 4, b: -3 });
});
