// `tiledDecodeFor(vae, group)` (docs/design.md §4): a drop-in replacement for `vae.tiledDecode` that
// deals whole tiles to a group's ranks by work (the planner's scheduler), lets the ranks
// exchange raw edges and finalise their own crops, and writes the gathered crops into the
// output — the coordinator never holds a whole tile. When the overlap exceeds half the window
// (raw edges no longer suffice) or the group only decodes tile jobs (a queue: its ranks cannot
// message each other), ranks return raw tiles and the coordinator blends them with the streaming raster assembler
// (`stats.assembly` says which). Bitwise identical to `localTiledDecode` of the same plan. Its
// `streamBands` hands finished bands of rows on instead (both assemblies, tiles arriving in any
// order), dealing tiles round-robin so rows finish from the top and few are held.

import { checkLatents, sliceLatent } from '../../decode/latents.js';
import type { DecodeOptions, ProgressCounter, TiledDecode } from '../../decode/types.js';
import { DistVaeError, throwIfAborted } from '../../errors.js';
import { tileGrid, type TileGrid } from '../../plan/grid.js';
import { scheduleGrid, tileWork } from '../../plan/metrics.js';
import { scheduleInterleaved } from '../../plan/scheduler.js';
import { elementCount, type Tensor } from '../../tensor.js';
import { CropBandAssembler, RasterAssembler, writeCrop } from '../../tile/assembler.js';
import { planes, type Planes } from '../../tile/blend.js';
import { tileLayout } from '../../tile/layout.js';
import { checkFiniteOutput } from '../../tile/finite.js';
import type { DistributableVae } from '../distributable.js';
import type { VaeRef } from '../../ranks/program.js';
import type { Assembly, RankGroup, TileJob, TileJobOptions, TileJobResult, TileResult } from '../../ranks/group.js';
import { runTileJob } from './coordinator.js';

/** What one distributed tiling call did: transport, assembly, tiles, idle ranks and every rank's accounting. */
export interface DistributedDecodeStats extends TileJobResult {
  transport: string;
  assembly: Assembly;
  /** Tiles of this spatial tiling operation. */
  tiles: number;
  /** Ranks that were dealt no tile (fewer tiles than ranks): work is never duplicated. */
  idleRanks: number[];
  /** Wall time of the operation on the coordinator. */
  seconds: number;
}

/** A tiled decode through a rank group, with the statistics of its last call. */
export interface DistributedTiledDecode extends TiledDecode {
  /** Statistics of the last call (one call per temporal chunk), null before the first. */
  readonly lastStats: DistributedDecodeStats | null;
}

/** Options of `tiledDecodeFor`. */
export interface TiledDecodeForOptions {
  /** Called after every call (once per temporal chunk) with its statistics. */
  onStats?: (stats: DistributedDecodeStats) => void;
  /**
   * Decode through the group even when there is nothing to distribute (one rank, or tiling off:
   * one tile on rank 0). Keeps decoder calls off the calling thread, so it stays free to act on
   * signals. Default: null there.
   */
  offThread?: boolean;
}

/**
 * The distributed spatial tiling operation for `vae` on `group`, or null when there is nothing
 * to distribute: a single rank, or tiling off (docs/design.md §4). Tiling on with the family's default
 * window (`setTiling(vae)`) distributes. `useStrategy(vae, 'tile', group)` installs it.
 */
export function tiledDecodeFor(
  vae: DistributableVae,
  group: RankGroup,
  options: TiledDecodeForOptions = {},
): DistributedTiledDecode | null {
  if (group.size < (options.offThread ? 1 : 2) || (!vae.tiling.enabled && !options.offThread)) return null;
  let lastStats: DistributedDecodeStats | null = null;
  /** The operation; with `onBand`, finished bands of rows go there in order and nothing whole is held. */
  const run = async (
    latents: Tensor,
    decodeOptions: DecodeOptions & { progress?: ProgressCounter },
    onBand?: (y0: number, band: Tensor) => void,
  ): Promise<{ dims: number[]; output: Planes | null }> => {
    throwIfAborted(decodeOptions.signal);
    const latent = checkLatents(vae, latents);
    const grid = tileGrid(vae, latent, { spatialOnly: true });
    const ref = { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() };
    const result = await distributeTiles(group, ref, grid, (index) => sliceLatent(latents, grid.tiles[index]!), decodeOptions, onBand);
    lastStats = result.stats;
    options.onStats?.(lastStats);
    return result;
  };
  const decode: TiledDecode = async (latents, decodeOptions = {}) => {
    const { dims, output } = await run(latents, decodeOptions);
    return { dims, data: output!.data };
  };
  return Object.defineProperties(decode, {
    decodesUntiled: { value: true, enumerable: true },
    streamBands: {
      value: async (
        latents: Tensor,
        onBand: (y0: number, band: Tensor) => void,
        decodeOptions: DecodeOptions & { progress?: ProgressCounter } = {},
      ) => ({ dims: (await run(latents, decodeOptions, onBand)).dims }),
      enumerable: true,
    },
    lastStats: { get: () => lastStats, enumerable: true },
  }) as DistributedTiledDecode;
}

