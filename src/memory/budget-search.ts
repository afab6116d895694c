// Plan search within a memory budget: the pure search (plan/search.ts) with the memory model as its
// admission test, so candidates over the budget are dropped before the frontier is taken and every
// pick carries its predicted peak. Nothing fitting is a refusal naming the smallest plan there is.

import type { VaeSpec } from '../families/types.js';
import { searchPlans, type SearchCandidate, type SearchResult } from '../plan/search.js';
import type { SampleShape } from '../plan/shapes.js';
import { predictMemory, type MemoryModelOptions, type MemoryPlan, type MemoryPrediction } from './model.js';
import { budgetRefusal, chooseWithinBudget, fitsBudget, namedAlternative, type MemoryBudget } from './policy.js';

/** A search candidate with the memory model's prediction for it (blended tiles on the search's ranks). */
export interface BudgetedCandidate extends SearchCandidate {
  plan: MemoryPlan;
  prediction: MemoryPrediction;
}

/** What `searchWithinBudget` found: the search over the candidates that fit, with their predictions. */
export interface BudgetedSearch {
  /** Null: no budget was given, nothing was dropped (the predictions only annotate). */
  budget: MemoryBudget | null;
  /** How many candidates met the search's geometric constraints. */
  candidates: number;
  /** How many of the candidates the memory model was asked about were over the budget. */
  overBudget: number;
  /** Undominated candidates among those that fit, largest window first; each with its prediction under a budget. */
  frontier: (SearchCandidate | BudgetedCandidate)[];
  /** Each with its prediction; missing only when no candidate fits (or the search has none). */
  picks: { coarse: BudgetedCandidate | null; balanced: BudgetedCandidate | null; fine: BudgetedCandidate | null };
}

/**
 * Searches plans (see `searchPlans`) whose predicted peak fits `budget`; null: every candidate,
 * and only the picks are predicted — the memory model reads each window's tile graphs, seconds a
 * window at megapixel sizes, so under a budget only candidates no admitted one dominates are
 * asked. Throws BUDGET_EXCEEDED
 * when no candidate fits, naming the smallest searched grid's peak and then the memory policy's
 * choice that fits (a plan outside the search's 2..4·R tiles) or the smallest plan there is.
 */
export function searchWithinBudget(
  vae: VaeSpec,
  sample: SampleShape,
  ranks: number,
  budget: MemoryBudget | null,
  options: MemoryModelOptions = {},
): BudgetedSearch {
  const predict = (c: SearchCandidate): BudgetedCandidate => {
    const plan: MemoryPlan = { strategy: 'tile', ranks, window: { ...c.window }, overlap: { ...c.overlap } };
    return { ...c, plan, prediction: predictMemory(vae, plan, sample, options) };
  };
  const predicted = new Map<SearchCandidate, BudgetedCandidate>();
  let overBudget = 0;
  let smallest = null as BudgetedCandidate | null;
  const admit = (c: SearchCandidate): boolean => {
    const p = predict(c);
    if (budget && !fitsBudget(p.prediction, budget)) {
      overBudget++;
      if (!smallest || p.prediction.peakBytes < smallest.prediction.peakBytes) smallest = p;
      return false;
    }
    predicted.set(c, p);
    return true;
  };
  const result: SearchResult = searchPlans(vae, sample, ranks, budget ? { admit } : {});
  if (budget && smallest && result.frontier.length === 0) {
    const over = namedAlternative(vae, smallest.plan, sample, smallest.prediction, budget, 'the smallest searched grid', options);
    throw budgetRefusal(chooseWithinBudget(vae, sample, budget, { ...options, ranks, more: Infinity }), over);
  }
  const budgeted = (c: SearchCandidate | null): BudgetedCandidate | null => {
    if (c && !predicted.has(c)) predicted.set(c, predict(c));
    return c ? predicted.get(c)! : null;
  };
  const picks = { coarse: budgeted(result.picks.coarse), balanced: budgeted(result.picks.balanced), fine: budgeted(result.picks.fine) };
  return {
    budget,
    candidates: result.candidates,
    overBudget,
    frontier: result.frontier.map((c) => predicted.get(c) ?? c),
    picks,
  };
}
