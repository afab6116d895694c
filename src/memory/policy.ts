// The memory policy: the plans a decode may take, in the order of preference, each with its
// predicted peak and seconds, and the first one that fits a budget. Plans come in classes of
// exactness — exact (the whole decode, or row sharding on R ranks), then halo-exact tiles (local
// decoders), then blended tiles — and within a class the fastest first by the time model
// (time-model.ts); ties keep the expected agreement (the largest window by its shorter side, then
// area, then fewest seams, then least decoded area). With R ranks sharing one machine's cores, the
// whole decode is one rank with R × the threads per rank, so it competes with row sharding on
// time (docs/design.md §13). The same order is the fallback ladder when an attempt runs out of
// memory anyway.

import { DistVaeError, reason } from '../errors.js';
import type { Size2, VaeSpec } from '../families/types.js';
import { explainTileOverlapPlan, explainTileShapePlan, type TilingRequest } from '../plan/planner.js';
import { axisOptions, type AxisOption } from '../plan/search.js';
import { latentShapeOf, type SampleShape } from '../plan/shapes.js';
import { formatBytes } from '../runtime/memory-budget.js';
import { tilingOfPlan } from './apply.js';
import { CALIBRATIONS } from './calibration.js';
import { predictDeviceMemory } from './device-memory.js';
import { analyzeLocality } from '../graph/locality.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import {
  decoderGraphOf,
  exactHaloOf,
  hasMemoryModel,
  predictMemory,
  shardable,
  type MemoryModelOptions,
  type MemoryPlan,
  type MemoryPrediction,
} from './model.js';
import { formatSeconds, predictTime, type TimeModelOptions, type TimePrediction } from './time-model.js';
import { hostCores } from '../runtime/host-memory.js';
import type { Strategy } from '../strategies/index.js';

/** A memory budget: total resident bytes of the coordinator and its local ranks, and optionally the largest single tensor. */
export interface MemoryBudget {
  bytes: number;
  /** Largest single allocation allowed (WebGPU buffer limits, onnxruntime's 2 GiB tensors). */
  maxTensorBytes?: number;
  /** Device memory each GPU rank may use (device-memory.ts' prediction), where capped. */
  deviceBytes?: number;
}

/** How exact a plan is: the policy's classes, in order. */
export type PlanClass = 'exact' | 'halo-exact' | 'blended';

/** One plan of the policy with its predicted memory and time and whether it fits. */
export interface PlanAlternative {
  plan: MemoryPlan;
  prediction: MemoryPrediction;
  /** Predicted seconds of the decode (time-model.ts). */
  time: TimePrediction;
  /** Its class of exactness. */
  class: PlanClass;
  fits: boolean;
  /** The tiling that carries the plan out: `setTiling(vae, alternative.tiling)` installs it. */
  tiling: TilingRequest | 'off';
  /** Why this plan is where it is in the order (and, once chosen, why it was taken). */
  reason: string;
}

/** What the memory policy chose within a budget, and the alternatives it evaluated. */
export interface BudgetChoice {
  /** The first alternative that fits; null when none does. */
  choice: PlanAlternative | null;
  /** Alternatives evaluated, in policy order (up to the choice, then `more` beyond it). */
  alternatives: PlanAlternative[];
  /** The alternative with the smallest predicted peak among those evaluated. */
  smallest: PlanAlternative;
  budget: MemoryBudget;
}

/**
 * The memory model's options of a choice: a GPU provider's host memory has no calibration of its
 * own yet, so its host peak is the CPU's prediction (the device side is device-memory.ts'); the
 * provider still prices the time model.
 */
function hostMemoryOptions(options: ChooseOptions): ChooseOptions {
  if (options.provider === undefined || Object.hasOwn(CALIBRATIONS, options.provider)) return options;
  const { provider: _provider, ...rest } = options;
  return rest;
}

/** Options of `chooseWithinBudget`. */
export interface ChooseOptions extends MemoryModelOptions, Omit<TimeModelOptions, 'provider' | 'batch'> {
  /** Local ranks available (default 1). */
  ranks?: number;
  batch?: number;
  /** Alternatives to evaluate past the choice (for listings); default 0. */
  more?: number;
  /** Run every attempt in rank processes (a fallback ladder), so a one-rank plan counts a rank process. */
  isolated?: boolean;
  /**
   * The strategies the engine can run for this VAE's half (default: every one): an encode that
   * samples, or a video encoder's, takes only 'tile' (session/encode-file.ts `policyStrategies`).
   */
  strategies?: readonly Strategy[];
}

