// `shardedDecodeFor(vae, group)`: row sharding as a drop-in for `vae.tiledDecode` (docs/design.md §6).
// The latent is split into one band of whole latent rows per rank (bands.ts); every rank runs
// the decoder's stages on its band, exchanging halo rows, GroupNorm statistics and attention
// keys/values with the others (staged-decoder.ts); the coordinator stacks the output bands.
// The result equals the unsharded decode within float32 tolerance, whatever the tile plan: the
// plan is ignored and latents that fit one tile are sharded too. The VAE's graph is analysed
// before any rank starts, so a decoder with nonlocal ops that are not sync regions is refused
// up front, naming them; so is a latent with fewer rows than ranks.

import { checkLatents, sliceLatent } from '../../decode/latents.js';
import type { RankStats, TiledDecode } from '../../decode/types.js';
import { rankFailed, type ProgramGroup, type RankOutcome } from '../../ranks/group.js';
import { programRef, type CommCounters, type VaeRef } from '../../ranks/program.js';
import type { Tensor } from '../../tensor.js';
import type { AnalyzableVae } from '../distributable.js';
import { DistVaeError, reason, refuse, throwIfAborted } from '../../errors.js';
import { splitBands, type Band } from './bands.js';
import { checkBandsAligned, predictCollectives, shardPlan, type ShardPlan } from './plan.js';
import type { ShardRankInput, ShardRankResult } from './rank-program.js';
import { concatAxis } from './rows.js';
import { checkFiniteOutput } from '../../tile/finite.js';

export const SHARD_RANK_PROGRAM = programRef(new URL('./rank-program.js', import.meta.url), 'shardRank');

/** One rank of a row-sharded decode or encode: its band (rows of the graph input), what it sent, and its times. */
export interface ShardRankStats extends RankStats {
  band: Band;
  /** What the rank sent, by kind of operation (calls and payload bytes). */
  counters: CommCounters;
  /** Seconds loading the VAE and building the stage sessions (0 when cached). */
  loadSeconds: number;
}

/** What a row-sharded decode did: its bands, every rank's accounting and the collectives summed. */
export interface ShardStats {
  transport: string;
  bands: Band[];
  ranks: ShardRankStats[];
  /** Sums over the ranks. */
  collectives: CommCounters;
  /** What the locality analysis predicts each rank sends (equal to `ranks[].counters` in a correct run). */
  predicted: CommCounters[];
  /** Wall time on the coordinator. */
  seconds: number;
}

/** A row-sharded decode through a rank group, with the statistics of its last call. */
export interface ShardedDecode extends TiledDecode {
  readonly lastStats: ShardStats | null;
}

export interface ShardedDecodeForOptions {
  onStats?: (stats: ShardStats) => void;
}

export function sumCounters(all: readonly CommCounters[]): CommCounters {
  const total = structuredClone(all[0]!);
  for (const c of all.slice(1))
    for (const kind of Object.keys(total) as (keyof CommCounters)[]) {
      total[kind].calls += c[kind].calls;
      total[kind].bytes += c[kind].bytes;
    }
  return total;
}

/** Runs the shard program on every rank; any failed or lost rank fails the decode, naming it. */
async function runBands(
  group: ProgramGroup,
  inputs: ShardRankInput[],
  signal: AbortSignal | undefined,
): Promise<Extract<RankOutcome, { status: 'done' }>[]> {
  let failure: DistVaeError | null = null;
  const run = await group.launch(SHARD_RANK_PROGRAM, {
    input: (rank) => inputs[rank],
    ...(signal ? { signal } : {}),
    onOutcome: (o) => {
      if (o.status === 'done' || failure) return;
      failure = rankFailed(o);
      run.cancel(`rank ${o.rank} failed`);
    },
  });
  const outcomes = await run.settled;
  throwIfAborted(signal);
  if (failure) throw failure;
  return outcomes as Extract<RankOutcome, { status: 'done' }>[];
}

