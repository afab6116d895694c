// The float64 references must themselves be right before they can judge onnxruntime: each is
// checked here on cases small enough to work out by hand.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as ref from './reference-ops.js';

const t = (dims: number[], values: number[]): ref.RefTensor => ({ dims, data: Float64Array.from(values) });
const values = (x: ref.RefTensor) => Array.from(x.data, (v) => Math.round(v * 1e9) / 1e9);

test('conv: 2x2 ones kernel over 1..9 sums each window', () => {
  const x = t([1, 1, 3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const w = t([1, 1, 2, 2], [1, 1, 1, 1]);
  const y = ref.conv(x, w, t([1], [0.5]));
  assert.deepEqual(y.dims, [1, 1, 2, 2]);
  assert.deepEqual(values(y), [12.5, 16.5, 24.5, 28.5]);
});

test('conv: padding 1 and stride 2 read zeros outside the image', () => {
  // 3x3 ones kernel, pad 1, stride 2 on a 3x3 input: outputs centred on (0,0), (0,2), (2,0), (2,2).
  const x = t([1, 1, 3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const w = t([1, 1, 3, 3], new Array(9).fill(1));
  const y = ref.conv(x, w, undefined, { pads: 1, strides: [2, 2] });
  assert.deepEqual(values(y), [1 + 2 + 4 + 5, 2 + 3 + 5 + 6, 4 + 5 + 7 + 8, 5 + 6 + 8 + 9]);
});

test('conv: asymmetric pads, dilation and groups', () => {
  const x = t([1, 1, 1, 4], [1, 2, 3, 4]);
  // kernel [1, 10] with dilation 2 pairs x[i] with x[i+2]; pad 1 on the left only.
  const y = ref.conv(x, t([1, 1, 1, 2], [1, 10]), undefined, { pads: [0, 1, 0, 0], dilations: [1, 2] });
  assert.deepEqual(values(y), [0 + 10 * 2, 1 + 10 * 3, 2 + 10 * 4]);
  // Two groups of one channel each, 1x1 kernels 2 and 3: each channel scaled by its own weight.
  const x2 = t([1, 2, 1, 2], [1, 2, 5, 6]);
  const y2 = ref.conv(x2, t([2, 1, 1, 1], [2, 3]), undefined, { group: 2 });
  assert.deepEqual(values(y2), [2, 4, 15, 18]);
});

test('conv: the 2-D loops agree with the general N-d path (a depth-1 3-D conv)', () => {
  const x = { dims: [2, 4, 5, 6], data: Float64Array.from({ length: 240 }, (_, i) => Math.sin(i * 0.37)) };
  const w = { dims: [6, 2, 3, 2], data: Float64Array.from({ length: 72 }, (_, i) => Math.cos(i * 0.91)) };
  const bias = t([6], [0.1, -0.2, 0.3, -0.4, 0.5, -0.6]);
  const params = { pads: [1, 0, 2, 1], strides: [2, 1], dilations: [1, 2], group: 2 };
  const y2 = ref.conv(x, w, bias, params);
  const lift = (v: ref.RefTensor): ref.RefTensor => ({ dims: [v.dims[0]!, v.dims[1]!, 1, ...v.dims.slice(2)], data: v.data });
  const y3 = ref.conv(lift(x), lift(w), bias, { pads: [0, 1, 0, 0, 2, 1], strides: [1, 2, 1], dilations: [1, 1, 2], group: 2 });
  assert.deepEqual(y3.dims, [y2.dims[0], y2.dims[1], 1, ...y2.dims.slice(2)]);
  assert.deepEqual(values(y3), values(y2));
});

test('conv: the 3-D loops agree with the general N-d path (a depth-1 4-D conv)', () => {
  const x = { dims: [2, 3, 4, 5, 6], data: Float64Array.from({ length: 720 }, (_, i) => Math.sin(i * 0.37)) };
  const w = { dims: [4, 3, 3, 2, 3], data: Float64Array.from({ length: 216 }, (_, i) => Math.cos(i * 0.91)) };
  const bias = t([4], [0.1, -0.2, 0.3, -0.4]);
  const y3 = ref.conv(x, w, bias, { pads: [2, 0, 1, 0, 1, 1] });
  const lift = (v: { dims: number[]; data: Float64Array }): ref.RefTensor => ({
    dims: [v.dims[0]!, v.dims[1]!, 1, ...v.dims.slice(2)],
    data: v.data,
  });
  const y4 = ref.conv(lift(x), lift(w), bias, { pads: [0, 2, 0, 1, 0, 0, 1, 1] });
  assert.deepEqual(y4.dims, [y3.dims[0], y3.dims[1], 1, ...y3.dims.slice(2)]);
  assert.deepEqual(values(y4), values(y3));
});

test('groupNorm: one group of four values normalises to zero mean, unit variance, then affine per channel', () => {
  const x = t([1, 2, 1, 2], [1, 2, 3, 4]);
  const y = ref.groupNorm(x, 1, t([2], [1, 2]), t([2], [0, 10]), 0);
  const s = Math.sqrt(1.25);
  assert.deepEqual(values(y), values(t([4], [-1.5 / s, -0.5 / s, 2 * (0.5 / s) + 10, 2 * (1.5 / s) + 10])));
  // Two groups normalise independently: each channel pair [a, a+1] becomes [-1, 1].
  const y2 = ref.groupNorm(t([1, 2, 1, 2], [5, 6, 100, 101]), 2, t([2], [1, 1]), t([2], [0, 0]), 0);
  assert.deepEqual(values(y2), [-1, 1, -1, 1]);
});

test('layerNorm normalises the last axis', () => {
  const y = ref.layerNorm(t([2, 2], [1, 3, 10, 30]), t([2], [1, 1]), undefined, 0);
  assert.deepEqual(values(y), [-1, 1, -1, 1]);
});

test('upsampleNearest repeats each pixel f times per axis', () => {
  const y = ref.upsampleNearest(t([1, 1, 2, 2], [1, 2, 3, 4]), [2, 2]);
  assert.deepEqual(y.dims, [1, 1, 4, 4]);
  assert.deepEqual(values(y), [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]);
});

test('softmax, matmul, transpose and attention', () => {
  assert.deepEqual(values(ref.softmax(t([1, 2], [0, Math.log(2)]))), values(t([2], [1 / 3, 2 / 3])));
  assert.deepEqual(values(ref.softmax(t([2, 1], [5, 7]), 0)), values(t([2], [1 / (1 + Math.exp(2)), 1 / (1 + Math.exp(-2))])));
  assert.deepEqual(values(ref.matmul(t([1, 2, 2], [1, 2, 3, 4]), t([1, 2, 1], [5, 6]))), [17, 39]);
  assert.deepEqual(values(ref.transpose(t([2, 3], [1, 2, 3, 4, 5, 6]), [1, 0])), [1, 4, 2, 5, 3, 6]);
  // Equal scores average the values; a single key returns its value.
  const v = t([1, 2, 2], [1, 2, 3, 4]);
  assert.deepEqual(values(ref.attention(t([1, 1, 2], [0, 0]), t([1, 2, 2], [1, 1, 1, 1]), v)), [2, 3]);
  assert.deepEqual(values(ref.attention(t([1, 1, 2], [3, -1]), t([1, 1, 2], [0.5, 2]), t([1, 1, 2], [7, 8]))), [7, 8]);
});

test('elementwise activations', () => {
  const x = t([3], [-2, 0, 2]);
  assert.deepEqual(values(ref.relu(x)), [0, 0, 2]);
  assert.deepEqual(values(ref.silu(x)), values(t([3], [-2 / (1 + Math.exp(2)), 0, 2 / (1 + Math.exp(-2))])));
  assert.deepEqual(values(ref.sigmoid(x)), values(t([3], [1 / (1 + Math.exp(2)), 0.5, 1 / (1 + Math.exp(-2))])));
  assert.deepEqual(values(ref.tanh(x)), values(t([3], [Math.tanh(-2), 0, Math.tanh(2)])));
});

test('pad, slice and concat', () => {
  const x = t([2, 2], [1, 2, 3, 4]);
  assert.deepEqual(values(ref.pad(x, [1, 0, 0, 1], 9)), [9, 9, 9, 1, 2, 9, 3, 4, 9]);
  const row = t([1, 3], [1, 2, 3]);
  assert.deepEqual(values(ref.pad(row, [0, 2, 0, 1], 'edge')), [1, 1, 1, 2, 3, 3]);
  assert.deepEqual(values(ref.pad(row, [0, 2, 0, 2], 'reflect')), [3, 2, 1, 2, 3, 2, 1]);
  assert.deepEqual(values(ref.slice(t([1, 5], [0, 1, 2, 3, 4]), 1, 1, 5, 2)), [1, 3]);
  const c = ref.concat([x, t([2, 1], [5, 6])], 1);
  assert.deepEqual(c.dims, [2, 3]);
  assert.deepEqual(values(c), [1, 2, 5, 3, 4, 6]);
});
