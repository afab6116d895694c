// The merge of band statistics by Chan's formula against float64 two-pass statistics of the
// whole group, on adversarial bands: means far apart (the between-band term pooling drops),
// tiny variances on a huge common mean (where E[x²] − E[x]² cancels), one-element and
// one-row bands, a band of constant values; and the folded scale/shift against the float64
// GroupNorm.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bandStatistics, groupNormAffine, mergeStatistics, packStatistics } from './group-norm.js';

/** Float64 two-pass statistics of `values`: n, mean, M2 (sum of squared deviations about the mean). */
function twoPass(values: readonly number[]): { n: number; mean: number; m2: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return { n: values.length, mean, m2: values.reduce((a, v) => a + (v - mean) ** 2, 0) };
}

/** A deterministic pseudo-random sequence in [−1, 1). */
function noise(seed: number, count: number): number[] {
  let s = seed >>> 0 || 1;
  return Array.from({ length: count }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

/** Bands of one group, merged through their own two-pass statistics, against the whole. */
function check(bands: readonly number[][], what: string, m2Tolerance = 1e-9): void {
  const parts = bands.map((b) => {
    const s = twoPass(b);
    return packStatistics(s.n, [s.mean], [s.m2]);
  });
  const merged = mergeStatistics(parts);
  const whole = twoPass(bands.flat());
  assert.equal(merged.count[0], whole.n, `${what}: count`);
  const meanError = Math.abs(merged.mean[0]! - whole.mean) / Math.max(1, Math.abs(whole.mean));
  const varianceError = Math.abs(merged.m2[0]! - whole.m2) / whole.m2;
  assert.ok(meanError < 1e-14, `${what}: mean ${merged.mean[0]} vs ${whole.mean} (relative ${meanError})`);
  assert.ok(varianceError < m2Tolerance, `${what}: M2 ${merged.m2[0]} vs ${whole.m2} (relative ${varianceError})`);
}

test('Chan merge: bands with very different means keep the between-band spread', () => {
  check([noise(1, 50).map((v) => v - 1000), noise(2, 30).map((v) => v + 1000), noise(3, 20)], 'means ±1000');
  // Pooling the bands' M2 alone would be off by the whole between-band term.
  const bands = [noise(4, 40).map((v) => v * 1e-3 - 5), noise(5, 40).map((v) => v * 1e-3 + 5)];
  const pooled = bands.map(twoPass).reduce((a, s) => a + s.m2, 0);
  assert.ok(pooled < twoPass(bands.flat()).m2 / 1e5, 'the test would catch pooled variances');
  check(bands, 'tiny spreads, means apart');
});

test('Chan merge: tiny variances on a huge common mean', () => {
  // Ten orders of magnitude between mean and spread: float64 itself keeps ~6 digits of M2 here
  // (the two-pass reference included), against none left by one pass of E[x²] − E[x]².
  check(
    [noise(6, 64).map((v) => 1e6 + v * 1e-4), noise(7, 64).map((v) => 1e6 + v * 1e-4), noise(8, 3).map((v) => 1e6 + v * 1e-4)],
    'mean 1e6, spread 1e-4',
    1e-6,
  );
  // What one pass of E[x²] − E[x]² gives on the same data, to show the case is adversarial.
  const all = [...noise(6, 64), ...noise(7, 64)].map((v) => 1e6 + v * 1e-4);
  const onePass = all.reduce((a, v) => a + v * v, 0) / all.length - (all.reduce((a, v) => a + v, 0) / all.length) ** 2;
  const exact = twoPass(all).m2 / all.length;
  assert.ok(Math.abs(onePass - exact) / exact > 1e-3, `one pass is visibly wrong here (${onePass} vs ${exact})`);
});

test('Chan merge: one-element and one-row bands, constant bands, many bands in rank order', () => {
  check([[3], [7], [-2], [1e3]], 'one element each');
  check([[5, 5, 5, 5], noise(9, 8), [5]], 'a constant band');
  check(
    Array.from({ length: 37 }, (_, r) => noise(10 + r, 1 + (r % 5)).map((v) => v + r * 100)),
    '37 bands of 1–5 elements',
  );
});

test('Chan merge: slots are independent; mismatched lengths are refused', () => {
  const a = packStatistics(2, [0, 10], [2, 0]);
  const b = packStatistics(2, [2, 10], [2, 0]);
  const m = mergeStatistics([a, b]);
  assert.deepEqual([...m.count], [4, 4]);
  assert.deepEqual([...m.mean], [1, 10]);
  assert.deepEqual([...m.m2], [8, 0]);
  assert.throws(() => mergeStatistics([a, new Float64Array(3)]), /band statistics of 3 values; every band must send 6/);
});

test('scale and shift: x·scale + shift equals the float64 GroupNorm with its affine, per sample and channel', () => {
  const batch = 2;
  const channels = 4;
  const groups = 2;
  const perChannel = 6;
  const x = noise(42, batch * channels * perChannel).map((v, i) => v * (1 + (i % 3)) + Math.floor(i / perChannel));
  const gamma = Float32Array.of(0.5, -1.5, 2, 1);
  const beta = Float32Array.of(0.25, 0, -3, 1);
  const epsilon = 1e-6;
  const perGroup = (channels / groups) * perChannel;
  // Statistics from two bands of every group (first and second half of each channel's positions).
  const band = (half: 0 | 1) => {
    const mean: number[] = [];
    const m2: number[] = [];
    for (let s = 0; s < batch * groups; s++) {
      const values: number[] = [];
      for (let c = 0; c < channels / groups; c++) {
        const base = s * perGroup + c * perChannel + (half * perChannel) / 2;
        values.push(...x.slice(base, base + perChannel / 2));
      }
      const t = twoPass(values);
      mean.push(t.mean);
      m2.push(t.m2);
    }
    return packStatistics(perGroup / 2, mean, m2);
  };
  const { scale, shift } = groupNormAffine(mergeStatistics([band(0), band(1)]), { groups, epsilon, scale: gamma, bias: beta }, batch);
  for (let b = 0; b < batch; b++) {
    for (let g = 0; g < groups; g++) {
      const s = b * groups + g;
      const t = twoPass(x.slice(s * perGroup, (s + 1) * perGroup));
      const inverse = 1 / Math.sqrt(t.m2 / t.n + epsilon);
      for (let c = g * (channels / groups); c < (g + 1) * (channels / groups); c++) {
        for (let p = 0; p < perChannel; p++) {
          const v = x[(b * channels + c) * perChannel + p]!;
          const expected = (v - t.mean) * inverse * gamma[c]! + beta[c]!;
          const got = v * scale[b * channels + c]! + shift[b * channels + c]!;
          assert.ok(Math.abs(got - expected) < 1e-5, `sample ${b} channel ${c}: ${got} vs ${expected}`);
        }
      }
    }
  }
});

test('band statistics: per-row means and M2 merge into each (sample, group) as its float64 two-pass statistics', () => {
  const [batch, channels, rows, cols, groups] = [2, 6, 3, 5, 3];
  const x = noise(77, batch * channels * rows * cols).map(
    (v, i) => v + 50 * (Math.floor(i / cols) % rows) - 20 * (Math.floor(i / (rows * cols)) % channels),
  );
  const mean = new Float32Array(batch * channels * rows);
  const m2 = new Float32Array(batch * channels * rows);
  for (let e = 0; e < mean.length; e++) {
    const t = twoPass(x.slice(e * cols, (e + 1) * cols));
    mean[e] = t.mean;
    m2[e] = t.m2;
  }
  const merged = mergeStatistics([bandStatistics(mean, m2, batch, channels, groups, cols)]);
  const perGroup = (channels / groups) * rows * cols;
  for (let s = 0; s < batch * groups; s++) {
    const t = twoPass(x.slice(s * perGroup, (s + 1) * perGroup));
    assert.equal(merged.count[s], t.n);
    assert.ok(Math.abs(merged.mean[s]! - t.mean) < 1e-5 * Math.max(1, Math.abs(t.mean)), `slot ${s}: mean ${merged.mean[s]} vs ${t.mean}`);
    assert.ok(Math.abs(merged.m2[s]! - t.m2) < 1e-6 * t.m2, `slot ${s}: M2 ${merged.m2[s]} vs ${t.m2}`);
  }
});