/**
 * One row-sharded run of `plan`'s graph over `input` (B, C, rows, cols of the graph input) on
 * `group`, one band of input rows per rank (`bands`, aligned to the plan's granule): every rank
 * loads `ref` (a decoder, or an encoder by `part`) and runs its band; the output bands are
 * checked finite (`where` names a band's input rows) and stacked. Also the run's statistics.
 */
export async function runSharded(
  group: ProgramGroup,
  plan: ShardPlan,
  ref: VaeRef,
  input: Tensor,
  bands: Band[],
  signal: AbortSignal | undefined,
  where: (band: Band) => string,
): Promise<{ output: Tensor; stats: ShardStats }> {
  const [batch, , rows, cols] = input.dims as [number, number, number, number];
  checkBandsAligned(plan, bands, cols);
  const geometry = { latentRows: rows, latentCols: cols, bands };
  const inputs = bands.map((b) => ({ vae: ref, latent: sliceLatent(input, { y0: b.start, y1: b.end, x0: 0, x1: cols }), geometry }));
  const started = performance.now();
  const outcomes = await runBands(group, inputs, signal);
  const results = outcomes.map((o) => o.result as ShardRankResult);
  // Each rank's band of output rows, as it is stacked (positions in output rows).
  let row = 0;
  for (const [rank, r] of results.entries()) {
    const [h, w] = r.output.dims.slice(-2) as [number, number];
    checkFiniteOutput(r.output, `band ${rank} (rank ${rank}, ${where(bands[rank]!)})`, { sy: 0, sx: 0, h, w, y: row, x: 0 });
    row += h;
  }
  const output = concatAxis(
    results.map((r) => r.output),
    2,
  );
  const ranks = outcomes.map((o, rank): ShardRankStats => ({
    rank,
    tiles: [],
    band: bands[rank]!,
    load: (bands[rank]!.end - bands[rank]!.start) * cols,
    seconds: results[rank]!.seconds,
    loadSeconds: results[rank]!.loadSeconds,
    counters: results[rank]!.counters,
    ...(o.peakRssBytes !== undefined ? { peakRssBytes: o.peakRssBytes } : {}),
  }));
  const stats: ShardStats = {
    transport: group.transport,
    bands,
    ranks,
    collectives: sumCounters(ranks.map((r) => r.counters)),
    predicted: predictCollectives(plan, bands, rows, cols, batch),
    seconds: (performance.now() - started) / 1000,
  };
  return { output, stats };
}

/**
 * The row-sharded decode of `vae` on `group` (any size, 1 included). Usage:
 * `vae.tiledDecode = shardedDecodeFor(vae, group)`; `lastStats` then holds the bands, per-rank
 * times, peak memory (process isolation) and collectives of the last call.
 */
export function shardedDecodeFor(vae: AnalyzableVae, group: ProgramGroup, options: ShardedDecodeForOptions = {}): ShardedDecode {
  if (vae.geometry.fiveDimLatents) {
    refuse(
      'UNSUPPORTED',
      reason(
        'SHARD_VIDEO',
        'family',
        vae.family.name,
        'an image family (4-D latents)',
        `row sharding decodes image latents; ${vae.family.name} latents are 5-D`,
      ),
    );
  }
  const plan: ShardPlan = shardPlan(vae.decoderModel());
  let lastStats: ShardStats | null = null;
  const decode: TiledDecode = async (latents, decodeOptions = {}) => {
    throwIfAborted(decodeOptions.signal);
    const latent = checkLatents(vae, latents);
    const bands = splitBands(latent.height, group.size, vae.geometry.spatialRatio);
    const ref = { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() };
    const { output, stats } = await runSharded(
      group,
      plan,
      ref,
      latents,
      bands,
      decodeOptions.signal,
      (b) => `latent rows ${b.start}..${b.end}`,
    );
    lastStats = stats;
    options.onStats?.(lastStats);
    return output;
  };
  return Object.defineProperties(decode, {
    decodesUntiled: { value: true, enumerable: true },
    lastStats: { get: () => lastStats, enumerable: true },
  }) as ShardedDecode;
}
