// Built graphs run by onnxruntime against the float64 references in testing/reference-ops.ts
// (relative tolerance 1e-5 of each tensor's magnitude), plus the builder's own validation.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { createSession } from '../runtime/session.js';
import type { Tensor } from '../tensor.js';
import { GraphBuilder, type Value } from './builder.js';
import { GROUP_NORM_FORMS } from './group-norm.js';
import { DataType } from './onnx-proto.js';
import { assertClose } from './testing/compare.js';
import { seededTensor } from '../tensor.js';
import * as ref from './testing/reference-ops.js';
import { runGraph } from './testing/run-graph.js';

/** Builds x -> body -> y on a graph with one input of x's shape and runs it. */
async function runOne(x: Tensor, body: (g: GraphBuilder, x: Value) => Value): Promise<Tensor> {
  const g = new GraphBuilder('test');
  const input = g.input('x', x.dims);
  g.output('y', body(g, input));
  return (await runGraph(g, { x })).y!;
}

test('Conv matches the reference: padding, stride, dilation, groups, 1x1 without bias, 3-D', async () => {
  const cases = [
    { x: [2, 3, 7, 9], w: [4, 3, 3, 3], bias: true, opts: { pads: 1 } },
    { x: [1, 3, 8, 7], w: [5, 3, 3, 3], bias: true, opts: { pads: [0, 1, 1, 0], strides: [2, 2] } },
    { x: [1, 4, 9, 9], w: [6, 2, 3, 3], bias: true, opts: { pads: 2, dilations: [2, 2], group: 2 } },
    { x: [1, 8, 5, 6], w: [3, 8, 1, 1], bias: false, opts: {} },
    { x: [1, 2, 4, 5, 6], w: [3, 2, 3, 3, 3], bias: true, opts: { pads: [2, 1, 1, 0, 1, 1] } },
  ];
  for (const [i, c] of cases.entries()) {
    const x = seededTensor(c.x, 10 + i);
    const w = seededTensor(c.w, 20 + i, 0.5);
    const b = seededTensor([c.w[0]!], 30 + i);
    const y = await runOne(x, (g, v) => g.conv(v, g.param(`w${i}`, w), c.bias ? g.param(`b${i}`, b) : undefined, c.opts));
    const expected = ref.conv(x, w, c.bias ? b : undefined, { ...c.opts, pads: c.opts.pads });
    assertClose(y, expected, `conv case ${i}`);
  }
});

test('ConvTranspose: stride 2 with a 2x2 ones kernel is nearest 2x; stride 1 is conv with the flipped kernel', async () => {
  const x = seededTensor([1, 1, 3, 4], 1);
  const ones = { dims: [1, 1, 2, 2], data: new Float32Array(4).fill(1) };
  const up = await runOne(x, (g, v) => g.convTranspose(v, g.param('w', ones), undefined, { strides: 2 }));
  assertClose(up, ref.upsampleNearest(x, [2, 2]), 'convTranspose stride 2');

  const w = seededTensor([2, 3, 3, 3], 2); // [Cin, Cout, kh, kw] for ConvTranspose
  const x2 = seededTensor([1, 2, 5, 5], 3);
  const flipped = new Float32Array(3 * 2 * 9); // [Cout, Cin, kh, kw], spatially reversed
  for (let ci = 0; ci < 2; ci++)
    for (let co = 0; co < 3; co++) for (let k = 0; k < 9; k++) flipped[(co * 2 + ci) * 9 + (8 - k)] = w.data[(ci * 3 + co) * 9 + k]!;
  const y = await runOne(x2, (g, v) => g.convTranspose(v, g.param('w', w), undefined, { pads: 1 }));
  assertClose(y, ref.conv(x2, { dims: [3, 2, 3, 3], data: flipped }, undefined, { pads: 1 }), 'convTranspose stride 1');
});

test('GroupNorm: every form matches PyTorch semantics on 4-D and 5-D inputs', async () => {
  for (const form of GROUP_NORM_FORMS) {
    for (const [dims, groups] of [
      [[2, 8, 5, 7], 4],
      [[1, 6, 3, 4, 5], 2],
      [[1, 4, 3, 3], 4],
    ] as const) {
      const x = seededTensor(dims, 7, 3);
      for (let i = 0; i < x.data.length; i++) x.data[i] = x.data[i]! + 2; // non-zero mean
      const c = dims[1];
      const gamma = seededTensor([c], 8);
      const beta = seededTensor([c], 9);
      const y = await runOne(x, (g, v) => {
        const s = g.scope('norm');
        return s.groupNorm(v, s.param('weight', gamma), s.param('bias', beta), { groups, epsilon: 1e-6, form });
      });
      assertClose(y, ref.groupNorm(x, groups, gamma, beta, 1e-6), `groupNorm ${form} ${dims.join('x')} G=${groups}`);
    }
  }
});

