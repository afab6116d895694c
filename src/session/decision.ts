// The plan a decode runs: the memory policy's choice within the budget (docs/design.md §9, §13), or
// an exact request installed as asked — refused over a budget the caller gave, warned about over
// the default one — each with its predicted time, and the tone-drift note when blended tiles run
// on a decoder with GroupNorm or attention. Families without a memory model keep their default plan.

import { extname } from 'node:path';
import { DistVaeError, reason } from '../errors.js';
import type { VaeSpec } from '../families/types.js';
import { planOfTiling } from '../memory/apply.js';
import { formatBytes } from '../runtime/memory-budget.js';
import { MAX_LADDER_ATTEMPTS } from '../memory/ladder.js';
import { checkRequestFits, type BufferLimits } from '../memory/device-limits.js';
import { predictDeviceMemory } from '../memory/device-memory.js';
import { hasMemoryModel, predictMemory, type MemoryPlan, type MemoryPrediction } from '../memory/model.js';
import {
  budgetRefusal,
  chooseWithinBudget,
  describePlan,
  describePrediction,
  peakText,
  toneDrift,
  type ChooseOptions,
  type MemoryBudget,
  type PlanAlternative,
  type ToneDrift,
} from '../memory/policy.js';
import { predictTime, type TimePrediction } from '../memory/time-model.js';
import { tileGrid } from '../plan/grid.js';
import { setTiling } from '../plan/planner.js';
import { latentShapeOf } from '../plan/shapes.js';
import type { SampleShape } from '../plan/shapes.js';
import type { Strategy } from '../strategies/index.js';
import type { DecodeFilesOptions, OptionLabels } from './options.js';

/** What the memory policy decided for a decode (or predicted for an exact request). */
export interface Decision {
  /** The plan decoded (the choice, or the exact request's own plan); null without a memory model. */
  plan: MemoryPlan | null;
  reason: string;
  prediction: MemoryPrediction | null;
  /** The plan's predicted seconds (null without a memory model). */
  time: TimePrediction | null;
  /** The policy's choice (auto only). */
  choice: PlanAlternative | null;
  alternatives: PlanAlternative[];
  /** Blended tiles on a decoder with GroupNorm or attention: the note and the exact plan that fits. */
  toneDrift: ToneDrift | null;
}

/** How the decode's ranks run, for the time model: threads per rank, and whether ranks are separate devices. */
export type RankSetting = Pick<ChooseOptions, 'threads' | 'devices' | 'provider'>;

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
  options: { ranks: number; batch: number; isolated: boolean } & RankSetting & Pick<ChooseOptions, 'strategies' | 'bands' | 'moments'>,
): Decision {
  if (!hasMemoryModel(vae)) {
    setTiling(vae);
    return {
      plan: null,
      reason: `the ${vae.family.name} family has no memory model yet: its default plan`,
      prediction: null,
      time: null,
      choice: null,
      alternatives: [],
      toneDrift: null,
    };
  }
  const result = chooseWithinBudget(vae, sample, budget, { ...options, more: MAX_LADDER_ATTEMPTS });
  if (!result.choice) throw budgetRefusal(result);
  setTiling(vae, result.choice.tiling);
  const chosen = result.choice;
  const first = result.alternatives[0]!;
  // Plans ahead of the choice are over the budget (within a class the faster come first); the
  // next plan of its class that fits is slower, and saying so tells a user why --ranks did not shard.
  const later = result.alternatives.slice(result.alternatives.indexOf(chosen) + 1).filter((a) => a.fits && a.class === chosen.class);
  const faster = later.length ? `; faster than ${describePlan(later[0]!.plan)} (${describePrediction(later[0]!)})` : '';
  const why =
    chosen === first
      ? `${chosen.reason} fits the budget, ${describePrediction(chosen)}${faster}`
      : `${chosen.reason}, ${describePrediction(chosen)}: the first plan that fits in the policy's order (${describePlan(first.plan)} is predicted at ${peakText(first.prediction)})${faster}`;
  const choice = { ...chosen, reason: why };
  return {
    plan: choice.plan,
    reason: why,
    prediction: choice.prediction,
    time: choice.time,
    choice,
    alternatives: result.alternatives.map((a) => (a === chosen ? choice : a)),
    toneDrift: choice.class === 'blended' ? toneDrift(vae, sample, budget, options) : null,
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

/**
 * An exact request's plan and prediction: over a budget the caller gave refused (BUDGET_EXCEEDED),
 * over the default one a warning; a largest tensor over the device's buffer limits (or
 * --max-tensor) is always refused, naming the tensor where the plan has one tile graph.
 */
export function exactRequest(
  vae: VaeSpec,
  sample: SampleShape,
  budget: { budget: MemoryBudget; explicit: boolean; labels: OptionLabels; limits?: BufferLimits | null },
  plan: { strategy: Strategy; ranks: number; batch: number; streamed: boolean; bands?: boolean; moments?: boolean } & RankSetting &
    Pick<ChooseOptions, 'strategies'>,
  warn: (text: string) => void,
): Decision | null {
  if (!hasMemoryModel(vae)) return null;
  const { labels } = budget;
  const requested = planOfTiling(vae, plan.strategy, plan.ranks);
  // --threads where given (else the cores, the CLI's default): a multi-tile decode in this process holds an arena per thread.
  const threads = plan.threads !== undefined ? { threads: plan.threads } : {};
  const bands = plan.bands ? { bands: true } : {};
  const moments = plan.moments ? { moments: true } : {};
  const prediction = predictMemory(vae, requested, sample, {
    batch: plan.batch,
    streamed: plan.streamed,
    ...bands,
    ...moments,
    ...threads,
  });
  // The bound, not the median: a budget is a cap on what the decode measures.
  const over = prediction.boundBytes > budget.budget.bytes;
  const tensorOver = budget.budget.maxTensorBytes !== undefined && prediction.maxTensorBytes > budget.budget.maxTensorBytes;
  if (tensorOver && budget.limits) checkRequestFits(vae, sample, plan.strategy, budget.limits);
  const device = predictDeviceMemory(prediction);
  if (budget.budget.deviceBytes !== undefined && device.peakBytes > budget.budget.deviceBytes) {
    const r = reason(
      'BUDGET_EXCEEDED',
      labels('maxDeviceMemory'),
      budget.budget.deviceBytes,
      `at least ${formatBytes(device.peakBytes)} per GPU rank for ${describePlan(requested)}`,
      `the requested plan (${describePlan(requested)}) does not fit: a GPU rank's device memory is predicted at ${formatBytes(device.peakBytes)}, over ${labels('maxDeviceMemory')} ${formatBytes(budget.budget.deviceBytes)}; drop the plan options to let the memory policy choose one that fits`,
    );
    throw new DistVaeError('BUDGET_EXCEEDED', r.message, { reasons: [r] });
  }
  if ((over && budget.explicit) || tensorOver) {
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
  const time = predictTime(vae, requested, sample, plan);
  // Tiles the user asked for on a decoder with GroupNorm or attention: the same note as the policy's.
  const tiled = requested.strategy === 'tile' && tileGrid(vae, latentShapeOf(vae.geometry, sample), { spatialOnly: true }).tiles.length > 1;
  const drift = tiled ? toneDrift(vae, sample, budget.budget, plan) : null;
  return { plan: requested, reason: 'as requested', prediction, time, choice: null, alternatives: [], toneDrift: drift };
}
