// The benchmark's arms on one cell (family, size, ranks): the untiled baseline (`none`), row
// sharding (`shard`), the family's default tile plan (`tile`) and the searched `coarse`,
// `balanced` and `fine` plans, all decoding the same latent with the same weights on one local
// group of process-isolated ranks. Each arm gets fresh rank processes (onnxruntime's arena keeps
// what an earlier arm allocated, which would leak into a later arm's peak RSS) that load the VAE
// before anything is timed; it is warmed up, then timed `repeat` times on the coordinator (peak
// RSS reset at every run); its output is compared with the
// reference (the baseline, or the exact shard arm when the baseline failed) and dropped.
// Failures are results: an arm that runs out of memory, is refused, or does not apply to the
// family is recorded with the reason, and the other arms still run.

import type { Vae } from '../decode/vae.js';
import { rankFailed, type RankOutcome } from '../ranks/group.js';
import type { LocalGroup } from '../ranks/local/local-group.js';
import type { CommCounters } from '../ranks/program.js';
import { tiledDecodeFor, type DistributedDecodeStats } from '../strategies/tile/tiled-decode.js';
import { isDistVaeError } from '../errors.js';
import type { TilingState } from '../families/types.js';
import { tileGrid, type TileGrid } from '../plan/grid.js';
import { installTiling, setTiling } from '../plan/planner.js';
import { planReport, type PlanReport } from '../plan/report.js';
import { searchPlans, type SearchCandidate, type SearchResult } from '../plan/search.js';
import { latentShapeOf, type SampleShape } from '../plan/shapes.js';
import { splitBands } from '../strategies/shard/bands.js';
import { shardedDecodeFor, type ShardStats } from '../strategies/shard/sharded-decode.js';
import type { Tensor } from '../tensor.js';
import { planOfTiling } from '../memory/apply.js';
import { formatBytes } from '../runtime/memory-budget.js';
import { hasMemoryModel, predictMemory, type MemoryPlan } from '../memory/model.js';
import { agreement, type Agreement } from './agreement.js';
import { RANK_DECODE_PROGRAM, RANK_LOAD_PROGRAM, type RankDecodeInput, type RankDecodeResult } from './rank-decode.js';

/** The arms `distvae bench` compares: the whole decode, row sharding, the default tiles and the search's three picks. */
export const ARM_NAMES = ['none', 'shard', 'tile', 'coarse', 'balanced', 'fine'] as const;
/** One of ARM_NAMES. */
export type ArmName = (typeof ARM_NAMES)[number];
export const SEARCHED_ARMS = ['coarse', 'balanced', 'fine'] as const;

export interface Collectives {
  /** Rank-to-rank operations (halo rows, GroupNorm statistics gathers, attention gathers, tile edges). */
  calls: number;
  bytes: number;
  /** Non-zero kinds only. */
  byKind: Partial<CommCounters>;
}

export interface ArmResult {
  name: ArmName;
  /** 'failed': ran and failed (out of memory, refused by a guard); 'unsupported': does not apply here; 'no-plan': the search has no such pick. */
  status: 'ok' | 'failed' | 'unsupported' | 'no-plan';
  reason?: string;
  /** Window / overlap in output pixels (HxW); the whole sample for untiled arms. */
  window?: string;
  overlap?: string;
  /** Ranks that decode (the baseline and untiled plans use one). */
  ranksUsed?: number;
  /** Tiles (bands for `shard`). */
  tiles?: number;
  decodedAreaRatio?: number;
  activationShare?: number;
  seams?: number;
  imbalance?: number;
  /** Seconds of the whole decode on the coordinator, over the timed runs. */
  latency?: { min: number; median: number; max: number };
  runs?: number[];
  /** Peak RSS of each rank over the timed runs (null: the rank was idle). */
  peakRssBytes?: (number | null)[];
  maxPeakRssBytes?: number;
  collectives?: Collectives;
  /** Against the cell's reference arm; null for the reference itself or when there is none. */
  agreement?: Agreement | null;
  /** Reference arm's median latency / this arm's. */
  speedup?: number | null;
  /** This arm's largest rank peak RSS / the reference arm's. */
  memoryRatio?: number | null;
  /** The memory model's predicted peak of the arm (coordinator and ranks), for families that have one. */
  predictedPeakBytes?: number;
  /** The plan of a tiled arm (drawn as a figure). */
  plan?: PlanReport;
}

/** One benchmark cell (a family, a sample size, a rank count): every arm's speed, memory and agreement. */
export interface BenchCell {
  family: string;
  className: string;
  sample: Required<SampleShape>;
  latentDims: number[];
  latentSource: string;
  ranks: number;
  repeat: number;
  warmup: number;
  /** False in the reports written after each arm while later arms were still to run. */
  complete: boolean;
  /** The arm the agreement and ratios are measured against, and why when it is not `none`. */
  reference: ArmName | null;
  referenceNote?: string;
  search: { candidates: number; frontier: number };
  arms: ArmResult[];
}

