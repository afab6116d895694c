// What a decode reports, as data: the object `distvae decode --json` prints for each latent file
// (shape, tiles, time, what each rank did, the memory predicted and measured, the plan chosen and
// why, the fallback attempts, the files written), and the `memory` / `choice` parts `distvae plan`
// reports too.

import type { DecodeProgress, RankStats } from '../decode/types.js';
import type { LadderAttempt } from '../memory/ladder.js';
import type { MemoryPlan, MemoryPrediction } from '../memory/model.js';
import type { MemoryBudget, PlanAlternative, PlanClass, ToneDrift } from '../memory/policy.js';
import type { RankFailure } from '../ranks/group.js';
import type { CommCounters } from '../ranks/program.js';
import { formatBytes } from '../runtime/memory-budget.js';
import type { Strategy } from '../strategies/index.js';
import type { Precision } from '../graph/precision.js';

/** A plan as the reports show it. */
export interface ChoiceReport {
  strategy: MemoryPlan['strategy'];
  window: MemoryPlan['window'] | null;
  overlap: MemoryPlan['overlap'] | null;
  frames: MemoryPlan['frames'] | null;
  ranks: number;
  /** Intra-op threads per rank the plan sets (the whole decode for R ranks of one machine: R × --threads); null: the decode's own. */
  threads: number | null;
  /** Why this plan: the policy's reason, or 'as requested'. */
  reason: string;
  /** The time model's predicted seconds (time-model.ts); null where the family has no memory model. */
  predictedSeconds: number | null;
}

/** Memory of a decode: the budget, the peaks predicted and, after a decode, measured (null where unknown). */
export interface MemoryReport {
  budgetBytes: number;
  maxTensorBytes?: number;
  predictedPeakBytes: number | null;
  /** The bound of the measured peak the budget was compared with (predictedPeakBytes × the calibration's boundFactor). */
  predictedBoundBytes: number | null;
  predictedMaxTensorBytes: number | null;
  /** The coordinator's peak RSS plus each rank process's (process isolation). */
  measuredPeakBytes: number | null;
  coordinator: { predictedPeakBytes: number | null; measuredPeakBytes: number | null };
  /** The predicted ranks, then any rank measured without a prediction (a row-sharded or halo-exact encode: predictedPeakBytes null). */
  ranks: { rank: number; predictedPeakBytes: number | null; measuredPeakBytes: number | null }[];
  /** Present when the measured peak exceeded the budget anyway: said, never silent. */
  warning?: OverBudgetWarning;
}

/** A decode whose measured peak went over its budget (the bound did not hold for it). */
export interface OverBudgetWarning {
  code: 'MEASURED_OVER_BUDGET';
  budgetBytes: number;
  measuredPeakBytes: number;
  message: string;
}

/** The warning for a measured peak over the budget, or null when it stayed within (or was not measured). */
export function overBudgetWarning(budgetBytes: number, measuredPeakBytes: number | null): OverBudgetWarning | null {
  if (measuredPeakBytes === null || measuredPeakBytes <= budgetBytes) return null;
  const over = (100 * (measuredPeakBytes - budgetBytes)) / budgetBytes;
  return {
    code: 'MEASURED_OVER_BUDGET',
    budgetBytes,
    measuredPeakBytes,
    message: `warning: the decode's measured peak ${formatBytes(measuredPeakBytes)} exceeded the memory budget of ${formatBytes(budgetBytes)} by ${over.toFixed(1)} % (the memory model's bound did not hold for this decode)`,
  };
}