/** Whether the engine runs `strategy` for the choice (ChooseOptions.strategies). */
function offers(options: Pick<ChooseOptions, 'strategies'>, strategy: Strategy): boolean {
  return options.strategies === undefined || options.strategies.includes(strategy);
}

/**
 * Whether row sharding can run this decoder or encoder on `ranks` ranks: image latents, a latent
 * row per rank, and a graph the shard plan builds on (model.ts `shardable`: an encoder whose
 * nonlocal ops are not sync regions is left to the other classes).
 */
function canShard(vae: VaeSpec, sample: SampleShape, ranks: number): boolean {
  if (vae.geometry.fiveDimLatents) return false;
  return latentShapeOf(vae.geometry, sample).height >= ranks && shardable(vae);
}

function windowReasons(vae: VaeSpec, window: Size2, overlap: Size2, sample: SampleShape): boolean {
  const options = { sampleShape: sample };
  if (explainTileShapePlan(vae, window.height, window.width, options).length > 0) return false;
  const probe: VaeSpec = {
    family: vae.family,
    config: vae.config,
    geometry: vae.geometry,
    tiling: { ...vae.tiling, window: { ...window } },
  };
  return explainTileOverlapPlan(probe, overlap.height, overlap.width, options).length === 0;
}

/** Tiles per axis the policy goes down to (a 2048-px SD image: 16-px tiles of 128 px). */
export const MAX_TILES_PER_AXIS = 16;

/** Per axis, the smallest window (least decoded area) for each tile count up to MAX_TILES_PER_AXIS. */
function perCount(options: readonly AxisOption[]): AxisOption[] {
  const best = new Map<number, AxisOption>();
  for (const o of options)
    if (o.count <= MAX_TILES_PER_AXIS && (!best.has(o.count) || o.window < best.get(o.count)!.window)) best.set(o.count, o);
  return [...best.values()];
}

interface TileCandidate {
  window: Size2;
  overlap: Size2;
  /** Shorter side of the effective window (latent units): the context every tile sees. */
  side: number;
  area: number;
  seams: number;
  decoded: number;
  tiles: number;
}

/**
 * Tiled plans (more than one tile) in order of expected agreement: the largest window — by its
 * shorter side first (a 192-px strip sees less context than a 512-px square of the same area),
 * then its area — then the fewest seams, ties to the least decoded area.
 */
export function tileCandidates(vae: VaeSpec, sample: SampleShape, options: { overlap?: boolean } = {}): TileCandidate[] {
  const latent = latentShapeOf(vae.geometry, sample);
  const r = vae.geometry.spatialRatio;
  const min = vae.family.minWindowLatent;
  const rows = perCount(axisOptions(latent.height, min));
  const cols = perCount(axisOptions(latent.width, min));
  const out: TileCandidate[] = [];
  for (const h of rows) {
    for (const w of cols) {
      if (h.count * w.count < 2) continue;
      const window = { height: h.window * r, width: w.window * r };
      const overlap = options.overlap === false ? { height: 0, width: 0 } : { height: h.overlap * r, width: w.overlap * r };
      if (!windowReasons(vae, window, overlap, sample)) continue;
      out.push({
        window,
        overlap,
        side: Math.min(h.maxExtent, w.maxExtent),
        area: h.maxExtent * w.maxExtent,
        seams: w.count * (h.count - 1) + h.count * (w.count - 1),
        decoded: h.extentSum * w.extentSum,
        tiles: h.count * w.count,
      });
    }
  }
  return out.sort((a, b) => b.side - a.side || b.area - a.area || a.seams - b.seams || a.decoded - b.decoded);
}

/** A plan of the policy before its memory is predicted: its class, predicted time and why it is there. */
export interface PolicyPlan {
  plan: MemoryPlan;
  class: PlanClass;
  time: TimePrediction;
  reason: string;
}

/**
 * The policy's plans in order: by class (exact, halo-exact, blended), within a class the fastest
 * first (ties in the order given: expected agreement). Times are cheap (an area fit per
 * architecture); memory is predicted only for what `chooseWithinBudget` reads.
 */
