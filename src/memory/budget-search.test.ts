// Plan search within a budget: candidates over the budget are dropped before the frontier is
// taken (a plan an over-budget candidate dominated comes back), every pick carries its predicted
// peak, and nothing fitting is a refusal naming the smallest plan there is, not only the grids searched.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TINY_KL } from '../ranks/testing/tiny-vae.js';
import { DistVaeError } from '../errors.js';
import { planningVae } from '../families/registry.js';
import { paretoFrontier, searchPlans, type SearchCandidate } from '../plan/search.js';
import { searchWithinBudget, type BudgetedCandidate } from './budget-search.js';
import { predictMemory } from './model.js';
import { chooseWithinBudget, describePlan, fitsBudget } from './policy.js';

const kl = () => planningVae('autoencoder-kl', TINY_KL);
const SAMPLE = { height: 192, width: 256 }; // latent 96 x 128 at the tiny VAE's 2x ratio
const RANKS = 2;
const key = (c: SearchCandidate) => `${c.window.height}x${c.window.width}/${c.overlap.height}x${c.overlap.width}`;

test('without a budget the search is unchanged and its picks carry their predicted peaks', () => {
  const plain = searchPlans(kl(), SAMPLE, RANKS);
  const annotated = searchWithinBudget(kl(), SAMPLE, RANKS, null);
  assert.deepEqual(annotated.frontier.map(key), plain.frontier.map(key));
  assert.equal(annotated.overBudget, 0);
  for (const pick of Object.values(annotated.picks)) assert.ok(pick!.prediction.peakBytes > 0);
});

test('a budget drops candidates before the frontier: the frontier is the undominated set of those that fit', () => {
  const vae = kl();
  const all = searchWithinBudget(vae, SAMPLE, RANKS, null);
  // A budget just under the coarse pick's bound (what a budget is compared with): it and every candidate at least as large drop out.
  const budget = { bytes: all.picks.coarse!.prediction.boundBytes - 1 };
  const fitted = searchWithinBudget(vae, SAMPLE, RANKS, budget);
  assert.ok(fitted.overBudget > 0);
  const frontier = fitted.frontier as BudgetedCandidate[];
  assert.ok(frontier.length > 0);
  for (const c of frontier) assert.ok(c.prediction.boundBytes <= budget.bytes, key(c));
  for (const pick of Object.values(fitted.picks)) if (pick) assert.ok(pick.prediction.boundBytes <= budget.bytes);
  assert.notEqual(key(fitted.picks.coarse!), key(all.picks.coarse!));
  // Reference: every candidate (an admission refusing all is asked about each), those whose
  // prediction fits, and their Pareto frontier.
  const every: SearchCandidate[] = [];
  searchPlans(vae, SAMPLE, RANKS, { admit: (c) => (every.push({ ...c }), false) });
  const fitting = every.filter((c) =>
    fitsBudget(predictMemory(vae, { strategy: 'tile', ranks: RANKS, window: c.window, overlap: c.overlap }, SAMPLE), budget),
  );
  assert.deepEqual(frontier.map(key), paretoFrontier(fitting).map(key));
  // Filtering after the frontier would have lost these: dominated only by plans over the budget.
  const before = new Set(all.frontier.map(key));
  assert.ok(frontier.some((c) => !before.has(key(c))));
});

test('nothing fitting refuses, naming the smallest searched grid and the policy plan that fits (or the smallest there is)', () => {
  const vae = kl();
  const all = searchWithinBudget(vae, SAMPLE, RANKS, null);
  const peaks = (all.frontier as BudgetedCandidate[]).map((c) => c.prediction?.boundBytes ?? Infinity);
  const smallestPick = Math.min(...Object.values(all.picks).map((p) => p!.prediction.boundBytes), ...peaks);
  const policy = chooseWithinBudget(vae, SAMPLE, { bytes: 1 }, { ranks: RANKS, more: Infinity });
  // A budget under every searched grid but over the policy's smallest plan (more tiles than 4·R).
  const between = { bytes: policy.smallest.prediction.boundBytes };
  assert.ok(between.bytes < smallestPick);
  assert.throws(
    () => searchWithinBudget(vae, SAMPLE, RANKS, between),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'BUDGET_EXCEEDED' &&
      /the smallest searched grid .* the memory policy's choice fits/.test(e.message),
  );
  assert.throws(
    () => searchWithinBudget(vae, SAMPLE, RANKS, { bytes: 1 }),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'BUDGET_EXCEEDED' &&
      e.message.includes(`the smallest predicted peak is`) &&
      e.message.includes(describePlan(policy.smallest.plan)),
  );
});
