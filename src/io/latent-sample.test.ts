import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tae } from '../families/tae/spec.js';
import { flux2 } from '../families/flux2/spec.js';
import { seededTensor } from '../tensor.js';
import { latentMean, normalStream, refuseSamplingWithout, sampleLatents } from './latent-sample.js';

test('normalStream is standard normal (moments of 200k draws) and fixed per seed', () => {
  const z = normalStream(7, 200_001);
  let [s1, s2, s3, s4] = [0, 0, 0, 0];
  for (const v of z) [s1, s2, s3, s4] = [s1 + v, s2 + v * v, s3 + v ** 3, s4 + v ** 4];
  const n = z.length;
  // Standard errors at n = 2e5: mean 0.0022, variance 0.0032, skew 0.0055, kurtosis 0.011; bounds at ~5 sigma.
  assert.ok(Math.abs(s1 / n) < 0.012, `mean ${s1 / n}`);
  assert.ok(Math.abs(s2 / n - 1) < 0.016, `variance ${s2 / n}`);
  assert.ok(Math.abs(s3 / n) < 0.03, `third moment ${s3 / n}`);
  assert.ok(Math.abs(s4 / n - 3) < 0.06, `fourth moment ${s4 / n}`);
  assert.deepEqual(normalStream(7, 5), z.subarray(0, 5));
  assert.notDeepEqual(normalStream(8, 5), z.subarray(0, 5));
  assert.throws(() => normalStream(1.5, 2), { code: 'INVALID_ARGUMENT' });
});

test('sampleLatents = mean + exp(clamp(logvar, -30, 20) / 2) * eps per element (float64 reference); latentMean = mode()', () => {
  const moments = seededTensor([2, 4, 3, 2], 3, 4);
  moments.data[2 * 6] = 50; // batch 0, log-variance channel 0, first value: clamped to 20
  moments.data[2 * 6 + 1] = -100; // clamped to -30
  const seed = 11;
  const sample = sampleLatents(moments, seed);
  const mean = latentMean(moments);
  assert.deepEqual(sample.dims, [2, 2, 3, 2]);
  assert.deepEqual(mean.dims, [2, 2, 3, 2]);
  const eps = normalStream(seed, 24);
  for (let b = 0; b < 2; b++)
    for (let i = 0; i < 12; i++) {
      const [mu, logvar] = [moments.data[b * 24 + i]!, moments.data[b * 24 + 12 + i]!];
      assert.equal(mean.data[b * 12 + i], mu);
      const expected = mu + Math.exp(0.5 * Math.min(Math.max(logvar, -30), 20)) * eps[b * 12 + i]!;
      assert.ok(Math.abs(sample.data[b * 12 + i]! - expected) <= 1e-6 * Math.max(1, Math.abs(expected)), `b ${b} i ${i}`);
    }
  assert.deepEqual(sampleLatents(moments, seed), sample, 'same seed, same latents');
  assert.throws(() => latentMean(seededTensor([1, 3, 2, 2], 1)), { code: 'TENSOR_INVALID', message: /\(B, 2C, \.\.\.\)/ });
});

test('sampling is refused for a family that declares no latent distribution (TAE), allowed for the KL classes', () => {
  assert.throws(() => refuseSamplingWithout(tae, '--sample'), {
    code: 'UNSUPPORTED',
    message: /--sample: the tae encoder returns its latents directly/,
  });
  assert.doesNotThrow(() => refuseSamplingWithout(flux2, '--sample'));
});