export function* policyPlans(vae: VaeSpec, sample: SampleShape, options: ChooseOptions = {}): Generator<PolicyPlan> {
  const ranks = options.ranks ?? 1;
  const isolated = options.isolated === true;
  const cores = options.cores ?? hostCores();
  const timeOptions: TimeModelOptions = { ...options, cores, ...(options.batch !== undefined ? { batch: options.batch } : {}) };
  const iso = isolated ? { isolated } : {};
  const timed = (plan: MemoryPlan, cls: PlanClass, reason: string): PolicyPlan => ({
    plan,
    class: cls,
    time: predictTime(vae, plan, sample, timeOptions),
    reason,
  });
  // Fastest first; a sort is stable, so equal times keep the order of expected agreement.
  const fastest = (plans: PolicyPlan[]) => plans.sort((a, b) => a.time.seconds - b.time.seconds);
  const exact: PolicyPlan[] = [];
  if (ranks > 1 && offers(options, 'shard') && canShard(vae, sample, ranks))
    exact.push(timed({ strategy: 'shard', ranks }, 'exact', `exact: row sharding on ${ranks} ranks`));
  // Ranks that share this machine's cores: the whole decode is one rank with all their threads.
  // Without --threads, ranks beyond the cores would only oversubscribe them: the one rank takes the cores.
  const pooledThreads = options.threads !== undefined ? ranks * options.threads : cores;
  const pooled = ranks > 1 && options.devices !== 'separate';
  exact.push(
    timed(
      { strategy: 'whole', ranks: 1, ...(pooled ? { threads: pooledThreads } : {}), ...iso },
      'exact',
      pooled
        ? `exact: the whole decode on one rank with ${options.threads !== undefined ? `${ranks} x ${options.threads}` : `this machine's ${cores}`} intra-op threads (the ${ranks} ranks share its cores)`
        : 'exact: the whole decode',
    ),
  );
  yield* fastest(exact);
  if (!vae.geometry.fiveDimLatents && offers(options, 'exact-tile') && exactHaloOf(vae)) {
    yield* fastest(
      tileCandidates(vae, sample, { overlap: false }).map((c) =>
        timed(
          { strategy: 'exact-tile', ranks, window: c.window, overlap: c.overlap, ...iso },
          'halo-exact',
          `exact: halo-exact tiles of ${c.window.height}x${c.window.width} (${c.tiles} tiles)`,
        ),
      ),
    );
  }
  yield* fastest(
    tileCandidates(vae, sample).map((c) =>
      timed(
        { strategy: 'tile', ranks, window: c.window, overlap: c.overlap, ...iso },
        'blended',
        `blended tiles of ${c.window.height}x${c.window.width}, overlap ${c.overlap.height}x${c.overlap.width} (${c.tiles} tiles, ${c.seams} seams)`,
      ),
    ),
  );
}

/** The class of exactness of a plan. */
export function classOf(plan: MemoryPlan): PlanClass {
  return plan.strategy === 'tile' ? 'blended' : plan.strategy === 'exact-tile' ? 'halo-exact' : 'exact';
}

/** A plan someone named (a request, a searched grid) as an alternative of the policy's kind: its predictions, its fit and its tiling. */
export function namedAlternative(
  vae: VaeSpec,
  plan: MemoryPlan,
  sample: SampleShape,
  prediction: MemoryPrediction,
  budget: MemoryBudget,
  reason: string,
  options: TimeModelOptions = {},
): PlanAlternative {
  return {
    plan,
    prediction,
    time: predictTime(vae, plan, sample, options),
    class: classOf(plan),
    fits: fitsBudget(prediction, budget),
    tiling: tilingOfPlan(plan, sample),
    reason,
  };
}

/**
 * Whether a prediction fits a budget: the bound of its peak (not the median the model predicts:
 * a budget is a cap), its largest tensor and each GPU rank's device memory where the budget caps them.
 */
export function fitsBudget(p: MemoryPrediction, budget: MemoryBudget): boolean {
  return (
    p.boundBytes <= budget.bytes &&
    (budget.maxTensorBytes === undefined || p.maxTensorBytes <= budget.maxTensorBytes) &&
    (budget.deviceBytes === undefined || predictDeviceMemory(p).peakBytes <= budget.deviceBytes)
  );
}

