// Metrics of a tile grid on a latent (docs/design.md §5) and its schedule over ranks: tile count,
// rows × columns, decoded-area ratio, activation share, seams, per-rank load and imbalance.

import { framesPerTile, tileArea, type TileGrid } from './grid.js';
import { scheduleTiles, type Schedule } from './scheduler.js';

/** What a grid costs: tile counts, decoded area against the latent, activation share, seams and imbalance. */
export interface GridMetrics {
  tiles: number;
  rows: number;
  columns: number;
  /** Σ tile area / latent area (≥ 1; the overlap decoded twice). */
  decodedAreaRatio: number;
  /** Largest tile area / latent area: the share of the whole decode's activations one call holds. */
  activationShare: number;
  /** Pairs of neighbouring tiles: cols·(rows−1) + rows·(cols−1). */
  seams: number;
}

/** The metrics of `grid` (pure arithmetic on the tiles). */
export function gridMetrics(grid: TileGrid): GridMetrics {
  const latentArea = grid.latent.height * grid.latent.width;
  const areas = grid.tiles.map(tileArea);
  const rows = grid.rows.length;
  const columns = grid.cols.length;
  return {
    tiles: grid.tiles.length,
    rows,
    columns,
    decodedAreaRatio: areas.reduce((a, b) => a + b, 0) / latentArea,
    activationShare: areas.reduce((m, a) => Math.max(m, a), 0) / latentArea,
    seams: columns * (rows - 1) + rows * (columns - 1),
  };
}

/** Work of each tile: latent area × latent frames it carries (over all temporal chunks). */
export function tileWork(grid: TileGrid): number[] {
  const frames = framesPerTile(grid);
  return grid.tiles.map((t) => tileArea(t) * frames);
}

/** The grid's tiles dealt to `ranks` by work (latent area × frames). */
export function scheduleGrid(grid: TileGrid, ranks: number): Schedule {
  return scheduleTiles(tileWork(grid), ranks);
}