/** What decoding one latent file did: the object `distvae decode --json` prints. */
export interface DecodeReport {
  /** Shape of the decoded sample. */
  shape: readonly number[];
  /** Tiles decoded over all temporal chunks (0 for row sharding). */
  tiles: number;
  /** Decode time in seconds, without loading the VAE. */
  seconds: number;
  /** Every rank with its tiles, load and time (and band and collectives when row-sharded). */
  ranks: RankStats[];
  /** The strategy that decoded. */
  strategy: Strategy;
  /**
   * The execution provider the local ranks decoded on (cpu, webgpu, …); absent for a queue decode,
   * whose workers choose their own.
   */
  provider?: string;
  /**
   * A GPU provider's device of each entry of `ranks`, in order (webgpu: the adapter id of
   * `distvae devices` the rank process was pinned to; 0 is the default adapter).
   */
  devices?: number[];
  /**
   * A GPU provider's device memory: each decoding rank's predicted device peak (memory/device-memory.ts)
   * with the device it ran on, and the cap (`maxDeviceMemory`) where given.
   */
  deviceMemory?: { limitBytes: number | null; ranks: { rank: number; device: number; predictedBytes: number }[] };
  /** The precision the local ranks decoded in (fp16 only where asked and the config's force_upcast allowed it); absent with provider. */
  precision?: Precision;
  /** Row sharding: the bands, and the collectives summed over the ranks. */
  bands?: number;
  collectives?: CommCounters;
  /** Ranks lost during the decode whose tiles the others decoded. */
  failures?: RankFailure[];
  /** The ranks asked for, when given (fewer may have started). */
  ranksRequested?: number;
  /** Sentences worth telling a user (ranks never started, the raster fallback, the halo used). */
  note?: string;
  memory: MemoryReport;
  /** The plan decoded and why (families with a memory model). */
  choice?: ChoiceReport;
  /** The policy's plans it weighed, in its order, each with its predicted peak and seconds (the policy's choice only). */
  alternatives?: AlternativeReport[];
  /** Blended tiles on a decoder with GroupNorm or attention: tone may shift at the seams; the exact plan that fits instead. */
  toneDrift?: ToneDrift;
  /** The fallback ladder's attempts, when one ran out of memory. */
  attempts?: LadderAttempt[];
  /** The files written. */
  files: string[];
}

/** Progress of a decodeFiles call: which file, and its tiles. */
export interface FileProgress extends DecodeProgress {
  /** Index of the latent file being decoded. */
  file: number;
}

/** `choice` of the reports. */
export function choiceJson(plan: MemoryPlan, reason: string, predictedSeconds: number | null = null): ChoiceReport {
  return {
    strategy: plan.strategy,
    window: plan.window ?? null,
    overlap: plan.overlap ?? null,
    frames: plan.frames ?? null,
    ranks: plan.ranks,
    threads: plan.threads ?? null,
    reason,
    predictedSeconds,
  };
}

/** One of the policy's plans as the reports list it. */
export interface AlternativeReport extends ChoiceReport {
  class: PlanClass;
  predictedPeakBytes: number;
  predictedMaxTensorBytes: number;
  predictedSeconds: number;
  fits: boolean;
}

/** `memory` of the reports (measured where known). */
export function memoryJson(
  budget: MemoryBudget,
  prediction: MemoryPrediction | null,
  measured?: { coordinator: number | null; ranks: { rank: number; peakRssBytes?: number }[] },
): MemoryReport {
  const rankMeasured = new Map((measured?.ranks ?? []).map((r) => [r.rank, r.peakRssBytes]));
  const total =
    measured && measured.coordinator !== null
      ? measured.coordinator + [...rankMeasured.values()].reduce<number>((s, v) => s + (v ?? 0), 0)
      : null;
  const warning = overBudgetWarning(budget.bytes, total);
  const predicted = prediction?.ranks ?? [];
  return {
    budgetBytes: budget.bytes,
    ...(budget.maxTensorBytes !== undefined ? { maxTensorBytes: budget.maxTensorBytes } : {}),
    predictedPeakBytes: prediction?.peakBytes ?? null,
    predictedBoundBytes: prediction?.boundBytes ?? null,
    predictedMaxTensorBytes: prediction?.maxTensorBytes ?? null,
    measuredPeakBytes: total,
    coordinator: { predictedPeakBytes: prediction?.coordinatorBytes ?? null, measuredPeakBytes: measured?.coordinator ?? null },
    ranks: [
      ...predicted.map((r) => ({ rank: r.rank, predictedPeakBytes: r.peakBytes, measuredPeakBytes: rankMeasured.get(r.rank) ?? null })),
      // Strategies the model does not predict still had rank processes whose peaks were measured: listed, never dropped.
      ...[...rankMeasured]
        .filter(([rank, peak]) => peak !== undefined && !predicted.some((r) => r.rank === rank))
        .map(([rank, peak]) => ({ rank, predictedPeakBytes: null, measuredPeakBytes: peak ?? null })),
    ],
    ...(warning ? { warning } : {}),
  };
}

/** One alternative of the policy's ranked plans, with its predictions. */
export function alternativeJson(alt: PlanAlternative): AlternativeReport {
  return {
    ...choiceJson(alt.plan, alt.reason),
    class: alt.class,
    predictedSeconds: alt.time.seconds,
    predictedPeakBytes: alt.prediction.peakBytes,
    predictedMaxTensorBytes: alt.prediction.maxTensorBytes,
    fits: alt.fits,
  };
}
