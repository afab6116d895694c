import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  TOLERANCE_RULE,
  formatNumber,
  plotScale,
  predictionMatches,
  stageLines,
  tolerance,
  verdict,
  verdictText,
} from './quadratic-model.js';

test('stages reveal x, then x², then a·x²', () => {
  assert.deepEqual(stageLines(1, 1.5, 0), []);
  assert.deepEqual(stageLines(1, 1.5, 1), ['x = 1.5']);
  assert.deepEqual(stageLines(1, 1.5, 3), ['x = 1.5', 'x² = 1.5 × 1.5 = 2.25', 'y = a·x² = 1 × 2.25 = 2.25']);
  assert.deepEqual(stageLines(-2, 3, 9).at(-1), 'y = a·x² = -2 × 9 = -18');
});

test('a prediction matches within 1% of y, or 0.01 when |y| < 1', () => {
  assert.equal(tolerance(2.25), 0.0225);
  assert.equal(tolerance(0.2), 0.01);
  assert.ok(predictionMatches(2.25, 2.25));
  assert.ok(predictionMatches(2.27, 2.25));
  assert.ok(!predictionMatches(2.28, 2.25));
  assert.ok(predictionMatches(0.209, 0.2));
  assert.ok(!predictionMatches(0.211, 0.2));
  assert.ok(predictionMatches(-18.1, -18));
  // The words the page quotes describe this function.
  const [, percent, absolute, below] = /^within (\d+)% of y, or within ([\d.]+) when \|y\| is below (\d+)$/
    .exec(TOLERANCE_RULE)!
    .map(Number);
  for (const y of [-50, -1, -0.5, 0, 0.3, 0.99, 1, 2.25, 400]) {
    assert.equal(tolerance(y), Math.abs(y) < below! ? absolute : (Math.abs(y) * percent!) / 100);
  }
  // 0.1 · 3² is 0.9000000000000001 in floating point; a reader's 0.9 is a match.
  assert.ok(predictionMatches(0.9, 0.1 * 3 * 3));
});

test('the verdict says match, mismatch or no prediction, with y', () => {
  assert.equal(verdictText(verdict(1, 1.5, 2.25)), 'Match: your prediction 2.25 is within ±0.0225 of y = 2.25.');
  assert.equal(verdictText(verdict(1, 1.5, 3)), 'Mismatch: your prediction 3 is off by 0.75 from y = 2.25 (tolerance ±0.0225).');
  assert.equal(verdictText(verdict(1, 1.5, null)), 'y = 2.25. No prediction was written.');
  assert.equal(formatNumber(1 / 3), '0.333333');
});

test('the plot holds the point, the prediction and y = 0', () => {
  const s = plotScale(1, 1.5, 3);
  assert.ok(s.xMin < -1.5 && s.xMax > 1.5);
  assert.ok(s.yMin < 0 && s.yMax > 4);
  const flat = plotScale(0, 1, null);
  assert.ok(flat.yMax > flat.yMin);
  const down = plotScale(-1, 4, null);
  assert.ok(down.yMin < -16 && down.yMax > 0);
});
