// The plan report: everything `distvae plan --json` prints about a plan on one sample shape —
// latent, window, overlap, stride, tile list, metrics and the schedule over ranks. The field
// names are the CLI's stable JSON contract (docs/design.md §9).

import type { Size2, VaeSpec } from '../families/types.js';
import { seamOverlaps, tileGrid, type TileGrid } from './grid.js';
import { gridMetrics, scheduleGrid, type GridMetrics } from './metrics.js';
import { latentShapeOf, outputFramesOf, type LatentShape, type SampleShape } from './shapes.js';
import { diffusersDifference } from './equivalence.js';

/** One rank of a plan report: its tiles and their load. */
export interface RankReport {
  rank: number;
  tiles: number[];
  load: number;
}

/** Everything a plan does to one sample: shapes, window and overlap, tiles, metrics and the ranks' loads (`distvae plan --json`). */
export interface PlanReport extends GridMetrics {
  family: string;
  className: string;
  sample: Required<SampleShape>;
  latent: LatentShape;
  /** False when the latent is decoded in one call (tiling off or the latent fits the window). */
  tiled: boolean;
  window: Size2;
  overlap: Size2;
  /** Latent units between tile starts; `frames` when time is tiled. Under a family's own loop: the window less the *minimum* overlap. */
  stride: { height: number; width: number; frames?: number };
  /**
   * A family whose loop derives each seam's overlap (MiniMax-H3: `overlap` is the minimum): the
   * overlap of every seam in output pixels, top to bottom and left to right. Absent otherwise.
   */
  seamOverlaps?: { height: number[]; width: number[] };
  /** Temporal tiling, for families that have it. */
  frames: { enabled: boolean; window: number; overlap: number; chunks: number } | null;
  diffusersEquivalent: boolean;
  /** Why diffusers would not run this plan identically; absent when it would. */
  diffusersDifference?: string;
  imbalance: number;
  idleRanks: number;
  /** Plain words about idle ranks or an untiled decode; absent when there is nothing to say. */
  note?: string;
  ranks: RankReport[];
  tileList: { index: number; row: number; col: number; y0: number; y1: number; x0: number; x1: number }[];
}

/** Report of the VAE's installed tiling on a (valid) sample shape, scheduled over `ranks`. */
export function planReport(vae: VaeSpec, sample: SampleShape, ranks: number): PlanReport {
  const latent = latentShapeOf(vae.geometry, sample);
  const grid = tileGrid(vae, latent);
  return reportOfGrid(vae, grid, ranks);
}

export function reportOfGrid(vae: VaeSpec, grid: TileGrid, ranks: number): PlanReport {
  const metrics = gridMetrics(grid);
  const schedule = scheduleGrid(grid, ranks);
  const g = vae.geometry;
  const frames = vae.tiling.frames;
  const notes: string[] = [];
  if (!grid.tiled)
    notes.push(
      vae.tiling.enabled ? 'the latent fits in one window: decoded whole, in one call' : 'tiling is off: decoded whole, in one call',
    );
  if (schedule.idleRanks.length > 0) {
    notes.push(
      `${metrics.tiles} tile(s) for ${ranks} ranks: ${schedule.idleRanks.length} rank(s) stay idle (work is never duplicated); use a smaller window for more tiles`,
    );
  }
  const report: PlanReport = {
    family: vae.family.name,
    className: vae.config.className,
    sample: {
      height: grid.latent.height * g.spatialRatio,
      width: grid.latent.width * g.spatialRatio,
      frames: outputFramesOf(g, grid.latent.frames),
    },
    latent: grid.latent,
    tiled: grid.tiled,
    window: grid.tiled
      ? { ...vae.tiling.window }
      : { height: grid.latent.height * g.spatialRatio, width: grid.latent.width * g.spatialRatio },
    overlap: grid.tiled ? { ...vae.tiling.overlap } : { height: 0, width: 0 },
    stride: { ...grid.strideLatent },
    frames:
      frames && vae.family.temporal.kind === 'temporal-chunks'
        ? { enabled: frames.enabled, window: frames.window, overlap: frames.overlap, chunks: grid.chunks.length }
        : null,
    diffusersEquivalent: grid.tiled ? diffusersDifference(vae) === null : true,
    ...metrics,
    imbalance: schedule.imbalance,
    idleRanks: schedule.idleRanks.length,
    ranks: schedule.ranks.map((tiles, rank) => ({ rank, tiles, load: schedule.loads[rank]! })),
    tileList: grid.tiles.map((t) => ({ ...t })),
  };
  if (grid.tiled && grid.neighbours === 'raw') {
    const px = g.spatialRatio;
    report.seamOverlaps = { height: seamOverlaps(grid.rows).map((o) => o * px), width: seamOverlaps(grid.cols).map((o) => o * px) };
  }
  if (grid.chunks.length > 1) report.stride.frames = (frames!.window - frames!.overlap) / g.temporalRatio;
  if (notes.length > 0) report.note = notes.join('; ');
  const difference = grid.tiled ? diffusersDifference(vae) : null;
  if (difference !== null) report.diffusersDifference = difference;
  return report;
}
