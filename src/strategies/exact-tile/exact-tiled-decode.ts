// `exactTiledDecodeFor(vae, group)`: the coordinator of halo-exact tiles on a rank group.
// Tiles are dealt by the latent area each one decodes (core + halo) with the planner's
// scheduler; every rank decodes its tiles with its own runner (rank-program.ts) and returns only
// their cores, which the coordinator writes into the output. No tile needs
// another's result (no blending), so ranks never message each other.

import { throwIfAborted } from '../../errors.js';
import { checkLatents, sliceLatent } from '../../decode/latents.js';
import type { ProgressCounter, RankStats, TiledDecode } from '../../decode/types.js';
import { rankFailed, type ProgramGroup, type RankOutcome } from '../../ranks/group.js';
import { programRef, type VaeRef } from '../../ranks/program.js';
import type { AnalyzableVae } from '../distributable.js';
import type { DistVaeError } from '../../errors.js';
import { tileGrid, type TileGrid } from '../../plan/grid.js';
import type { Tensor } from '../../tensor.js';
import { scheduleTiles } from '../../plan/scheduler.js';
import { copyBlock, corePlacement, exactTiles, exactTilingHalo, type ExactTile, type Halo, type PlaneBlock } from './halo.js';
import type { ExactTileRankInput, ExactTileRankResult } from './rank-program.js';
import { checkFiniteOutput } from '../../tile/finite.js';

export const EXACT_TILE_PROGRAM = programRef(new URL('./rank-program.js', import.meta.url), 'exactTileRank');

/** What a halo-exact tiled decode did: every rank's accounting, the tiles and the halo. */
export interface ExactTileStats {
  ranks: (RankStats & { loadSeconds: number })[];
  tiles: number;
  halo: { rows: number; cols: number };
}

/** A halo-exact tiled decode through a rank group, with the statistics of its last call. */
export interface DistributedExactTiledDecode extends TiledDecode {
  readonly lastStats: ExactTileStats | null;
}

/**
 * Halo-exact tiles of `vae` dealt to `group`'s ranks. Its decoder graph is analysed here, before
 * any rank works: a graph with nonlocal ops is refused (UNSUPPORTED), naming them.
 */
export function exactTiledDecodeFor(
  vae: AnalyzableVae,
  group: ProgramGroup,
  options: { onStats?: (s: ExactTileStats) => void } = {},
): DistributedExactTiledDecode {
  const halo = exactTilingHalo(vae.decoderModel());
  let lastStats: ExactTileStats | null = null;
  const decode: TiledDecode = async (latents, decodeOptions = {}) => {
    throwIfAborted(decodeOptions.signal);
    const latent = checkLatents(vae, latents);
    const grid = tileGrid(vae, latent, { spatialOnly: true });
    const ref = { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() };
    const { output, stats } = await runExactTiles(group, ref, grid, halo, (read) => sliceLatent(latents, read), decodeOptions);
    lastStats = stats;
    options.onStats?.(lastStats);
    return output;
  };
  return Object.defineProperties(decode, {
    decodesUntiled: { value: true, enumerable: true },
    lastStats: { get: () => lastStats, enumerable: true },
  }) as DistributedExactTiledDecode;
}

/**
 * One halo-exact tiled run on `group`: `grid`'s tiles with `halo` latent units around their
 * cores, dealt by the area each one reads; each rank runs `ref`'s runner (a decoder, or an
 * encoder by `part`) on the inputs `slice` cuts for its tiles and returns only their cores,
 * which land in the output here (`grid.outputPerLatent` output units per latent unit).
 */
export async function runExactTiles(
  group: ProgramGroup,
  ref: VaeRef,
  grid: TileGrid,
  halo: Halo,
  slice: (read: ExactTile['read']) => Tensor,
  runOptions: { signal?: AbortSignal; progress?: ProgressCounter },
): Promise<{ output: Tensor; stats: ExactTileStats }> {
  const { latent } = grid;
  const u = grid.outputPerLatent;
  const tiles = exactTiles(grid, halo);
  const work = tiles.map((t) => (t.read.y1 - t.read.y0) * (t.read.x1 - t.read.x0));
  const schedule = scheduleTiles(work, group.size);
  let failure: DistVaeError | null = null;
  const run = await group.launch(EXACT_TILE_PROGRAM, {
    input: (rank): ExactTileRankInput => ({
      vae: ref,
      perLatent: u,
      work: (schedule.ranks[rank] ?? []).map((i) => ({ index: i, tile: tiles[i]!, latent: slice(tiles[i]!.read) })),
    }),
    ...(runOptions.signal ? { signal: runOptions.signal } : {}),
    onOutcome: (o: RankOutcome) => {
      if (o.status === 'done' || failure) return;
      failure = rankFailed(o);
      run.cancel(`rank ${o.rank} failed`);
    },
  });
  const outcomes = await run.settled;
  throwIfAborted(runOptions.signal);
  if (failure) throw failure;
  const out: PlaneBlock = { planes: 0, height: latent.height * u, width: latent.width * u, data: new Float32Array(0) };
  let leading: number[] = [];
  const ranks: ExactTileStats['ranks'] = [];
  for (const o of outcomes as Extract<RankOutcome, { status: 'done' }>[]) {
    const result = o.result as ExactTileRankResult;
    for (const c of result.cores) {
      if (out.planes === 0) {
        leading = c.leading;
        out.planes = c.planes;
        out.data = new Float32Array(c.planes * out.height * out.width);
      }
      const place = corePlacement(tiles[c.index]!, u);
      checkFiniteOutput({ dims: [...c.leading, c.height, c.width], data: c.data }, `tile ${c.index} (rank ${o.rank})`, {
        sy: 0,
        sx: 0,
        h: place.h,
        w: place.w,
        y: place.y,
        x: place.x,
      });
      copyBlock(c, 0, 0, place.h, place.w, out, place.y, place.x);
      runOptions.progress?.tileDone({ rank: o.rank });
    }
    ranks.push({
      rank: o.rank,
      tiles: schedule.ranks[o.rank] ?? [],
      load: schedule.loads[o.rank] ?? 0,
      seconds: result.seconds,
      loadSeconds: result.loadSeconds,
      ...(o.peakRssBytes !== undefined ? { peakRssBytes: o.peakRssBytes } : {}),
    });
  }
  return { output: { dims: [...leading, out.height, out.width], data: out.data }, stats: { ranks, tiles: tiles.length, halo } };
}
