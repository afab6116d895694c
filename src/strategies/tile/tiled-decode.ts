// `tiledDecodeFor(vae, group)` (docs/design.md §4): a drop-in replacement for `vae.tiledDecode` that
// deals whole tiles to a group's ranks by work (the planner's scheduler), lets the ranks
// exchange raw edges and finalise their own crops, and writes the gathered crops into the
// output — the coordinator never holds a whole tile. When the overlap exceeds half the window
// (raw edges no longer suffice) or the transport's ranks cannot message each other, ranks
// return raw tiles and the coordinator blends them with the streaming raster assembler
// (`stats.assembly` says which). Bitwise identical to `localTiledDecode` of the same plan.

import { checkFiniteOutput, throwIfAborted } from '../../decode/engine.js';
import { checkLatents, sliceLatent } from '../../decode/latents.js';
import type { TiledDecode } from '../../decode/types.js';
import { DistVaeError } from '../../errors.js';
import { tileGrid } from '../../plan/grid.js';
import { scheduleGrid, tileWork } from '../../plan/metrics.js';
import { elementCount } from '../../tensor.js';
import { RasterAssembler, writeCrop } from '../../tile/assembler.js';
import { planes, type Planes } from '../../tile/blend.js';
import { tileLayout } from '../../tile/layout.js';
import type { DistributableVae } from '../distributable.js';
import type { Assembly, RankGroup, TileJobResult, TileResult } from '../../ranks/group.js';

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
export function tiledDecodeFor(vae: DistributableVae, group: RankGroup, options: TiledDecodeForOptions = {}): DistributedTiledDecode | null {
  if (group.size < (options.offThread ? 1 : 2) || (!vae.tiling.enabled && !options.offThread)) return null;
  let lastStats: DistributedDecodeStats | null = null;
  const decode: TiledDecode = async (latents, decodeOptions = {}) => {
    throwIfAborted(decodeOptions.signal);
    const latent = checkLatents(vae, latents);
    const grid = tileGrid(vae, latent, { spatialOnly: true });
    const layout = tileLayout(grid);
    const schedule = scheduleGrid(grid, group.size);
    const assembly: Assembly = layout.edgesSuffice && group.rankToRank ? 'edges' : 'raster';
    const started = performance.now();
    let leading: number[] | null = null;
    let output: Planes | null = null;
    let assembler: RasterAssembler | null = null;
    const onResult = (r: TileResult) => {
      const p = r.planes;
      if (!(p?.data instanceof Float32Array) || p.data.length !== p.planes * p.height * p.width) {
        throw new DistVaeError('TENSOR_INVALID', `tile ${r.index} arrived as ${p?.planes}x${p?.height}x${p?.width} with ${p?.data?.length} values (not a matching Float32Array)`);
      }
      checkFiniteOutput(p.data, `tile ${r.index} (rank ${r.rank})`);
      if (!Array.isArray(r.leading) || elementCount(r.leading) !== p.planes || (leading !== null && r.leading.join() !== leading.join())) {
        throw new DistVaeError('TENSOR_INVALID', `tile ${r.index} has leading dimensions [${r.leading}] for ${p.planes} planes; expected [${leading ?? `a product of ${p.planes}`}]`);
      }
      if (!output) {
        leading = [...r.leading];
        output = planes(p.planes, layout.outHeight, layout.outWidth);
        assembler = assembly === 'raster' ? new RasterAssembler(layout, output) : null;
      }
      if (assembler) assembler.add(r.index, p);
      else writeCrop(layout, r.index, p, output);
      decodeOptions.progress?.tileDone({ rank: r.rank });
    };
    const result = await group.decodeTiles(
      {
        vae: { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() },
        layout,
        latents: grid.tiles.map((t) => sliceLatent(latents, t)),
        work: tileWork(grid),
        schedule,
        assembly,
      },
      { onResult, ...(decodeOptions.signal ? { signal: decodeOptions.signal } : {}) },
    );
    lastStats = { ...result, transport: group.transport, assembly, tiles: grid.tiles.length, idleRanks: schedule.idleRanks, seconds: (performance.now() - started) / 1000 };
    options.onStats?.(lastStats);
    return { dims: [...leading!, layout.outHeight, layout.outWidth], data: output!.data };
  };
  return Object.defineProperties(decode, {
    decodesUntiled: { value: true, enumerable: true },
    lastStats: { get: () => lastStats, enumerable: true },
  }) as DistributedTiledDecode;
}
