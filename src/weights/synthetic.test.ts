import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { normalStream, syntheticWeights, type ParamSpec } from './synthetic.js';

function moments(data: Float32Array): { mean: number; std: number } {
  const mean = data.reduce((a, v) => a + v, 0) / data.length;
  const variance = data.reduce((a, v) => a + (v - mean) ** 2, 0) / data.length;
  return { mean, std: Math.sqrt(variance) };
}

test('the normal stream matches an independent big-integer port of xoshiro128** + Box-Muller', () => {
  // Python reference (arbitrary-precision ints, masked to 32 bits; CPython's math.log/cos/sin):
  // seed 42 ^ fnv1a('decoder.conv_in.weight') = 42 ^ 22438545.
  const expected = [0.3806865728810858, 0.6299844179860555, -0.6774374715819496, 0.5787526666130863];
  const next = normalStream(42, 'decoder.conv_in.weight');
  for (const e of expected) assert.ok(Math.abs(next() - e) < 1e-12, `${e}`);
});

test('weights are deterministic per (seed, name) and independent of the other specs', () => {
  const a: ParamSpec = { name: 'a.weight', dims: [8, 4, 3, 3], init: 'conv' };
  const b: ParamSpec = { name: 'b.bias', dims: [8], init: 'bias' };
  const one = syntheticWeights([a, b], 7);
  const again = syntheticWeights([b, a], 7);
  assert.deepEqual(one.get('a.weight')!.data, again.get('a.weight')!.data);
  assert.deepEqual(one.get('a.weight')!.data, syntheticWeights([a], 7).get('a.weight')!.data);
  assert.notDeepEqual(one.get('a.weight')!.data, syntheticWeights([a], 8).get('a.weight')!.data);
  assert.deepEqual(one.get('a.weight')!.dims, [8, 4, 3, 3]);
});

test('fan-in scaling: conv/linear std = gain / sqrt(fan-in); norms near 1, biases near 0', () => {
  const w = syntheticWeights(
    [
      { name: 'conv', dims: [64, 32, 3, 3], init: 'conv' },
      { name: 'relu_conv', dims: [64, 32, 3, 3], init: 'conv', gain: Math.SQRT2 },
      { name: 'linear', dims: [256, 512], init: 'linear' },
      { name: 'norm.weight', dims: [4096], init: 'norm-weight' },
      { name: 'norm.bias', dims: [4096], init: 'norm-bias' },
      { name: 'bias', dims: [4096], init: 'bias' },
    ],
    1,
  );
  const check = (name: string, mean: number, std: number) => {
    const m = moments(w.get(name)!.data);
    assert.ok(
      Math.abs(m.mean - mean) < 0.05 * std + 1e-3 && Math.abs(m.std / std - 1) < 0.03,
      `${name}: ${JSON.stringify(m)} vs ${mean} ± ${std}`,
    );
  };
  check('conv', 0, 1 / Math.sqrt(288));
  check('relu_conv', 0, Math.SQRT2 / Math.sqrt(288));
  check('linear', 0, 1 / Math.sqrt(512));
  check('norm.weight', 1, 0.02);
  check('norm.bias', 0, 0.02);
  check('bias', 0, 0.02);
});

test('activations stay O(1) through 24 ReLU layers with gain sqrt(2)', () => {
  const width = 128;
  const depth = 24;
  const specs: ParamSpec[] = Array.from({ length: depth }, (_, i) => ({
    name: `layers.${i}.weight`,
    dims: [width, width],
    init: 'linear',
    gain: Math.SQRT2,
  }));
  const weights = syntheticWeights(specs, 3);
  const input = normalStream(3, 'input');
  let x = Float64Array.from({ length: 64 * width }, () => input());
  for (const spec of specs) {
    const w = weights.get(spec.name)!.data;
    const y = new Float64Array(x.length);
    for (let b = 0; b < 64; b++) {
      for (let o = 0; o < width; o++) {
        let s = 0;
        for (let i = 0; i < width; i++) s += w[o * width + i]! * x[b * width + i]!;
        y[b * width + o] = Math.max(0, s);
      }
    }
    x = y;
  }
  const rms = Math.sqrt(x.reduce((a, v) => a + v * v, 0) / x.length);
  assert.ok(rms > 0.25 && rms < 4, `rms after ${depth} layers: ${rms}`);
});

test('invalid specs are refused together', () => {
  assert.throws(
    () =>
      syntheticWeights(
        [
          { name: 'x', dims: [4, 4], init: 'conv' },
          { name: 'x', dims: [4, 0], init: 'linear' },
          { name: 'g', dims: [4, 4], init: 'linear', gain: -1 },
        ],
        -1,
      ),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'INVALID_ARGUMENT' &&
      e.reasons.map((r) => r.field).join(' | ') === 'seed | specs[0] (x).dims | specs[1] (x).name | specs[1] (x).dims | specs[2] (g).gain',
  );
});

test('storeSyntheticWeights hands over the same values as syntheticWeights, one tensor at a time in a reused buffer', async () => {
  const { storeSyntheticWeights } = await import('./synthetic.js');
  const specs: ParamSpec[] = [
    { name: 'a.weight', dims: [4, 3, 3, 3], init: 'conv' },
    { name: 'a.bias', dims: [4], init: 'bias' },
    { name: 'n.weight', dims: [3], init: 'norm-weight' },
  ];
  const expected = syntheticWeights(specs, 5);
  const buffers = new Set<ArrayBufferLike>();
  const stored = storeSyntheticWeights(specs, 5, (t) => {
    buffers.add(t.data.buffer);
    return { dims: [...t.dims], data: t.data.slice() };
  });
  assert.equal(buffers.size, 1);
  for (const [name, t] of expected) assert.deepEqual(stored.get(name), t);
});