test('InstanceNormalization is GroupNorm with one channel per group; LayerNormalization normalises the last axis', async () => {
  const x = seededTensor([2, 3, 4, 5], 1, 2);
  const gamma = seededTensor([3], 2);
  const beta = seededTensor([3], 3);
  const y = await runOne(x, (g, v) => g.instanceNorm(v, g.param('g', gamma), g.param('b', beta), { epsilon: 1e-5 }));
  assertClose(y, ref.groupNorm(x, 3, gamma, beta, 1e-5), 'instanceNorm');

  const lnGamma = seededTensor([5], 4);
  const lnBeta = seededTensor([5], 5);
  const z = await runOne(x, (g, v) => g.layerNorm(v, g.param('g', lnGamma), g.param('b', lnBeta), { epsilon: 1e-5 }));
  assertClose(z, ref.layerNorm(x, lnGamma, lnBeta, 1e-5), 'layerNorm');
});

test('activations and elementwise arithmetic', async () => {
  const x = seededTensor([2, 3, 4], 11, 4);
  assertClose(await runOne(x, (g, v) => g.relu(v)), ref.relu(x), 'relu');
  assertClose(await runOne(x, (g, v) => g.sigmoid(v)), ref.sigmoid(x), 'sigmoid');
  assertClose(await runOne(x, (g, v) => g.tanh(v)), ref.tanh(x), 'tanh');
  assertClose(await runOne(x, (g, v) => g.silu(v)), ref.silu(x), 'silu');
  // tanh(x / 3) * 3, the TAE input clamp, spelled with scalar operands.
  assertClose(
    await runOne(x, (g, v) => g.mul(g.tanh(g.div(v, 3)), 3)),
    ref.map(x, (v) => Math.tanh(v / 3) * 3),
    'tanh clamp',
  );
  assertClose(
    await runOne(x, (g, v) => g.sqrt(g.add(g.pow(g.sub(v, 1), 2), 0.5))),
    ref.map(x, (v) => Math.sqrt((v - 1) ** 2 + 0.5)),
    'pow/sqrt',
  );
  assertClose(
    await runOne(x, (g, v) => g.clip(v, -1, 2)),
    ref.map(x, (v) => Math.min(2, Math.max(-1, v))),
    'clip',
  );
  assertClose(
    await runOne(x, (g, v) => g.clip(v, undefined, 0.5)),
    ref.map(x, (v) => Math.min(0.5, v)),
    'clip max only',
  );
  const mean = await runOne(x, (g, v) => g.reduceMean(v, [2]));
  const expected = new Float64Array(6);
  for (let i = 0; i < 6; i++) for (let j = 0; j < 4; j++) expected[i] = expected[i]! + x.data[i * 4 + j]! / 4;
  assertClose(mean, { dims: [2, 3, 1], data: expected }, 'reduceMean');
  // Broadcasting a per-channel [3, 1] value over [2, 3, 4].
  const perChannel = { dims: [3, 1], data: Float32Array.of(1, 2, 3) };
  const expectedProduct = { dims: x.dims, data: Float64Array.from(x.data, (v, i) => v * ((Math.floor(i / 4) % 3) + 1)) };
  assertClose(await runOne(x, (g, v) => g.mul(v, g.param('s', perChannel))), expectedProduct, 'broadcast mul');
});

test('resizeNearest equals PyTorch nearest upsampling; depthToSpace in both modes', async () => {
  const x = seededTensor([1, 2, 3, 5], 4);
  assertClose(await runOne(x, (g, v) => g.resizeNearest(v, [1, 1, 2, 2])), ref.upsampleNearest(x, [2, 2]), 'resize 2x');
  assertClose(await runOne(x, (g, v) => g.resizeNearest(v, [1, 1, 1, 3])), ref.upsampleNearest(x, [1, 3]), 'resize 1x3');

  const r = 2;
  const d = seededTensor([1, 8, 2, 3], 5);
  const [n, c, h, w] = [1, 2, 2, 3];
  const crd = ref.transpose({ dims: [n, c, r, r, h, w], data: d.data }, [0, 1, 4, 2, 5, 3]);
  assertClose(await runOne(d, (g, v) => g.depthToSpace(v, r, 'CRD')), { dims: [n, c, h * r, w * r], data: crd.data }, 'depthToSpace CRD');
  const dcr = ref.transpose({ dims: [n, r, r, c, h, w], data: d.data }, [0, 3, 4, 1, 5, 2]);
  assertClose(await runOne(d, (g, v) => g.depthToSpace(v, r, 'DCR')), { dims: [n, c, h * r, w * r], data: dcr.data }, 'depthToSpace DCR');
});

