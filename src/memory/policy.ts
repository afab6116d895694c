// The memory policy: the plans a decode may take, in the order of preference, each with its
// predicted peak, and the first one that fits a budget. Exact plans come first — with R > 1
// ranks row sharding on the R ranks, then the whole decode; with one rank the whole decode —
// then halo-exact tiles (local decoders), then blended tiles with the best expected agreement:
// largest window (shorter side, then area), then fewest seams, ties to the least decoded area. The same order is the
// fallback ladder when an attempt runs out of memory anyway.

import { DistVaeError, reason } from '../errors.js';
import type { Size2, VaeSpec } from '../families/types.js';
import { explainTileOverlapPlan, explainTileShapePlan, type TilingRequest } from '../plan/planner.js';
import { axisOptions, type AxisOption } from '../plan/search.js';
import { latentShapeOf, type SampleShape } from '../plan/shapes.js';
import { formatBytes } from '../runtime/memory-budget.js';
import { tilingOfPlan } from './apply.js';
import { exactHaloOf, predictMemory, type MemoryModelOptions, type MemoryPlan, type MemoryPrediction } from './model.js';

/** A memory budget: total resident bytes of the coordinator and its local ranks, and optionally the largest single tensor. */
export interface MemoryBudget {
  bytes: number;
  /** Largest single allocation allowed (WebGPU buffer limits, onnxruntime's 2 GiB tensors). */
  maxTensorBytes?: number;
}

/** One plan of the policy with its predicted memory and whether it fits. */
export interface PlanAlternative {
  plan: MemoryPlan;
  prediction: MemoryPrediction;
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

/** Options of `chooseWithinBudget`. */
export interface ChooseOptions extends MemoryModelOptions {
  /** Local ranks available (default 1). */
  ranks?: number;
  batch?: number;
  /** Alternatives to evaluate past the choice (for listings); default 0. */
  more?: number;
  /** Run every attempt in rank processes (a fallback ladder), so a one-rank plan counts a rank process. */
  isolated?: boolean;
}

/** Whether row sharding can run this decoder on `ranks` ranks (image latents, a graph, a latent row per rank). */
function canShard(vae: VaeSpec, sample: SampleShape, ranks: number): boolean {
  if (vae.geometry.fiveDimLatents) return false;
  return latentShapeOf(vae.geometry, sample).height >= ranks;
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

/** The policy's plans in order, lazily (predictions are made only for what is read). */
export function* policyPlans(
  vae: VaeSpec,
  sample: SampleShape,
  options: ChooseOptions = {},
): Generator<{ plan: MemoryPlan; reason: string }> {
  const ranks = options.ranks ?? 1;
  const isolated = options.isolated === true;
  if (ranks > 1 && canShard(vae, sample, ranks))
    yield { plan: { strategy: 'shard', ranks }, reason: `exact: row sharding on ${ranks} ranks` };
  yield { plan: { strategy: 'whole', ranks: 1, ...(isolated ? { isolated } : {}) }, reason: 'exact: the whole decode' };
  const tileRanks = ranks;
  if (!vae.geometry.fiveDimLatents && exactHaloOf(vae)) {
    for (const c of tileCandidates(vae, sample, { overlap: false })) {
      yield {
        plan: { strategy: 'exact-tile', ranks: tileRanks, window: c.window, overlap: c.overlap, ...(isolated ? { isolated } : {}) },
        reason: `exact: halo-exact tiles of ${c.window.height}x${c.window.width} (${c.tiles} tiles)`,
      };
    }
  }
  for (const c of tileCandidates(vae, sample)) {
    yield {
      plan: { strategy: 'tile', ranks: tileRanks, window: c.window, overlap: c.overlap, ...(isolated ? { isolated } : {}) },
      reason: `blended tiles of ${c.window.height}x${c.window.width}, overlap ${c.overlap.height}x${c.overlap.width} (${c.tiles} tiles, ${c.seams} seams)`,
    };
  }
}

/**
 * Whether a prediction fits a budget: the bound of its peak (not the median the model predicts:
 * a budget is a cap), and its largest tensor where the budget caps one.
 */
export function fitsBudget(p: MemoryPrediction, budget: MemoryBudget): boolean {
  return p.boundBytes <= budget.bytes && (budget.maxTensorBytes === undefined || p.maxTensorBytes <= budget.maxTensorBytes);
}

/** Evaluates the policy's plans against `budget` and returns the first that fits (and what was evaluated). */
export function chooseWithinBudget(vae: VaeSpec, sample: SampleShape, budget: MemoryBudget, options: ChooseOptions = {}): BudgetChoice {
  const alternatives: PlanAlternative[] = [];
  let choice: PlanAlternative | null = null;
  let more = options.more ?? 0;
  for (const { plan, reason: why } of policyPlans(vae, sample, options)) {
    const prediction = predictMemory(vae, plan, sample, options);
    const alt: PlanAlternative = {
      plan,
      prediction,
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

/** A short description of a plan: `tile 512x512/128x128 on 2 ranks`. */
export function describePlan(plan: MemoryPlan): string {
  const geometry = plan.window
    ? ` ${plan.window.height}x${plan.window.width}${plan.overlap && (plan.overlap.height || plan.overlap.width) ? ` overlap ${plan.overlap.height}x${plan.overlap.width}` : ''}`
    : '';
  return `${plan.strategy}${geometry}${plan.ranks > 1 ? ` on ${plan.ranks} ranks` : ''}`;
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