/** Options of `runBenchCell`. */
export interface BenchCellOptions {
  /** Loaded on the coordinator: its source, hash and tiling state drive the ranks. */
  vae: Vae;
  ranks: number;
  /** A new group of process-isolated local ranks (not started); one per arm. */
  makeGroup: () => LocalGroup;
  sample: Required<SampleShape>;
  latents: Tensor;
  latentSource: string;
  arms: readonly ArmName[];
  repeat: number;
  warmup: number;
  onProgress?: (line: string) => void;
  /** The cell so far after each arm (`complete: false`), so an interrupted run leaves its finished arms. */
  onArm?: (partial: BenchCell) => void;
  /** Memory budget (bytes): an arm whose predicted peak exceeds it is recorded as failed without running. */
  memoryBudget?: number;
}

/** One timed decode: the output, each rank's peak RSS (null when idle) and rank-to-rank traffic. */
interface Measured {
  output: Tensor;
  peaks: (number | null)[];
  counters: CommCounters[];
}

interface PreparedArm {
  metrics: Pick<
    ArmResult,
    'window' | 'overlap' | 'ranksUsed' | 'tiles' | 'decodedAreaRatio' | 'activationShare' | 'seams' | 'imbalance' | 'plan'
  >;
  grid: TileGrid | null;
  run: () => Promise<Measured>;
  /** Restores the coordinator's VAE after the arm. */
  cleanup?: () => void;
}

const size = (s: { height: number; width: number }) => `${s.height}x${s.width}`;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function collectives(counters: readonly CommCounters[]): Collectives {
  const byKind: Partial<CommCounters> = {};
  let calls = 0;
  let bytes = 0;
  for (const c of counters) {
    for (const [kind, v] of Object.entries(c) as [keyof CommCounters, { calls: number; bytes: number }][]) {
      if (v.calls === 0) continue;
      const k = (byKind[kind] ??= { calls: 0, bytes: 0 });
      k.calls += v.calls;
      k.bytes += v.bytes;
      calls += v.calls;
      bytes += v.bytes;
    }
  }
  return { calls, bytes, byKind };
}

/** Runs the whole decode of `tiling` on rank 0 (the others idle). */
async function decodeOnRankZero(vae: Vae, group: LocalGroup, latents: Tensor, tiling: TilingState): Promise<Measured> {
  const input: RankDecodeInput = { vae: { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() }, latents, tiling };
  let failure: Error | null = null;
  const run = await group.launch(RANK_DECODE_PROGRAM, {
    input: (rank) => (rank === 0 ? input : null),
    onOutcome: (o) => {
      if (o.status !== 'done' && !failure) failure = rankFailed(o);
    },
  });
  const outcomes = (await run.settled) as RankOutcome[];
  if (failure) throw failure;
  const zero = outcomes[0] as Extract<RankOutcome, { status: 'done' }>;
  return {
    output: (zero.result as RankDecodeResult).output,
    peaks: outcomes.map((o) => (o.rank === 0 ? (zero.peakRssBytes ?? null) : null)),
    counters: [],
  };
}

function tilingOff(t: TilingState): TilingState {
  return { ...t, enabled: false, frames: t.frames ? { ...t.frames, enabled: false } : null };
}

/** Installs a searched candidate's exact window and overlap. */
function installCandidate(vae: Vae, sample: SampleShape, c: SearchCandidate): void {
  setTiling(vae, { window: c.window, overlap: c.overlap, sampleShape: sample });
}

function prepareBaseline(o: BenchCellOptions, group: LocalGroup): PreparedArm {
  const { vae, sample, latents } = o;
  const tiling = tilingOff(vae.tiling);
  return {
    metrics: {
      window: size(sample),
      overlap: '0x0',
      ranksUsed: 1,
      tiles: 1,
      decodedAreaRatio: 1,
      activationShare: 1,
      seams: 0,
      imbalance: 0,
    },
    grid: null,
    run: () => decodeOnRankZero(vae, group, latents, tiling),
  };
}

function prepareShard(o: BenchCellOptions, group: LocalGroup): PreparedArm {
  const { vae, latents } = o;
  let stats: ShardStats | null = null;
  const decode = shardedDecodeFor(vae, group, { onStats: (s) => (stats = s) });
  const latent = latentShapeOf(vae.geometry, o.sample);
  const bands = splitBands(latent.height, group.size, vae.geometry.spatialRatio);
  const loads = bands.map((b) => (b.end - b.start) * latent.width);
  const total = latent.height * latent.width;
  return {
    metrics: {
      window: size(o.sample),
      overlap: '0x0',
      ranksUsed: group.size,
      tiles: bands.length,
      decodedAreaRatio: 1,
      activationShare: Math.max(...loads) / total,
      seams: 0,
      imbalance: Math.max(...loads) / (total / group.size) - 1,
    },
    grid: null,
    run: async () => {
      const output = await decode(latents);
      const s = stats as ShardStats | null;
      if (!s) throw new Error('the sharded decode reported no statistics');
      return { output, peaks: s.ranks.map((r) => r.peakRssBytes ?? null), counters: s.ranks.map((r) => r.counters) };
    },
  };
}

