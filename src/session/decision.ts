// The plan a decode runs: the memory policy's choice within the budget (docs/design.md §9), or an
// exact request installed as asked — refused over a budget the caller gave, warned about over the
// default one. Families without a memory model keep their default plan.

import { extname } from 'node:path';
import { DistVaeError, reason } from '../errors.js';
import type { VaeSpec } from '../families/types.js';
import { planOfTiling } from '../memory/apply.js';
import { formatBytes } from '../runtime/memory-budget.js';
import { MAX_LADDER_ATTEMPTS } from '../memory/ladder.js';
import { hasMemoryModel, predictMemory, type MemoryPlan, type MemoryPrediction } from '../memory/model.js';
import { budgetRefusal, chooseWithinBudget, describePlan, peakText, type MemoryBudget, type PlanAlternative } from '../memory/policy.js';
import { setTiling } from '../plan/planner.js';
import type { SampleShape } from '../plan/shapes.js';
import type { Strategy } from '../strategies/index.js';
import type { DecodeFilesOptions, OptionLabels } from './options.js';

/** What the memory policy decided for a decode (or predicted for an exact request). */
export interface Decision {
  /** The plan decoded (the choice, or the exact request's own plan); null without a memory model. */
  plan: MemoryPlan | null;
  reason: string;
  prediction: MemoryPrediction | null;
  /** The policy's choice (auto only). */
  choice: PlanAlternative | null;
  alternatives: PlanAlternative[];
}

/** The strategy that decodes a memory plan (a whole decode is one blended tile). */
export function strategyOf(plan: MemoryPlan): Strategy {
  return plan.strategy === 'whole' ? 'tile' : plan.strategy;
}

/** Whether a planned decode to `out` is written band by band (a single image to PNG, any image batch to .npy). */
export function streamsBands(vae: VaeSpec, out: string, batch: number): boolean {
  const ext = extname(out).toLowerCase();
  return !vae.geometry.fiveDimLatents && (ext === '.npy' || (ext === '.png' && batch === 1));
}

/** The memory policy's choice for a decode without plan options, installed on `vae`; the family default without a memory model. */
export function decide(
  vae: VaeSpec,
  sample: SampleShape,
  budget: MemoryBudget,
  options: { ranks: number; batch: number; isolated: boolean },
): Decision {
  if (!hasMemoryModel(vae)) {
    setTiling(vae);
    return {
      plan: null,
      reason: `the ${vae.family.name} family has no memory model yet: its default plan`,
      prediction: null,
      choice: null,
      alternatives: [],
    };
  }
  const result = chooseWithinBudget(vae, sample, budget, { ...options, more: MAX_LADDER_ATTEMPTS });
  if (!result.choice) throw budgetRefusal(result);
  setTiling(vae, result.choice.tiling);
  const first = result.alternatives[0]!;
  const why =
    result.choice === first
      ? `${result.choice.reason} fits the budget`
      : `${result.choice.reason}: the first plan that fits (${describePlan(first.plan)} is predicted at ${peakText(first.prediction)})`;
  const choice = { ...result.choice, reason: why };
  return {
    plan: choice.plan,
    reason: why,
    prediction: choice.prediction,
    choice,
    alternatives: result.alternatives.map((a) => (a === result.choice ? choice : a)),
  };
}

/**
 * Installs the tile plan an exact request asks for (`setTiling`: refused as the planner refuses,
 * never rounded). No window/overlap: the family's default plan with tiling on (diffusers' own
 * behaviour); `full`: no tiling at all.
 */
export function installRequestedTiling(
  vae: VaeSpec,
  options: Pick<DecodeFilesOptions, 'full' | 'window' | 'overlap' | 'frameWindow' | 'frameOverlap' | 'frameTiling'>,
  sample?: SampleShape,
): void {
  if (options.full === true) return setTiling(vae, 'off');
  const { window, overlap, frameWindow, frameOverlap } = options;
  const current = vae.tiling.frames;
  const frames =
    options.frameTiling === false
      ? null
      : frameWindow !== undefined || frameOverlap !== undefined
        ? { window: frameWindow ?? current?.window ?? 0, overlap: frameOverlap ?? current?.overlap ?? 0 }
        : undefined;
  setTiling(vae, {
    ...(window ? { window } : {}),
    ...(overlap ? { overlap } : {}),
    ...(frames !== undefined ? { frames } : {}),
    ...(sample ? { sampleShape: sample } : {}),
  });
}

/** An exact request's plan and prediction: over a budget the caller gave refused (BUDGET_EXCEEDED), over the default one a warning. */
export function exactRequest(
  vae: VaeSpec,
  sample: SampleShape,
  budget: { budget: MemoryBudget; explicit: boolean; labels: OptionLabels },
  plan: { strategy: Strategy; ranks: number; batch: number; streamed: boolean },
  warn: (text: string) => void,
): Decision | null {
  if (!hasMemoryModel(vae)) return null;
  const { labels } = budget;
  const requested = planOfTiling(vae, plan.strategy, plan.ranks);
  const prediction = predictMemory(vae, requested, sample, { batch: plan.batch, streamed: plan.streamed });
  // The bound, not the median: a budget is a cap on what the decode measures.
  const over = prediction.boundBytes > budget.budget.bytes;
  const tensorOver = budget.budget.maxTensorBytes !== undefined && prediction.maxTensorBytes > budget.budget.maxTensorBytes;
  if ((over || tensorOver) && budget.explicit) {
    const what = tensorOver
      ? `its largest tensor is predicted at ${formatBytes(prediction.maxTensorBytes)}, over ${labels('maxTensor')} ${formatBytes(budget.budget.maxTensorBytes!)}`
      : `its predicted peak is ${peakText(prediction)}, over ${labels('maxMemory')} ${formatBytes(budget.budget.bytes)}`;
    const r = reason(
      'BUDGET_EXCEEDED',
      labels('maxMemory'),
      budget.budget.bytes,
      `at least ${formatBytes(prediction.boundBytes)} for ${describePlan(requested)}`,
      `the requested plan (${describePlan(requested)}) does not fit: ${what}; drop the plan options to let the memory policy choose one that fits`,
    );
    throw new DistVaeError('BUDGET_EXCEEDED', r.message, { reasons: [r] });
  }
  if (over)
    warn(
      `warning: the requested plan (${describePlan(requested)}) is predicted to peak at ${peakText(prediction)}, over the default memory budget of ${formatBytes(budget.budget.bytes)}; decoding as asked`,
    );
  return { plan: requested, reason: 'as requested', prediction, choice: null, alternatives: [] };
}