test('attention as the VAE mid-block spells it: reshape, transpose, Gemm projections, MatMul, Softmax', async () => {
  const [c, h, w] = [4, 3, 2];
  const x = seededTensor([1, c, h, w], 6);
  const weights = ['q', 'k', 'v'].map((name, i) => ({ name, w: seededTensor([c, c], 40 + i, 0.7), b: seededTensor([c], 50 + i, 0.3) }));
  const y = await runOne(x, (g, v) => {
    const s = g.scope('attn');
    const tokens = s.reshape(s.transpose(s.reshape(v, [0, c, -1]), [0, 2, 1]), [-1, c]); // [HW, C]
    const [q, k, vv] = weights.map(({ name, w: wt, b }) =>
      s.reshape(s.gemm(tokens, s.param(`${name}.weight`, wt), s.param(`${name}.bias`, b), { transB: true }), [1, -1, c]),
    );
    const scores = s.mul(s.matMul(q!, s.transpose(k!, [0, 2, 1])), 1 / Math.sqrt(c));
    const out = s.matMul(s.softmax(scores, -1), vv!); // [1, HW, C]
    return s.reshape(s.transpose(out, [0, 2, 1]), [1, c, h, w]);
  });
  const tokens = ref.transpose({ dims: [1, c, h * w], data: x.data }, [0, 2, 1]);
  const [q, k, v] = weights.map(({ w: wt, b }) => {
    const projected = ref.matmul(tokens, { dims: [1, c, c], data: ref.transpose(wt, [1, 0]).data });
    return { dims: [1, h * w, c], data: Float64Array.from(projected.data, (value, i) => value + b.data[i % c]!) };
  });
  const expected = ref.transpose(ref.attention(q!, k!, v!), [0, 2, 1]);
  assertClose(y, { dims: [1, c, h, w], data: expected.data }, 'attention');
});

test('pad, slice, concat, split, flatten, unsqueeze, cast', async () => {
  const x = seededTensor([1, 2, 3, 4], 12);
  assertClose(
    await runOne(x, (g, v) => g.pad(v, [0, 0, 1, 2, 0, 0, 2, 0], { value: 0.5 })),
    ref.pad(x, [0, 0, 1, 2, 0, 0, 2, 0], 0.5),
    'pad constant',
  );
  assertClose(
    await runOne(x, (g, v) => g.slice(v, { starts: [1], ends: [4], axes: [3], steps: [2] })),
    ref.slice(x, 3, 1, 4, 2),
    'slice with step',
  );
  assertClose(
    await runOne(x, (g, v) => g.slice(v, { starts: [-2], ends: [Number.MAX_SAFE_INTEGER], axes: [2] })),
    ref.slice(x, 2, 1, 3),
    'slice from the end',
  );
  assertClose(await runOne(x, (g, v) => g.concat([v, g.mul(v, 2)], 1)), ref.concat([x, ref.map(x, (v) => 2 * v)], 1), 'concat');

  const g = new GraphBuilder('split');
  const parts = g.split(g.input('x', x.dims), [1, 3], 3);
  g.output('a', parts[0]!);
  g.output('b', parts[1]!);
  const out = await runGraph(g, { x });
  assertClose(out.a!, ref.slice(x, 3, 0, 1), 'split part 0');
  assertClose(out.b!, ref.slice(x, 3, 1, 4), 'split part 1');

  const flat = await runOne(x, (gr, v) => gr.flatten(v, 2));
  assert.deepEqual(flat.dims, [2, 12]);
  assert.deepEqual(flat.data, x.data);
  const unsq = await runOne(x, (gr, v) => gr.unsqueeze(v, [0, 5]));
  assert.deepEqual(unsq.dims, [1, 1, 2, 3, 4, 1]);
  const scaled = ref.map(x, (v) => v * 10);
  assertClose(
    await runOne(x, (gr, v) => gr.cast(gr.cast(gr.mul(v, 10), DataType.INT32), DataType.FLOAT)),
    ref.map(scaled, Math.trunc),
    'cast truncates toward zero',
  );
});

