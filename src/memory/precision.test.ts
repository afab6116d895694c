// The memory model sizes a float16 graph's tensors at 2 bytes and counts its float32 islands'
// Casts (graph/precision.ts); the Cast of a weight is folded by onnxruntime into the weights, so
// it is no activation. Judged by hand-counted bytes.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphBuilder } from '../graph/builder.js';
import { modelInPrecision } from '../graph/precision.js';
import { activationPeak } from './liveness.js';

test('fp16 liveness: 2-byte activations, float32 Casts counted, weight Casts folded', () => {
  const g = new GraphBuilder('conv_norm');
  const x = g.input('x', [1, 2, 8, 8]);
  const h = g.conv(x, g.param('w', { dims: [4, 2, 1, 1], data: new Float32Array(8) }), undefined);
  g.output('y', g.relu(h));
  const model = g.toModel();
  const dims = { x: [1, 2, 8, 8] };
  // fp32: Conv [1,4,8,8] 1024 B, then Relu's 1024 B while the Conv's is read: 2048 B.
  assert.equal(activationPeak(model, dims).peakBytes, 2048);
  // fp16: x:fp16 128 B; Conv 512 B (with x:fp16: 640 B); Relu 512 B (with the Conv's: 1024 B); the
  // output's Identity is a view; its Cast to float32 reads 512 B and writes 1024 B: 1536 B. The weight's Cast is folded.
  const half = modelInPrecision(model, 'fp16');
  const peak = activationPeak(half, dims);
  assert.equal(peak.peakBytes, 1536);
  assert.equal(peak.maxTensorBytes, 1024);
});