/** Evaluates the policy's plans against `budget` and returns the first that fits (and what was evaluated). */
export function chooseWithinBudget(vae: VaeSpec, sample: SampleShape, budget: MemoryBudget, options: ChooseOptions = {}): BudgetChoice {
  const alternatives: PlanAlternative[] = [];
  let choice: PlanAlternative | null = null;
  let more = options.more ?? 0;
  for (const { plan, reason: why, time, class: cls } of policyPlans(vae, sample, options)) {
    const prediction = predictMemory(vae, plan, sample, hostMemoryOptions(options));
    const alt: PlanAlternative = {
      plan,
      prediction,
      time,
      class: cls,
      fits: fitsBudget(prediction, budget),
      tiling: tilingOfPlan(plan, sample),
      reason: why,
    };
    alternatives.push(alt);
    if (choice) {
      if (--more <= 0) break;
    } else if (alt.fits) {
      choice = alt;
      if (more <= 0) break;
    }
  }
  const smallest = alternatives.reduce((a, b) => (b.prediction.boundBytes < a.prediction.boundBytes ? b : a));
  return { choice, alternatives, smallest, budget };
}

/** A prediction's peak as the messages give it: the median and the bound a budget is compared with, `700 MiB (at most 780 MiB)`. */
export function peakText(p: MemoryPrediction): string {
  return `${formatBytes(p.peakBytes)} (at most ${formatBytes(p.boundBytes)})`;
}

/** A short description of a plan: `tile 512x512 overlap 128x128 on 2 ranks`, `whole with 4 threads`. */
export function describePlan(plan: MemoryPlan): string {
  const geometry = plan.window
    ? ` ${plan.window.height}x${plan.window.width}${plan.overlap && (plan.overlap.height || plan.overlap.width) ? ` overlap ${plan.overlap.height}x${plan.overlap.width}` : ''}`
    : '';
  const threads = plan.threads !== undefined ? ` with ${plan.threads} thread${plan.threads === 1 ? '' : 's'}` : '';
  return `${plan.strategy}${geometry}${plan.ranks > 1 ? ` on ${plan.ranks} ranks` : ''}${threads}`;
}

/** `predicted 1.2 GiB, 8.4 s` — an alternative's memory and time as the summaries print them. */
export function describePrediction(alt: Pick<PlanAlternative, 'prediction' | 'time'>): string {
  return `predicted ${peakText(alt.prediction)}, ${formatSeconds(alt.time.seconds)}${alt.time.calibrated ? '' : ' (CPU-calibrated)'}`;
}

/**
 * The refusal of a budget (exit 2). Without `over`: nothing in `result` fits, and it names the
 * smallest achievable peak and its plan. With `over` — a plan someone named or searched that does
 * not fit, its `reason` saying which ("the requested plan") — it names that plan's peak, then the
 * policy's choice that fits or, when none does, the smallest plan there is (never only the
 * smallest of what was named). `result` should then hold every policy plan (`more: Infinity`).
 */
export function budgetRefusal(result: BudgetChoice, over?: PlanAlternative): DistVaeError {
  const s = result.smallest;
  const tensor = result.budget.maxTensorBytes !== undefined ? ` and at most ${formatBytes(result.budget.maxTensorBytes)} per tensor` : '';
  const nothingFits = `no plan fits a memory budget of ${formatBytes(result.budget.bytes)}${tensor}: the smallest predicted peak is ${peakText(s.prediction)} (largest tensor ${formatBytes(s.prediction.maxTensorBytes)}) with ${describePlan(s.plan)}`;
  let message = nothingFits;
  if (over) {
    const c = result.choice;
    const overText = `${over.reason} (${describePlan(over.plan)}) does not fit a memory budget of ${formatBytes(result.budget.bytes)}${tensor}: its predicted peak is ${peakText(over.prediction)} (largest tensor ${formatBytes(over.prediction.maxTensorBytes)})`;
    message = c
      ? `${overText}; the memory policy's choice fits: ${describePlan(c.plan)}, predicted peak ${peakText(c.prediction)} (the policy chooses it when no plan is named)`
      : `${overText}; ${nothingFits}`;
  }
  const target = result.choice ?? s;
  const r = reason(
    'BUDGET_TOO_SMALL',
    'max-memory',
    result.budget.bytes,
    result.choice
      ? `a plan that fits, e.g. ${describePlan(target.plan)} (predicted ${peakText(target.prediction)})`
      : `at least ${formatBytes(s.prediction.boundBytes)} (the smallest bound of a predicted peak: ${describePlan(s.plan)}${s.prediction.maxTensorBytes > (result.budget.maxTensorBytes ?? Infinity) ? `, largest tensor ${formatBytes(s.prediction.maxTensorBytes)}` : ''})`,
    message,
  );
  return new DistVaeError('BUDGET_EXCEEDED', r.message, { reasons: [r] });
}

