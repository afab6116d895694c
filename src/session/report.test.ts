// The decode report's memory part: the bound the budget was compared with, and the warning a
// decode gets when its measured peak went over its budget anyway (both numbers, never silent).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import { predictMemory } from '../memory/model.js';
import { TINY_KL } from '../ranks/testing/tiny-vae.js';
import { memoryJson, overBudgetWarning } from './report.js';

const prediction = () =>
  predictMemory(
    planningVae('autoencoder-kl', TINY_KL),
    { strategy: 'tile', ranks: 2, window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } },
    { height: 64, width: 64 },
  );

test('a measured peak over the budget (injected) gives a warning with both numbers', () => {
  const p = prediction();
  const budget = { bytes: 600 * 2 ** 20 };
  const json = memoryJson(budget, p, {
    coordinator: 200 * 2 ** 20,
    ranks: [
      { rank: 0, peakRssBytes: 250 * 2 ** 20 },
      { rank: 1, peakRssBytes: 251 * 2 ** 20 },
    ],
  });
  assert.equal(json.measuredPeakBytes, 701 * 2 ** 20);
  assert.equal(json.predictedBoundBytes, p.boundBytes);
  assert.ok(json.warning);
  assert.equal(json.warning.code, 'MEASURED_OVER_BUDGET');
  assert.equal(json.warning.budgetBytes, budget.bytes);
  assert.equal(json.warning.measuredPeakBytes, 701 * 2 ** 20);
  assert.match(json.warning.message, /measured peak 701 MiB exceeded the memory budget of 600 MiB by 16\.8 %/);
});

test('a measured peak within the budget, or none measured, gives no warning', () => {
  const p = prediction();
  const within = memoryJson({ bytes: 701 * 2 ** 20 }, p, { coordinator: 200 * 2 ** 20, ranks: [{ rank: 0, peakRssBytes: 501 * 2 ** 20 }] });
  assert.equal(within.warning, undefined);
  assert.equal(memoryJson({ bytes: 1 }, p).warning, undefined);
  assert.equal(overBudgetWarning(100, null), null);
  assert.equal(overBudgetWarning(100, 100), null);
  assert.equal(overBudgetWarning(100, 101)?.measuredPeakBytes, 101);
});

test('ranks measured without a prediction (row-sharded encodes) are listed with their peaks, after the predicted ones', () => {
  const none = memoryJson({ bytes: 2 ** 30 }, null, {
    coordinator: 100,
    ranks: [{ rank: 0, peakRssBytes: 30 }, { rank: 1, peakRssBytes: 40 }, { rank: 2 }],
  });
  assert.deepEqual(none.ranks, [
    { rank: 0, predictedPeakBytes: null, measuredPeakBytes: 30 },
    { rank: 1, predictedPeakBytes: null, measuredPeakBytes: 40 },
  ]);
  assert.equal(none.measuredPeakBytes, 170);
  // A predicted rank keeps its prediction and is not listed twice.
  const p = prediction();
  const both = memoryJson({ bytes: 2 ** 30 }, p, { coordinator: 100, ranks: [{ rank: 0, peakRssBytes: 30 }] });
  assert.deepEqual(
    both.ranks.map((r) => [r.rank, r.predictedPeakBytes, r.measuredPeakBytes]),
    p.ranks.map((r) => [r.rank, r.peakBytes, r.rank === 0 ? 30 : null]),
  );
});
