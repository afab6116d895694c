// The float16 rewrite (precision.ts), judged on its dump: what computes in float16, where the
// Casts sit, and what stays float32 (GroupNorm, attention, reductions, graph inputs and outputs).
// Its numbers are judged on a GPU (runtime/webgpu-fp16.test.ts: fp16 against fp32 decodes).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphBuilder } from './builder.js';
import { dumpModel } from './dump.js';
import { DataType } from './onnx-proto.js';
import { modelInPrecision } from './precision.js';

/** conv → GroupNorm → SiLU → RMS-style Mul/ReduceMean → resize → attention → output. */
function tinyGraph(): GraphBuilder {
  const g = new GraphBuilder('tiny');
  const x = g.input('x', [1, 4, 4, 4]);
  const conv = g.scope('conv');
  let h = conv.conv(x, conv.param('weight', { dims: [8, 4, 3, 3], data: new Float32Array(288) }), undefined, { pads: 1 });
  const norm = g.scope('norm');
  h = norm.groupNorm(
    h,
    norm.param('weight', { dims: [8], data: new Float32Array(8).fill(1) }),
    norm.param('bias', { dims: [8], data: new Float32Array(8) }),
    // The form the assertions below read (the default's row statistics are judged in group-norm.test.ts).
    { groups: 2, epsilon: 1e-6, form: 'instance-norm' },
  );
  h = g.silu(h);
  const rms = g.scope('rms');
  h = rms.div(h, rms.sqrt(rms.add(rms.reduceMean(rms.mul(h, h), [1]), 1e-6)));
  h = g.scope('up').resizeNearest(h, [1, 1, 2, 2]);
  const att = g.scope('attn');
  const tokens = att.reshape(h, [1, 8, 64]);
  const out = att.attention(att.transpose(tokens, [0, 2, 1]), tokens, tokens);
  g.output('y', att.reshape(out, [1, 8, 8, 8]), [1, 8, 8, 8]);
  return g;
}

const lines = (dump: string) => dump.split('\n');
const nodeLine = (dump: string, name: string) =>
  lines(dump).find((l) => l.startsWith(`node   ${name} = `)) ?? assert.fail(`no node ${name}`);

test('fp32 leaves the model as it is', () => {
  const model = tinyGraph().toModel();
  assert.equal(modelInPrecision(model, 'fp32'), model);
});

test('fp16: convolutions and activations in float16, GroupNorm, the RMS statistics and attention in float32, inputs and outputs float32', () => {
  const model = modelInPrecision(tinyGraph().toModel(), 'fp16');
  const dump = dumpModel(model);
  // Inputs, outputs and weights keep their types; the graph casts.
  assert.match(dump, /^input {2}x float32\[1,4,4,4\]$/m);
  assert.match(dump, /^output y float32\[1,8,8,8\]$/m);
  assert.match(dump, /^init {3}conv\.weight float32\[8,4,3,3\]$/m);
  assert.match(nodeLine(dump, 'x:fp16'), /= Cast\(x\) to=10$/);
  assert.match(nodeLine(dump, 'conv.weight:fp16'), /= Cast\(conv\.weight\) to=10$/);
  assert.match(nodeLine(dump, 'conv/Conv'), /= Conv\(x:fp16, conv\.weight:fp16\)/);
  // The GroupNorm region reads a float32 copy of the conv output, and its affine weights as they are.
  assert.match(nodeLine(dump, 'conv/Conv:fp32'), /= Cast\(conv\/Conv\) to=1$/);
  assert.match(nodeLine(dump, 'norm/Reshape'), /= Reshape\(conv\/Conv:fp32,/);
  assert.match(nodeLine(dump, 'norm/BatchNormalization'), /norm\.weight, norm\.bias,/);
  // SiLU back in float16.
  assert.match(nodeLine(dump, 'Sigmoid'), /= Sigmoid\(norm\/Reshape_2:fp16\)$/);
  // x·x feeds only the float32 ReduceMean: pulled into float32 (it would overflow float16 for |x| > 256).
  assert.match(nodeLine(dump, 'rms/Mul'), /= Mul\(Mul:fp32, Mul:fp32\)$/);
  assert.match(nodeLine(dump, 'rms/ReduceMean'), /= ReduceMean\(rms\/Mul,/);
  // + ε and √ of the mean square stay float32 (statistics); the division is float16 again; Resize's scales stay float32.
  assert.match(nodeLine(dump, 'rms/Add'), /= Add\(rms\/ReduceMean, float32\[\]\{0\.000001\}\)$/);
  assert.match(nodeLine(dump, 'rms/Div'), /= Div\(Mul, rms\/Sqrt:fp16\)$/);
  assert.match(nodeLine(dump, 'up/Resize'), /= Resize\(rms\/Div, _, float32\[4\]\{1,1,2,2\}\)/);
  // Attention (q·k, softmax, the weighted sum) in float32; the output is float16 until its last Cast.
  assert.match(nodeLine(dump, 'attn/Reshape'), /= Reshape\(up\/Resize:fp32,/);
  assert.match(nodeLine(dump, 'attn/MatMul'), /= MatMul\(attn\/Transpose, attn\/Reshape\)$/);
  assert.match(nodeLine(dump, 'attn/Softmax'), /= Softmax\(attn\/MatMul\)/);
  assert.match(dump, /^node {3}\[y\/Cast\] y = Cast\(y:fp16\) to=1$/m);
  // One Cast per value and type: x, the conv weight, into and out of the GroupNorm, into the RMS square, its √, into and out of attention, the output.
  assert.equal(lines(dump).filter((l) => / = Cast\(/.test(l)).length, 9);
});

test('fp16: a float16 graph output is cast back to float32 under its own name', () => {
  const g = new GraphBuilder('conv_out');
  const x = g.input('x', [1, 2, 2, 2]);
  // Named as the node, so no Identity renames it: the Conv itself is the float16 output, renamed.
  g.output('Conv', g.conv(x, g.param('w', { dims: [2, 2, 1, 1], data: new Float32Array(4) }), undefined));
  const model = modelInPrecision(g.toModel(), 'fp16');
  const dump = dumpModel(model);
  assert.match(dump, /^node {3}\[Conv\] Conv:fp16 = Conv\(x:fp16, w:fp16\)/m);
  assert.match(dump, /^node {3}\[Conv\/Cast\] Conv = Cast\(Conv:fp16\) to=1$/m);
  assert.equal(model.graph!.output![0]!.type?.tensor_type?.elem_type, DataType.FLOAT);
});

test('fp16 keepFloat32 false computes everything in float16 (for measurements)', () => {
  const dump = dumpModel(modelInPrecision(tinyGraph().toModel(), 'fp16', { keepFloat32: false }));
  assert.doesNotMatch(dump, /:fp32 = Cast/);
  assert.match(nodeLine(dump, 'norm/Reshape'), /= Reshape\(conv\/Conv,/);
  assert.match(dump, /^node {3}\[y\/Cast\] y = Cast\(y:fp16\) to=1$/m);
});