/** Tiles may shift tone: what the decoder reads over every position, and the exact plan that fits instead. */
export interface ToneDrift {
  /** The ops the locality analysis finds reading every position, counted by kind: `{ GroupNorm: 30, Attention: 1 }`. */
  ops: Record<string, number>;
  /** The fastest exact plan (whole, or row sharding) that fits the budget, with its predictions; null when none fits. */
  alternative: {
    plan: MemoryPlan;
    /** The decode options that ask for it: `--strategy shard --ranks 2`, `--full`. */
    options: string;
    predictedPeakBytes: number;
    predictedSeconds: number;
  } | null;
  /** The sentence the summary prints. */
  message: string;
}

const nonlocalOps = new WeakMap<ModelProto, Record<string, number>>();

/** The ops of a VAE's decoder that read every position (GroupNorm statistics, attention), by kind; empty when it has none or exposes no graph. */
export function positionReadingOps(vae: VaeSpec): Record<string, number> {
  if (!hasMemoryModel(vae)) return {};
  let model: ModelProto;
  try {
    model = decoderGraphOf(vae);
  } catch {
    return {};
  }
  let ops = nonlocalOps.get(model);
  if (!ops) {
    ops = {};
    try {
      for (const n of analyzeLocality(model).nonlocal) ops[n.op] = (ops[n.op] ?? 0) + 1;
    } catch {
      // A graph the locality analysis does not read (an encoder's down-samplers land values between latent rows): no note.
    }
    nonlocalOps.set(model, ops);
  }
  return ops;
}

/** Most ranks the tone-drift note tries row sharding on when the decode asked for fewer. */
const TONE_SHARD_RANKS = 4;

/**
 * Blended tiles on a decoder whose locality analysis finds GroupNorm or attention: each tile
 * normalises over (and attends within) only its own window, so tiles may shift tone at their
 * seams. Returns the note naming the fastest exact plan that fits `budget` — the whole decode, or
 * row sharding on the decode's ranks or up to 4 — with its predicted peak and time; null for a
 * decoder whose ops are all local (its blended tiles differ only by the blend).
 */
export function toneDrift(vae: VaeSpec, sample: SampleShape, budget: MemoryBudget, options: ChooseOptions = {}): ToneDrift | null {
  const ops = positionReadingOps(vae);
  const kinds = Object.entries(ops);
  if (kinds.length === 0) return null;
  const ranks = options.ranks ?? 1;
  const cores = options.cores ?? hostCores();
  const timeOptions: TimeModelOptions = { ...options, cores };
  const perRank = options.threads ?? Math.max(1, Math.floor(cores / ranks));
  const pooled = ranks > 1 && options.devices !== 'separate';
  const candidates: { plan: MemoryPlan; options: string }[] = [
    {
      plan: { strategy: 'whole', ranks: 1, ...(pooled ? { threads: ranks * perRank } : {}) },
      options: pooled && options.threads !== undefined ? `--full --threads ${ranks * perRank}` : '--full',
    },
  ];
  for (const r of [...new Set([ranks, 2, 3, TONE_SHARD_RANKS])].sort((a, b) => a - b))
    if (r > 1 && offers(options, 'shard') && canShard(vae, sample, r))
      candidates.push({ plan: { strategy: 'shard', ranks: r }, options: `--strategy shard --ranks ${r}` });
  let best: ToneDrift['alternative'] = null;
  for (const c of candidates) {
    const prediction = predictMemory(vae, c.plan, sample, hostMemoryOptions(options));
    if (!fitsBudget(prediction, budget)) continue;
    const seconds = predictTime(vae, c.plan, sample, timeOptions).seconds;
    if (!best || seconds < best.predictedSeconds)
      best = { plan: c.plan, options: c.options, predictedPeakBytes: prediction.peakBytes, predictedSeconds: seconds };
  }
  const what = kinds.map(([op, n]) => `${op === 'Attention' ? 'attention' : op} (${n})`).join(' and ');
  const instead = best
    ? `the exact alternative that fits: ${best.options} (${describePlan(best.plan)}, predicted ${formatBytes(best.predictedPeakBytes)}, ${formatSeconds(best.predictedSeconds)})`
    : `no exact plan (the whole decode, row sharding on up to ${Math.max(ranks, TONE_SHARD_RANKS)} ranks) fits a budget of ${formatBytes(budget.bytes)}`;
  return {
    ops,
    alternative: best,
    message: `blended tiles may shift tone at their seams: the decoder's ${what} read every position, which each tile sees only in part; ${instead}`,
  };
}