/** A tiled arm: the plan installed on the coordinator's VAE; ranks share the tiles when there are several and the plan tiles. */
function prepareTiled(o: BenchCellOptions, group: LocalGroup, install: () => void): PreparedArm {
  const { vae, sample, latents } = o;
  const saved = { tiling: vae.tiling, tiledDecode: vae.tiledDecode };
  const cleanup = () => {
    installTiling(vae, saved.tiling);
    vae.tiledDecode = saved.tiledDecode;
  };
  try {
    install();
    const grid = tileGrid(vae, latentShapeOf(vae.geometry, sample));
    const distributed = group.size > 1 && grid.tiled;
    const ranksUsed = distributed ? group.size : 1;
    const plan = planReport(vae, sample, ranksUsed);
    const metrics: PreparedArm['metrics'] = {
      window: size(plan.window),
      overlap: size(plan.overlap),
      ranksUsed,
      tiles: plan.tiles,
      decodedAreaRatio: plan.decodedAreaRatio,
      activationShare: plan.activationShare,
      seams: plan.seams,
      imbalance: plan.imbalance,
      plan,
    };
    if (!distributed) {
      const tiling = structuredClone(vae.tiling);
      return { metrics, grid, cleanup, run: () => decodeOnRankZero(vae, group, latents, tiling) };
    }
    let calls: DistributedDecodeStats[] = [];
    vae.tiledDecode = tiledDecodeFor(vae, group, { onStats: (s) => calls.push(s) })!;
    return {
      metrics,
      grid,
      cleanup,
      run: async () => {
        calls = [];
        const output = await vae.decode(latents);
        const peaks = Array.from({ length: group.size }, (_, rank) => {
          const values = calls.map((c) => c.ranks[rank]?.peakRssBytes).filter((v): v is number => v !== undefined);
          return values.length > 0 ? Math.max(...values) : null;
        });
        return { output, peaks, counters: calls.flatMap((c) => c.ranks.flatMap((r) => (r.counters ? [r.counters] : []))) };
      },
    };
  } catch (e) {
    cleanup();
    throw e;
  }
}

function failureText(e: unknown): string {
  if (isDistVaeError(e)) {
    const inner = e.cause instanceof Error ? e.cause : null;
    return `${e.code}: ${e.message}${inner && !e.message.includes(inner.message) ? ` (${inner.message})` : ''}`;
  }
  return e instanceof Error ? e.message : String(e);
}

/** Runs the requested arms of one cell (always in the order of ARM_NAMES). */
/** The memory model's predicted peak of an arm with the VAE's tiling as prepared; null without a memory model. */
function predictArm(vae: Vae, name: ArmName, ranks: number, sample: Required<SampleShape>): number | null {
  if (!hasMemoryModel(vae)) return null;
  const plan: MemoryPlan =
    name === 'none'
      ? { strategy: 'whole', ranks: 1, isolated: true }
      : name === 'shard'
        ? { strategy: 'shard', ranks }
        : { ...planOfTiling(vae, 'tile', ranks), isolated: true };
  try {
    return predictMemory(vae, plan, sample).peakBytes;
  } catch {
    return null;
  }
}

