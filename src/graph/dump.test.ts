// The text dump is the human-readable contract of a built graph: a golden check of its exact
// form, and proof that it describes the bytes (dumping the decoded bytes gives the same text).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphBuilder } from './builder.js';
import { dumpModel, formatFloat32 } from './dump.js';
import { decodeModel } from './onnx-proto.js';

function tinyDecoder(): GraphBuilder {
  const g = new GraphBuilder('tiny_decoder');
  const x = g.input('latent', ['batch', 4, 'height', 'width']);
  const convIn = g.scope('decoder.conv_in');
  let h = convIn.conv(
    x,
    convIn.param('weight', { dims: [8, 4, 3, 3], data: new Float32Array(288) }),
    convIn.param('bias', { dims: [8], data: new Float32Array(8).fill(0.1) }),
    { pads: 1 },
  );
  const norm = g.scope('decoder.norm');
  const gamma = norm.param('weight', { dims: [32], data: new Float32Array(32).fill(1) });
  const beta = norm.param('bias', { dims: [32], data: new Float32Array(32) });
  h = norm.groupNorm(g.scope('decoder').concat([h, h, h, h], 1), gamma, beta, { groups: 2, epsilon: 1e-6, form: 'instance-norm' });
  h = g.scope('decoder').silu(h);
  const up = g.scope('decoder.up');
  const [a, b] = up.split(up.resizeNearest(h, [1, 1, 2, 2]), [16, 16], 1);
  g.output('sample', up.concat([b!, a!], 1), ['batch', 32, '2*height', '2*width']);
  g.output('skip', a!);
  return g;
}

const GOLDEN = `model ir_version=10 opset=[ai.onnx 21] producer=distvae
graph tiny_decoder
input  latent float32[batch,4,height,width]
init   decoder.conv_in.weight float32[8,4,3,3]
init   decoder.conv_in.bias float32[8]{0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1}
init   decoder.norm.weight float32[32]
init   decoder.norm.bias float32[32]
node   decoder.conv_in/Conv = Conv(latent, decoder.conv_in.weight, decoder.conv_in.bias) kernel_shape=[3,3] pads=[1,1,1,1] strides=[1,1] dilations=[1,1] group=1
node   decoder/Concat = Concat(decoder.conv_in/Conv, decoder.conv_in/Conv, decoder.conv_in/Conv, decoder.conv_in/Conv) axis=1
node   decoder.norm/Reshape = Reshape(decoder/Concat, int64[3]{0,2,-1})
node   decoder.norm/InstanceNormalization = InstanceNormalization(decoder.norm/Reshape, float32[2]{1,1}, float32[2]{0,0}) epsilon=0.000001
node   decoder.norm/Reshape_1 = Reshape(decoder.norm/InstanceNormalization, int64[3]{0,32,-1})
node   decoder.norm/BatchNormalization = BatchNormalization(decoder.norm/Reshape_1, decoder.norm.weight, decoder.norm.bias, float32[32]{all 0}, float32[32]{all 0.99999}) epsilon=0.00001
node   decoder.norm/Shape = Shape(decoder/Concat)
node   decoder.norm/Reshape_2 = Reshape(decoder.norm/BatchNormalization, decoder.norm/Shape)
node   decoder/Sigmoid = Sigmoid(decoder.norm/Reshape_2)
node   decoder/Mul = Mul(decoder.norm/Reshape_2, decoder/Sigmoid)
node   decoder.up/Resize = Resize(decoder/Mul, _, float32[4]{1,1,2,2}) mode="nearest" coordinate_transformation_mode="asymmetric" nearest_mode="floor"
node   [decoder.up/Split] decoder.up/Split:0, decoder.up/Split:1 = Split(decoder.up/Resize, int64[2]{16,16}) axis=1
node   decoder.up/Concat = Concat(decoder.up/Split:1, decoder.up/Split:0) axis=1
node   sample = Identity(decoder.up/Concat)
node   skip = Identity(decoder.up/Split:0)
output sample float32[batch,32,2*height,2*width]
output skip float32 (shape not declared)
sync   group-norm decoder.norm: decoder/Concat -> decoder.norm/Reshape_2 (12 nodes)
`;

test('dump: one line per input, initializer, node and output; small and uniform literals inline', () => {
  assert.equal(tinyDecoder().dump(), GOLDEN);
});

test('dump of the decoded bytes equals the dump of the builder: the text describes the bytes', () => {
  const g = tinyDecoder();
  assert.equal(dumpModel(decodeModel(g.toModelBytes())), g.dump());
});

test('dump of the native GroupNorm form shows the op and its attributes', () => {
  const g = new GraphBuilder('gn');
  const x = g.input('x', [1, 4, 2, 2]);
  const s = g.scope('norm');
  g.output(
    'y',
    s.groupNorm(x, s.param('weight', { dims: [4], data: new Float32Array(4) }), s.param('bias', { dims: [4], data: new Float32Array(4) }), {
      groups: 2,
      epsilon: 1e-5,
      form: 'native',
    }),
  );
  assert.match(
    g.dump(),
    /^node {3}norm\/GroupNormalization = GroupNormalization\(x, norm\.weight, norm\.bias\) epsilon=0\.00001 num_groups=2$/m,
  );
});

test('formatFloat32 prints the shortest decimal that reads back as the same float32', () => {
  assert.equal(formatFloat32(Math.fround(0.1)), '0.1');
  assert.equal(formatFloat32(Math.fround(1 / 3)), '0.33333334');
  assert.equal(formatFloat32(1e-6), '0.000001');
  assert.equal(formatFloat32(-2), '-2');
  assert.equal(formatFloat32(Number.NEGATIVE_INFINITY), '-Infinity');
});
