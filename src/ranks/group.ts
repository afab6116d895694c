// The rank-group contract every transport implements (local threads, local processes, and a
// job queue): run the tiles of one tiled decode on the group's ranks and stream the results
// back. The caller (`tiledDecodeFor`) plans, deals and assembles; a transport moves latent
// slices out and crops (or raw tiles) back, loads the VAE on its ranks, and recovers from
// ranks it loses. A pull-based transport (a queue) may treat each rank's dealt run as one job.

import type { RankStats } from '../decode/types.js';
import type { Schedule } from '../plan/scheduler.js';
import type { Tensor } from '../tensor.js';
import type { Planes } from '../tile/blend.js';
import type { TileLayout } from '../tile/layout.js';
import type { CommCounters, VaeRef } from './program.js';

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
  /** Latent slice of every tile, raster order. */
  latents: readonly Tensor[];
  /** Work of every tile (the scheduler's units: latent area × frames). */
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

/** Ranks that decode tiles: local threads or processes (`localGroup`), or queue workers (`queueGroup`). */
export interface RankGroup {
  /** Number of ranks tiles are dealt to. */
  readonly size: number;
  /** e.g. 'local-thread', 'local-process'. */
  readonly transport: string;
  /** Whether ranks can message each other ('edges' assembly); otherwise jobs use 'raster'. */
  readonly rankToRank: boolean;
  /**
   * Decodes every tile of the job exactly once into `onResult`. Rejects with RANK_FAILED
   * (naming the rank and the cause) when a rank fails and its tiles cannot be re-dealt, or a
   * result is rejected; ABORTED when the signal fires. Never yields a partial result.
   */
  decodeTiles(job: TileJob, options: TileJobOptions): Promise<TileJobResult>;
  /** Ends every rank; the group cannot be used afterwards. */
  close(): Promise<void>;
}
