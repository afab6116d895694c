import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { tensor, type Tensor } from '../tensor.js';
import { bindWeights, type ExpectedParam } from './bind.js';

const expected: ExpectedParam[] = [
  { name: 'decoder.conv_in.weight', dims: [64, 4, 3, 3] },
  { name: 'decoder.conv_in.bias', dims: [64] },
  { name: 'post_quant_conv.weight', dims: [4, 4, 1, 1] },
];
const weightsOf = (entries: [string, number[]][]): Map<string, Tensor> => new Map(entries.map(([k, dims]) => [k, tensor(dims)]));

test('binds exactly the expected keys in expected order, skipping ignored prefixes', () => {
  const weights = weightsOf([
    ['post_quant_conv.weight', [4, 4, 1, 1]],
    ['encoder.conv_in.weight', [128, 3, 3, 3]],
    ['quant_conv.weight', [8, 8, 1, 1]],
    ['decoder.conv_in.bias', [64]],
    ['decoder.conv_in.weight', [64, 4, 3, 3]],
  ]);
  const bound = bindWeights(expected, weights, { ignorePrefixes: ['encoder.', 'quant_conv.'] });
  assert.deepEqual(
    [...bound.keys()],
    expected.map((p) => p.name),
  );
  assert.equal(bound.get('decoder.conv_in.bias'), weights.get('decoder.conv_in.bias'));
});

test('reports every missing, unexpected and wrongly shaped key at once', () => {
  const weights = weightsOf([
    ['decoder.conv_in.weight', [64, 4, 3]],
    ['post_quant_conv.weight', [4, 4, 1, 1]],
    ['decoder.extra.weight', [2]],
    ['bn.running_mean', [4]],
  ]);
  assert.throws(
    () => bindWeights(expected, weights, { ignorePrefixes: ['bn.'], source: 'vae.safetensors' }),
    (e: unknown) => {
      assert.ok(e instanceof DistVaeError && e.code === 'WEIGHTS_MISMATCH');
      assert.deepEqual(
        e.reasons.map((r) => [r.code, r.field, r.value]),
        [
          ['WEIGHT_SHAPE', 'decoder.conv_in.weight', [64, 4, 3]],
          ['WEIGHT_MISSING', 'decoder.conv_in.bias', null],
          ['WEIGHT_UNEXPECTED', 'decoder.extra.weight', [2]],
        ],
      );
      assert.match(e.message, /^vae\.safetensors does not match the decoder: 1 missing, 1 unexpected, 1 wrongly shaped\./);
      assert.match(e.message, /decoder\.conv_in\.weight has shape \[64, 4, 3\] in vae\.safetensors, the decoder expects \[64, 4, 3, 3\]/);
      assert.match(e.message, /decoder\.conv_in\.bias \(shape \[64\]\) is missing from vae\.safetensors/);
      assert.match(e.message, /decoder\.extra\.weight \(shape \[2\]\) in vae\.safetensors is not a parameter of this decoder/);
      assert.equal(e.reasons[2]!.valid, 'a key the decoder expects or under an ignored prefix (bn.)');
      return true;
    },
  );
});

test('an expected key under an ignored prefix is still bound; a wholly foreign file gets a hint', () => {
  assert.equal(bindWeights([{ name: 'bn.weight', dims: [2] }], weightsOf([['bn.weight', [2]]]), { ignorePrefixes: ['bn.'] }).size, 1);
  assert.throws(
    () => bindWeights(expected, weightsOf([['model.x', [1]]])),
    /No expected key matched: wrong family, or keys under another prefix\?/,
  );
});

test('a 0-d parameter binds from a stored 0-d tensor or from shape [1]; other shapes are refused', () => {
  const scalar: ExpectedParam[] = [{ name: 'decoder.timestep_scale_multiplier', dims: [] }];
  const fromZeroD = bindWeights(scalar, new Map([['decoder.timestep_scale_multiplier', { dims: [], data: Float32Array.of(1000) }]]));
  const fromOne = bindWeights(scalar, new Map([['decoder.timestep_scale_multiplier', { dims: [1], data: Float32Array.of(1000) }]]));
  assert.deepEqual(fromZeroD.get('decoder.timestep_scale_multiplier'), { dims: [], data: Float32Array.of(1000) });
  assert.deepEqual(fromOne.get('decoder.timestep_scale_multiplier'), { dims: [], data: Float32Array.of(1000) });
  assert.throws(() => bindWeights(scalar, weightsOf([['decoder.timestep_scale_multiplier', [2]]])), /has shape \[2\].*expects \[\]/);
});
