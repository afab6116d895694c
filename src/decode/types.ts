// Contracts between the decode engine, its strategies and the rank groups (a family's TileRunner
// is in families/runtime-types.ts).

import type { Tensor } from '../tensor.js';

/** One progress report of a decode: tiles done of the total, and the rank that finished the tile. */
export interface DecodeProgress {
  /** Tiles finished / total over the whole decode (all temporal chunks). */
  tilesDone: number;
  tilesTotal: number;
  /** The rank that finished the tile, when distributed. */
  rank?: number;
  /** Temporal chunk index for chunked video decodes. */
  chunk?: number;
}

/** Options of one `vae.decode` call. */
export interface DecodeOptions {
  /** Aborts the decode: it rejects with ABORTED, and ranks are told to stop. */
  signal?: AbortSignal;
  /** Called after every decoded tile, with the running count and the rank that decoded it. */
  onProgress?: (event: DecodeProgress) => void;
}

/** Per-rank accounting of a distributed decode (docs/design.md §9 `decode --json`). */
export interface RankStats {
  rank: number;
  /** Indices of the tiles this rank decoded (empty for an idle rank). */
  tiles: number[];
  /** Work dealt to the rank (latent area of its tiles). */
  load: number;
  seconds: number;
  /** Peak resident memory of the rank's process (process isolation only). */
  peakRssBytes?: number;
}

/**
 * The spatial tiling operation on one latent (or one temporal chunk of it): returns the raw
 * assembled decoder output (before unpatchify / clamp). `vae.tiledDecode` holds one; a rank
 * group's `tiledDecodeFor` returns a drop-in replacement.
 */
export interface TiledDecode {
  (latents: Tensor, options?: DecodeOptions & { progress?: ProgressCounter }): Promise<Tensor>;
  /** True when latents that fit one tile go through it too (a distributed one decodes them whole on one rank). */
  readonly decodesUntiled?: boolean;
  /**
   * The same operation handing the raw output on as bands of finished rows (in order) instead of
   * returning it whole, so memory does not grow with the image; resolves to the output's dims.
   * Optional: without it, `decodeToBands` decodes whole first.
   */
  readonly streamBands?: (
    latents: Tensor,
    onBand: (y0: number, band: Tensor) => void,
    options?: DecodeOptions & { progress?: ProgressCounter },
  ) => Promise<{ dims: number[] }>;
}

/** Counts finished tiles across the chunks of one decode and reports them. */
export class ProgressCounter {
  private done = 0;
  constructor(
    readonly total: number,
    private readonly listener?: (e: DecodeProgress) => void,
  ) {}

  tileDone(extra: { rank?: number; chunk?: number } = {}): void {
    this.done++;
    this.listener?.({ tilesDone: this.done, tilesTotal: this.total, ...extra });
  }
}