/**
 * One distributed spatial tiling operation over `grid` on `group`: tiles dealt by work (or
 * round-robin when streaming bands), each rank running `ref`'s half (a decoder, or an encoder's
 * tiles: `ref.part`) on the inputs `inputOf` cuts, edges exchanged or raw tiles blended as the
 * layout allows, and the results written into the output (or handed on as bands). Shared by
 * `tiledDecodeFor` and `tiledEncodeFor`, so both are bitwise the one-rank operation of their grid.
 */
export async function distributeTiles(
  group: RankGroup,
  ref: VaeRef,
  grid: TileGrid,
  inputOf: (index: number) => Tensor,
  decodeOptions: { signal?: AbortSignal; progress?: ProgressCounter },
  onBand?: (y0: number, band: Tensor) => void,
): Promise<{ dims: number[]; output: Planes | null; stats: DistributedDecodeStats }> {
  const layout = tileLayout(grid);
  // Streaming deals tiles round-robin in raster order, so rows complete from the top.
  const schedule = onBand ? scheduleInterleaved(tileWork(grid), group.size) : scheduleGrid(grid, group.size);
  const assembly: Assembly = layout.edgesSuffice && group.kind === 'programs' ? 'edges' : 'raster';
  const started = performance.now();
  let leading: number[] | null = null;
  let output: Planes | null = null;
  let place: ((index: number, p: Planes) => void) | null = null;
  const onResult = (r: TileResult) => {
    const p = r.planes;
    if (!(p?.data instanceof Float32Array) || p.data.length !== p.planes * p.height * p.width) {
      throw new DistVaeError(
        'TENSOR_INVALID',
        `tile ${r.index} arrived as ${p?.planes}x${p?.height}x${p?.width} with ${p?.data?.length} values (not a matching Float32Array)`,
      );
    }
    if (!Array.isArray(r.leading) || elementCount(r.leading) !== p.planes || (leading !== null && r.leading.join() !== leading.join())) {
      throw new DistVaeError(
        'TENSOR_INVALID',
        `tile ${r.index} has leading dimensions [${r.leading}] for ${p.planes} planes; expected [${leading ?? `a product of ${p.planes}`}]`,
      );
    }
    // Raw tiles (raster assembly) or the crops their ranks finalised (edge assembly): what is placed next.
    checkFiniteOutput({ dims: [...r.leading, p.height, p.width], data: p.data }, `tile ${r.index} (rank ${r.rank})`);
    if (!place) {
      const lead = [...r.leading];
      leading = lead;
      if (onBand) {
        const sink = {
          planes: p.planes,
          band: (y0: number, band: Planes) => onBand(y0, { dims: [...lead, band.height, band.width], data: band.data }),
        };
        const assembler = assembly === 'raster' ? new RasterAssembler(layout, sink) : new CropBandAssembler(layout, sink);
        place = (index, tile) => assembler.add(index, tile);
      } else {
        const whole = planes(p.planes, layout.outHeight, layout.outWidth);
        output = whole;
        const assembler = assembly === 'raster' ? new RasterAssembler(layout, whole) : null;
        place = (index, tile) => (assembler ? assembler.add(index, tile) : writeCrop(layout, index, tile, whole));
      }
    }
    place(r.index, p);
    decodeOptions.progress?.tileDone({ rank: r.rank });
  };
  const job: TileJob = {
    vae: ref,
    layout,
    latentOf: inputOf,
    work: tileWork(grid),
    schedule,
    assembly,
  };
  const jobOptions: TileJobOptions = { onResult, ...(decodeOptions.signal ? { signal: decodeOptions.signal } : {}) };
  // A group that runs rank programs runs this strategy's tile program; a tile-job group decodes the job itself.
  const result = await (group.kind === 'programs' ? runTileJob(group, job, jobOptions) : group.decodeTiles(job, jobOptions));
  const stats: DistributedDecodeStats = {
    ...result,
    transport: group.transport,
    assembly,
    tiles: grid.tiles.length,
    idleRanks: schedule.idleRanks,
    seconds: (performance.now() - started) / 1000,
  };
  return { dims: [...leading!, layout.outHeight, layout.outWidth], output, stats };
}
