// Halo-exact tiles on a rank group: tiles are dealt by the latent area each one decodes
// (core + halo) with the planner's scheduler; every rank decodes its tiles with its own runner
// and returns only their cores, which the coordinator writes into the output. No tile needs
// another's result (no blending), so ranks never message each other.

import { asPlanes, throwIfAborted } from '../decode/engine.js';
import { checkLatents, sliceLatent } from '../decode/latents.js';
import type { RankStats, TiledDecode } from '../decode/types.js';
import { rankFailed, type LocalGroup, type RankOutcome } from '../dist/local/local-group.js';
import { programRef, type RankContext, type VaeRef } from '../dist/program.js';
import type { DistributableVae } from '../dist/tiled-decode.js';
import type { DistVaeError } from '../errors.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { tileGrid } from '../plan/grid.js';
import { scheduleTiles } from '../plan/scheduler.js';
import type { Tensor } from '../tensor.js';
import { copyBlock, corePlacement, exactTiles, exactTilingHalo, type ExactTile, type PlaneBlock } from './exact.js';

export const EXACT_TILE_PROGRAM = programRef(new URL('./exact-distributed.js', import.meta.url), 'exactTileRank');

interface ExactTileWork {
  index: number;
  tile: ExactTile;
  latent: Tensor;
}

interface ExactTileRankInput {
  vae: VaeRef;
  perLatent: number;
  work: ExactTileWork[];
}

interface ExactTileRankResult {
  /** Each tile's core planes (B·C planes of core rows × core cols), by tile index. */
  cores: (PlaneBlock & { index: number; leading: number[] })[];
  seconds: number;
  loadSeconds: number;
}

export async function exactTileRank(ctx: RankContext, input: ExactTileRankInput): Promise<ExactTileRankResult> {
  const started = performance.now();
  const vae = await ctx.loadVae(input.vae);
  const loaded = performance.now();
  const cores: ExactTileRankResult['cores'] = [];
  for (const w of input.work) {
    throwIfAborted(ctx.signal);
    const raw = await vae.runner.decode(w.latent, ctx.signal);
    const planes = asPlanes(raw);
    const c = corePlacement(w.tile, input.perLatent);
    const core: PlaneBlock = { planes: planes.planes, height: c.h, width: c.w, data: new Float32Array(planes.planes * c.h * c.w) };
    copyBlock(planes, c.sy, c.sx, c.h, c.w, core, 0, 0);
    cores.push({ ...core, index: w.index, leading: raw.dims.slice(0, -2) as number[] });
  }
  return { cores, seconds: (performance.now() - started) / 1000, loadSeconds: (loaded - started) / 1000 };
}

export interface ExactTileStats {
  ranks: (RankStats & { loadSeconds: number })[];
  tiles: number;
  halo: { rows: number; cols: number };
}

export interface DistributedExactTiledDecode extends TiledDecode {
  readonly lastStats: ExactTileStats | null;
}

/** Halo-exact tiles of `vae` dealt to `group`'s ranks; `model` is the VAE's decoder graph (checked here). */
export function exactTiledDecodeFor(vae: DistributableVae, model: ModelProto, group: LocalGroup, options: { onStats?: (s: ExactTileStats) => void } = {}): DistributedExactTiledDecode {
  const halo = exactTilingHalo(model);
  let lastStats: ExactTileStats | null = null;
  const decode: TiledDecode = async (latents, decodeOptions = {}) => {
    throwIfAborted(decodeOptions.signal);
    const latent = checkLatents(vae, latents);
    const grid = tileGrid(vae, latent, { spatialOnly: true });
    const u = grid.outputPerLatent;
    const tiles = exactTiles(grid, halo);
    const work = tiles.map((t) => (t.read.y1 - t.read.y0) * (t.read.x1 - t.read.x0));
    const schedule = scheduleTiles(work, group.size);
    const ref = { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() };
    let failure: DistVaeError | null = null;
    const run = await group.launch(EXACT_TILE_PROGRAM, {
      input: (rank): ExactTileRankInput => ({ vae: ref, perLatent: u, work: (schedule.ranks[rank] ?? []).map((i) => ({ index: i, tile: tiles[i]!, latent: sliceLatent(latents, tiles[i]!.read) })) }),
      ...(decodeOptions.signal ? { signal: decodeOptions.signal } : {}),
      onOutcome: (o: RankOutcome) => {
        if (o.status === 'done' || failure) return;
        failure = rankFailed(o);
        run.cancel(`rank ${o.rank} failed`);
      },
    });
    const outcomes = await run.settled;
    throwIfAborted(decodeOptions.signal);
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
        copyBlock(c, 0, 0, place.h, place.w, out, place.y, place.x);
        decodeOptions.progress?.tileDone({ rank: o.rank });
      }
      ranks.push({ rank: o.rank, tiles: schedule.ranks[o.rank] ?? [], load: schedule.loads[o.rank] ?? 0, seconds: result.seconds, loadSeconds: result.loadSeconds, ...(o.peakRssBytes !== undefined ? { peakRssBytes: o.peakRssBytes } : {}) });
    }
    lastStats = { ranks, tiles: tiles.length, halo };
    options.onStats?.(lastStats);
    return { dims: [...leading, out.height, out.width], data: out.data };
  };
  return Object.defineProperties(decode, {
    decodesUntiled: { value: true, enumerable: true },
    lastStats: { get: () => lastStats, enumerable: true },
  }) as DistributedExactTiledDecode;
}
