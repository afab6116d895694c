// Where each tile lands on the raw decoder output: extents, blend extents and crops in output
// units (spatialRatio / patchSize per latent unit), from a plan's grid.

import type { TileGrid } from '../plan/grid.js';

export interface TileLayout {
  /** Output size of the whole raw decode (latent × output units per latent unit). */
  outHeight: number;
  outWidth: number;
  /** Blend extents E and crop sizes per tile, in output units. */
  blend: { height: number; width: number };
  keep: { height: number; width: number };
  rows: number;
  cols: number;
  /** Per tile (raster index): extent in output units. */
  extents: { height: number; width: number }[];
  /** True when every blend only reads raw neighbour edges (overlap ≤ window/2 on both axes, or raw-neighbour blending). */
  edgesSuffice: boolean;
  /** Per tile row / column: output offset of its crop, blend extent E of the seam before it (0 first), rows / columns kept. */
  rowY: number[];
  colX: number[];
  rowBlend: number[];
  colBlend: number[];
  rowKeep: number[];
  colKeep: number[];
  /** Tiles blend with their neighbours' raw decodes (no corner), not with neighbours already blended (plan/grid.ts `neighbours`). */
  rawNeighbours: boolean;
}

export function tileLayout(grid: TileGrid): TileLayout {
  const u = grid.outputPerLatent;
  return {
    outHeight: grid.latent.height * u,
    outWidth: grid.latent.width * u,
    blend: { ...grid.blend },
    keep: { ...grid.keep },
    rows: grid.rows.length,
    cols: grid.cols.length,
    extents: grid.tiles.map((t) => ({ height: (t.y1 - t.y0) * u, width: (t.x1 - t.x0) * u })),
    // Stride ≥ E on each axis ⇔ overlap ≤ window/2: a tile's blended first rows/columns never
    // reach the last rows/columns its neighbours read. Raw-neighbour blends read raw edges anyway.
    edgesSuffice: grid.neighbours === 'raw' || (grid.keep.height >= grid.blend.height && grid.keep.width >= grid.blend.width),
    rowY: grid.rows.map((s) => s.start * u),
    colX: grid.cols.map((s) => s.start * u),
    rowBlend: [...grid.rowBlend],
    colBlend: [...grid.colBlend],
    rowKeep: [...grid.rowKeep],
    colKeep: [...grid.colKeep],
    rawNeighbours: grid.neighbours === 'raw',
  };
}

/** Where a tile's crop goes: rows [y, y + h), cols [x, x + w) of the output. */
export function cropPlacement(layout: TileLayout, index: number): { y: number; x: number; h: number; w: number } {
  const row = Math.floor(index / layout.cols);
  const col = index % layout.cols;
  const ext = layout.extents[index]!;
  return {
    y: layout.rowY[row]!,
    x: layout.colX[col]!,
    h: Math.min(layout.rowKeep[row]!, ext.height),
    w: Math.min(layout.colKeep[col]!, ext.width),
  };
}
