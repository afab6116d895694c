// --max-memory / --max-tensor: the memory budget of a command (plan, decode, worker, bench), read
// into a MemoryBudget, with whether it was given (a hard cap) or is the default (80 % of what this
// process tree may use: a warning only, for exact requests). And the JSON both `plan` and
// `decode` report: `memory` and `choice`.

import {
  defaultMemoryBudget,
  parseMemorySize,
  type MemoryBudget,
  type MemoryPlan,
  type MemoryPrediction,
  type PlanAlternative,
} from '../index.js';
import type { Args, OptionSpec } from './args.js';

export const MEMORY_OPTIONS: OptionSpec[] = [
  {
    name: 'max-memory',
    kind: 'string',
    value: 'SIZE',
    description:
      'memory budget of the coordinator and all its local ranks together (1.5GiB, 800MiB, bytes): the best plan that fits; an exact request over it is refused',
    defaultText: '80% of the memory this process tree may use (cgroup limit, else MemAvailable); over it, exact requests only warn',
  },
  {
    name: 'max-tensor',
    kind: 'string',
    value: 'SIZE',
    description: "largest single tensor a plan may allocate (WebGPU buffer limits, onnxruntime's 2 GiB tensors)",
  },
];

export interface BudgetOption {
  budget: MemoryBudget;
  /** True when --max-memory was given: the budget is a hard cap. */
  explicit: boolean;
}

export function readBudgetOptions(args: Args): BudgetOption {
  const text = args.string('max-memory');
  const tensor = args.string('max-tensor');
  args.done();
  const bytes = text === undefined ? defaultMemoryBudget() : parseMemorySize(text, '--max-memory');
  const maxTensorBytes = tensor === undefined ? undefined : parseMemorySize(tensor, '--max-tensor');
  return {
    budget: { bytes, ...(maxTensorBytes !== undefined ? { maxTensorBytes } : {}) },
    explicit: text !== undefined || tensor !== undefined,
  };
}

/** `choice` of the JSON reports. */
export function choiceJson(plan: MemoryPlan, reason: string): Record<string, unknown> {
  return {
    strategy: plan.strategy,
    window: plan.window ?? null,
    overlap: plan.overlap ?? null,
    frames: plan.frames ?? null,
    ranks: plan.ranks,
    reason,
  };
}

/** `memory` of the JSON reports (measured where known). */
export function memoryJson(
  budget: MemoryBudget,
  prediction: MemoryPrediction | null,
  measured?: { coordinator: number | null; ranks: { rank: number; peakRssBytes?: number }[] },
): Record<string, unknown> {
  const rankMeasured = new Map((measured?.ranks ?? []).map((r) => [r.rank, r.peakRssBytes]));
  const total =
    measured && measured.coordinator !== null
      ? measured.coordinator + [...rankMeasured.values()].reduce<number>((s, v) => s + (v ?? 0), 0)
      : null;
  return {
    budgetBytes: budget.bytes,
    ...(budget.maxTensorBytes !== undefined ? { maxTensorBytes: budget.maxTensorBytes } : {}),
    predictedPeakBytes: prediction?.peakBytes ?? null,
    predictedMaxTensorBytes: prediction?.maxTensorBytes ?? null,
    measuredPeakBytes: total,
    coordinator: { predictedPeakBytes: prediction?.coordinatorBytes ?? null, measuredPeakBytes: measured?.coordinator ?? null },
    ranks: (prediction?.ranks ?? []).map((r) => ({
      rank: r.rank,
      predictedPeakBytes: r.peakBytes,
      measuredPeakBytes: rankMeasured.get(r.rank) ?? null,
    })),
  };
}

/** One alternative of `plan --max-memory`. */
export function alternativeJson(alt: PlanAlternative): Record<string, unknown> {
  return {
    ...choiceJson(alt.plan, alt.reason),
    predictedPeakBytes: alt.prediction.peakBytes,
    predictedMaxTensorBytes: alt.prediction.maxTensorBytes,
    fits: alt.fits,
  };
}