test('dynamic axes: one session serves several input sizes', async () => {
  const g = new GraphBuilder('dynamic');
  const x = g.input('x', ['batch', 2, 'height', 'width']);
  const w = seededTensor([3, 2, 3, 3], 1);
  g.output('y', g.conv(x, g.param('w', w), undefined, { pads: 1 }), ['batch', 3, 'height', 'width']);
  const session = await createSession(g.toModelBytes(), { intraOpThreads: 1 });
  for (const dims of [
    [1, 2, 4, 4],
    [2, 2, 3, 7],
  ]) {
    const input = seededTensor(dims, 3);
    const { y } = await session.run({ x: input });
    assertClose(y!, ref.conv(input, w, undefined, { pads: 1 }), `dynamic ${dims.join('x')}`);
  }
  await session.dispose();
});

test('names: scopes give module paths, repeats get suffixes, literals are Constant nodes', () => {
  const g = new GraphBuilder('names');
  const x = g.input('x', [1, 4, 2, 2]);
  const block = g.scope('decoder').scope('up_blocks.0').scope('resnets.1');
  const conv1 = block.scope('conv1');
  const w = conv1.param('weight', seededTensor([4, 4, 3, 3], 1));
  const y = conv1.conv(x, w, undefined, { pads: 1 });
  const z = block.add(block.mul(y, 2), block.mul(y, 3));
  g.output('sample', z);
  assert.equal(w.name, 'decoder.up_blocks.0.resnets.1.conv1.weight');
  assert.equal(y.name, 'decoder.up_blocks.0.resnets.1.conv1/Conv');
  const graph = g.toModel().graph!;
  assert.deepEqual(
    graph.node!.map((n) => n.name),
    [
      'decoder.up_blocks.0.resnets.1.conv1/Conv',
      'decoder.up_blocks.0.resnets.1/Constant',
      'decoder.up_blocks.0.resnets.1/Mul',
      'decoder.up_blocks.0.resnets.1/Constant_1',
      'decoder.up_blocks.0.resnets.1/Mul_1',
      'decoder.up_blocks.0.resnets.1/Add',
      'sample',
    ],
  );
  assert.deepEqual(
    graph.initializer!.map((t) => t.name),
    ['decoder.up_blocks.0.resnets.1.conv1.weight'],
  );
});

test('a graph can declare several outputs, including a value that is also used further on', async () => {
  const g = new GraphBuilder('staged');
  const x = g.input('x', [1, 2, 2, 2]);
  const h = g.relu(x);
  g.output('stage0', h);
  g.output('stage1', g.mul(h, 2));
  const x0 = seededTensor([1, 2, 2, 2], 5);
  const out = await runGraph(g, { x: x0 });
  assert.deepEqual(Object.keys(out).sort(), ['stage0', 'stage1']);
  assertClose(out.stage0!, ref.relu(x0), 'stage0');
  assertClose(
    out.stage1!,
    ref.map(ref.relu(x0), (v) => 2 * v),
    'stage1',
  );
});

test('builder refuses invalid arguments with DistVaeError naming the value', () => {
  const g = new GraphBuilder('errors');
  const x = g.input('x', [1, 4, 2, 2]);
  const w = g.param('w', seededTensor([4, 4, 3, 3], 1));
  const isInvalid = (field: string) => (e: unknown) =>
    e instanceof DistVaeError && e.code === 'INVALID_ARGUMENT' && e.reasons[0]!.field === field;
  assert.throws(() => g.param('w', seededTensor([1], 1)), isInvalid('initializer name'));
  assert.throws(() => g.conv(x, g.relu(x), undefined), isInvalid('Conv weight'));
  assert.throws(() => g.conv(x, w, undefined, { pads: [1, 1] }), isInvalid('pads'));
  assert.throws(() => g.conv(x, w, undefined, { strides: 0 }), isInvalid('strides[0]'));
  const gamma = g.param('gamma', seededTensor([4], 2));
  assert.throws(() => g.groupNorm(x, gamma, gamma, { groups: 3, epsilon: 1e-5 }), isInvalid('groups'));
  assert.throws(() => g.groupNorm(x, gamma, gamma, { groups: 2, epsilon: 0 }), isInvalid('epsilon'));
  const other = new GraphBuilder('other');
  assert.throws(() => g.relu(other.input('x', [1])), isInvalid('Relu input 0'));
  assert.throws(() => g.input('bad', [1, -2]), isInvalid('bad dims[1]'));
  assert.throws(
    () => new GraphBuilder('empty').toModel(),
    (e: unknown) => e instanceof DistVaeError && e.code === 'INVALID_ARGUMENT',
  );
});