/** Runs every arm of one benchmark cell on fresh process ranks and compares each to the reference arm. */
export async function runBenchCell(o: BenchCellOptions): Promise<BenchCell> {
  const { vae, sample } = o;
  const progress = o.onProgress ?? (() => undefined);
  const search: SearchResult = searchPlans(vae, sample, o.ranks);
  const arms: ArmResult[] = [];
  let reference: { name: ArmName; output: Tensor; median: number; peak: number } | null = null;
  let referenceNote: string | undefined;
  const requested = ARM_NAMES.filter((a) => o.arms.includes(a));
  const record = (arm: ArmResult) => {
    arms.push(arm);
    if (arms.length < requested.length) o.onArm?.(cellOf(false));
  };

  for (const name of requested) {
    const pick = name === 'coarse' || name === 'balanced' || name === 'fine' ? search.picks[name] : undefined;
    if (pick === null) {
      const why =
        search.candidates === 0
          ? 'the search found no candidate plan for this size and rank count'
          : `the frontier (${search.frontier.length} plan(s)) has no distinct ${name} pick`;
      progress(`${name}: no plan (${why})`);
      record({ name, status: 'no-plan', reason: why });
      continue;
    }
    const group = o.makeGroup();
    let prepared: PreparedArm;
    try {
      if (name === 'none') prepared = prepareBaseline(o, group);
      else if (name === 'shard') prepared = prepareShard(o, group);
      else if (name === 'tile') prepared = prepareTiled(o, group, () => setTiling(vae));
      else prepared = prepareTiled(o, group, () => installCandidate(vae, sample, pick!));
    } catch (e) {
      await group.close();
      const why = failureText(e);
      progress(`${name}: not supported (${why})`);
      record({ name, status: 'unsupported', reason: why });
      continue;
    }
    const predicted = predictArm(vae, name, o.ranks, sample);
    const result: ArmResult = { name, status: 'ok', ...prepared.metrics, ...(predicted !== null ? { predictedPeakBytes: predicted } : {}) };
    if (predicted !== null && o.memoryBudget !== undefined && predicted > o.memoryBudget) {
      prepared.cleanup?.();
      await group.close();
      const why = `predicted peak ${formatBytes(predicted)} exceeds the memory budget of ${formatBytes(o.memoryBudget)}`;
      progress(`${name}: not run (${why})`);
      record({ ...result, status: 'failed', reason: why });
      continue;
    }
    try {
      progress(`${name}: starting ${group.size} rank(s) and loading the VAE`);
      await group.run(RANK_LOAD_PROGRAM, () => ({ source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() }));
      const label = `${name} (${prepared.metrics.tiles} tile(s), window ${prepared.metrics.window}, ${prepared.metrics.ranksUsed} rank(s))`;
      for (let i = 0; i < o.warmup; i++) {
        progress(`${label}: warm-up ${i + 1}/${o.warmup}`);
        await prepared.run();
      }
      const runs: number[] = [];
      const peaks: (number | null)[] = new Array<number | null>(group.size).fill(null);
      let last: Measured | null = null;
      for (let i = 0; i < o.repeat; i++) {
        const t0 = performance.now();
        last = await prepared.run();
        runs.push((performance.now() - t0) / 1000);
        last.peaks.forEach((p, rank) => {
          if (p !== null) peaks[rank] = Math.max(peaks[rank] ?? 0, p);
        });
        progress(`${label}: run ${i + 1}/${o.repeat} ${runs.at(-1)!.toFixed(2)} s`);
      }
      result.latency = { min: Math.min(...runs), median: median(runs), max: Math.max(...runs) };
      result.runs = runs;
      result.peakRssBytes = peaks;
      const known = peaks.filter((p): p is number => p !== null);
      if (known.length > 0) result.maxPeakRssBytes = Math.max(...known);
      result.collectives = collectives(last!.counters);
      if (reference === null && (name === 'none' || name === 'shard')) {
        if (name === 'shard')
          referenceNote = requested.includes('none')
            ? 'the baseline (none) failed: agreement and ratios are against the shard arm, which is exact'
            : 'no baseline arm was run: agreement and ratios are against the shard arm, which is exact';
        reference = { name, output: last!.output, median: result.latency.median, peak: result.maxPeakRssBytes ?? NaN };
        result.agreement = null;
      } else if (reference) {
        result.agreement = agreement(last!.output, reference.output, vae.family.sampleRange, prepared.grid);
      } else {
        result.agreement = null;
      }
    } catch (e) {
      const why = failureText(e);
      progress(`${name}: failed (${why})`);
      record({ name, status: 'failed', reason: why, ...prepared.metrics });
      continue;
    } finally {
      prepared.cleanup?.();
      await group.close();
    }
    record(result);
  }
  return cellOf(true);

  /** The cell as measured so far (ratios against the reference once it ran). */
  function cellOf(complete: boolean): BenchCell {
    const ref = reference as { name: ArmName; median: number; peak: number } | null;
    const measured = arms.map((arm): ArmResult => {
      if (arm.status !== 'ok' || !ref) return arm;
      const memoryRatio = arm.maxPeakRssBytes !== undefined && Number.isFinite(ref.peak) ? arm.maxPeakRssBytes / ref.peak : null;
      return { ...arm, speedup: ref.median / arm.latency!.median, memoryRatio };
    });
    const noReference = complete
      ? 'neither the baseline nor the shard arm produced an output: no agreement or ratios'
      : 'no reference arm has run yet';
    return {
      family: vae.family.name,
      className: vae.config.className,
      sample,
      latentDims: [...o.latents.dims],
      latentSource: o.latentSource,
      ranks: o.ranks,
      repeat: o.repeat,
      warmup: o.warmup,
      complete,
      reference: ref?.name ?? null,
      ...(ref === null ? { referenceNote: noReference } : referenceNote ? { referenceNote } : {}),
      search: { candidates: search.candidates, frontier: search.frontier.length },
      arms: measured,
    };
  }
}
