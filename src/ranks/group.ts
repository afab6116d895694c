// The rank-group contract every transport implements, and what a group can do, as data a
// strategy reads (`kind`) rather than a class it tests for:
// - 'programs' (local threads, local processes): runs SPMD rank programs whose ranks message
//   each other (program.ts); every strategy runs on it, the tile strategy included, which drives
//   its own tile program there.
// - 'tile-jobs' (a job queue): runs the tiles of one tiled decode and streams the results back,
//   its ranks unable to message each other. The caller (`tiledDecodeFor`) plans, deals and
//   assembles; the transport moves latent slices out and raw tiles back, loads the VAE on its
//   ranks, and recovers from ranks it loses (a pull-based transport may treat each rank's
//   dealt run as one job).

import type { RankStats } from '../decode/types.js';
import { DistVaeError } from '../errors.js';
import type { Schedule } from '../plan/scheduler.js';
import type { Tensor } from '../tensor.js';
import type { Planes } from '../tile/blend.js';
import type { TileLayout } from '../tile/layout.js';
import type { CommCounters, ProgramRef, VaeRef } from './program.js';

/**
 * How tiles come back. 'edges': ranks exchange the raw edges their neighbours' blends read,
 * finalise their tiles and return only crops (valid when `layout.edgesSuffice`). 'raster':
 * ranks return raw tiles and the caller blends them in raster order (overlap > window/2, or a
 * transport whose ranks cannot message each other).
 */
export type Assembly = 'edges' | 'raster';

/** The tiles of one spatial tiling operation (one latent, or one temporal chunk of it). */
export interface TileJob {
  vae: VaeRef;
  layout: TileLayout;
  /**
   * Latent slice of tile `index` (raster order), cut when asked: the tile program asks as it hands
   * a tile to a rank, so the job never holds every tile's slice at once (that grows with the image).
   */
  latentOf(index: number): Tensor;
  /** Work of every tile (the scheduler's units: latent area × frames); its length is the tile count. */
  work: readonly number[];
  /** The dealing to follow (tile indices per rank), from the scheduler. */
  schedule: Schedule;
  assembly: Assembly;
}

export interface TileResult {
  index: number;
  rank: number;
  /** A finished crop ('edges') or a raw decoded tile ('raster'). */
  kind: 'crop' | 'raw';
  /** Leading dimensions of the raw decoder output, e.g. [B, C] or [B, C, F]. */
  leading: number[];
  planes: Planes;
}

export interface TileJobOptions {
  signal?: AbortSignal;
  /** Receives each tile once. Throwing rejects the result: the job fails naming the rank. */
  onResult(result: TileResult): void;
}

/** A rank lost during a job, and what happened to it. */
export interface RankFailure {
  rank: number;
  /** What happened, in words (exit code / signal, or the error's message). */
  cause: string;
}

/** Per-rank accounting of one tile job. `tiles` are the tiles the rank delivered. */
export interface DistRankStats extends RankStats {
  /** Seconds inside decoder calls (the rest of `seconds` is waiting, exchange, blending, loading). */
  decoderSeconds: number;
  /** Seconds spent loading the VAE in this job (0 when it was cached). */
  loadSeconds: number;
  /** What the rank sent to other ranks (edges), where the transport counts it; absent for a lost rank. */
  counters?: CommCounters;
}

/** What a rank group reports after a tile job: every rank's accounting, the ranks lost and the tiles dealt again. */
export interface TileJobResult {
  /** Every rank of the group, idle ones with no tiles. */
  ranks: DistRankStats[];
  /** Ranks lost during the job whose tiles were dealt again to the others. */
  failures: RankFailure[];
  /** Tiles decoded again on another rank after their rank was lost. */
  redealt: number[];
  /** Finished tiles decoded again only for the edges a re-dealt neighbour needs. */
  edgeRedecodes: number[];
}

/** What every rank group has, whatever it can run. */
interface RankGroupBase {
  /** Number of ranks work is dealt to. */
  readonly size: number;
  /** e.g. 'local-thread', 'local-process', 'queue'. */
  readonly transport: string;
  /** Ends every rank; the group cannot be used afterwards. */
  close(): Promise<void>;
}

/** A rank's end of one run: 'done', 'failed' (the program threw) or 'lost' (the rank died). */
export type RankOutcome =
  | { rank: number; status: 'done'; result: unknown; peakRssBytes?: number }
  | { rank: number; status: 'failed'; error: Error; peakRssBytes?: number }
  | { rank: number; status: 'lost'; cause: string };

/** Options of `ProgramGroup.launch`. */
export interface LaunchOptions {
  /** Input of each rank's program. */
  input: (rank: number) => unknown;
  signal?: AbortSignal;
  /** A message a rank's program posted. */
  onPost?: (rank: number, data: unknown) => void;
  /** A rank ended this run (called once per rank). */
  onOutcome?: (outcome: RankOutcome) => void;
}

/** One run of a rank program in flight (from `ProgramGroup.launch`). */
export interface RankRun {
  readonly id: number;
  /** Whether `rank` is still running this run. */
  running(rank: number): boolean;
  /** Sends a message to a running rank's program (copied). */
  post(rank: number, data: unknown): void;
  /** Asks every running rank to stop; a rank still busy after the grace period is ended. */
  cancel(reason: string): void;
  /** Every rank's outcome, once all have ended. */
  readonly settled: Promise<RankOutcome[]>;
}

/** Ranks that run SPMD rank programs and message each other: local threads or processes (`localGroup`). */
export interface ProgramGroup extends RankGroupBase {
  readonly kind: 'programs';
  /**
   * Starts `program` on every rank (after the previous run has ended). The returned run
   * streams posts and outcomes through the options; see `run` for the plain SPMD form.
   */
  launch(program: ProgramRef, options: LaunchOptions): Promise<RankRun>;
  /**
   * Runs an SPMD program on every rank and returns the results by rank. Any rank that throws
   * or dies fails the run (RANK_FAILED naming it; the others are cancelled); the group stays
   * usable. The signal cancels the run (ABORTED).
   */
  run<O = unknown>(
    program: ProgramRef,
    inputs: readonly unknown[] | ((rank: number) => unknown),
    options?: { signal?: AbortSignal; onPost?: (rank: number, data: unknown) => void },
  ): Promise<O[]>;
}

/** Ranks that only decode the tiles of tile jobs and cannot message each other: queue workers (`queueGroup`). */
export interface TileJobGroup extends RankGroupBase {
  readonly kind: 'tile-jobs';
  /**
   * Decodes every tile of the job exactly once into `onResult`. Rejects with RANK_FAILED
   * (naming the rank and the cause) when a rank fails and its tiles cannot be re-dealt, or a
   * result is rejected; ABORTED when the signal fires. Never yields a partial result.
   */
  decodeTiles(job: TileJob, options: TileJobOptions): Promise<TileJobResult>;
}

/** Ranks that decode: `kind` says whether they run rank programs ('programs') or only tile jobs ('tile-jobs'). */
export type RankGroup = ProgramGroup | TileJobGroup;

/** RANK_FAILED naming the rank and what happened to it. */
export function rankFailed(outcome: Exclude<RankOutcome, { status: 'done' }>): DistVaeError {
  const cause =
    outcome.status === 'lost'
      ? `was lost (${outcome.cause})`
      : `failed: ${outcome.error instanceof DistVaeError ? `${outcome.error.code}: ` : ''}${outcome.error.message}`;
  return new DistVaeError('RANK_FAILED', `rank ${outcome.rank} ${cause}`, {
    cause: outcome.status === 'failed' ? outcome.error : undefined,
  });
}
