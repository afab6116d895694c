// Streaming assembly of decoded tiles into the output (docs/design.md §3): diffusers' in-place raster
// blend (blend_v with the tile above, then blend_h with the tile on the left), crop to the
// stride, concatenate. Tiles may arrive in any order; each is blended and written as soon as
// the tiles before it in raster order are in, and only the blended last rows of the previous
// tile row and the last columns of the previous tile are kept — live memory is the output plus
// about one row of edges, never all tiles. Given a band sink instead of an output, it holds
// one tile row's crops only and hands each band of finished rows on as soon as the row's last
// tile is placed, so memory does not grow with the image's height. CropBandAssembler does the
// same for crops finalised elsewhere (by ranks), which may arrive in any order.

import { DistVaeError } from '../errors.js';
import { blendH, blendV, planes, sliceCols, sliceRows, writeBlock, type Planes } from './blend.js';
import { cropPlacement, type TileLayout } from './layout.js';

/** Receives finished output rows [y0, y0 + band.height) of every plane, in order, once each. */
export interface BandSink {
  /** Planes of the output (B·C·F). */
  readonly planes: number;
  band(y0: number, band: Planes): void;
}

export class RasterAssembler {
  private readonly aboveRows: (Planes | null)[];
  private leftCols: Planes | null = null;
  private readonly pending = new Map<number, Planes>();
  private next = 0;
  private readonly whole: Planes | null;
  private readonly sink: BandSink | null;
  /** The band of the tile row being placed (band mode). */
  private band: Planes | null = null;

  /** Assembles into `target`: the whole output, or a sink that takes finished bands of rows. */
  constructor(
    private readonly layout: TileLayout,
    target: Planes | BandSink,
  ) {
    this.aboveRows = new Array<Planes | null>(layout.cols).fill(null);
    const isSink = typeof (target as BandSink).band === 'function';
    this.whole = isSink ? null : (target as Planes);
    this.sink = isSink ? (target as BandSink) : null;
  }

  /** The whole output (whole-output mode only). */
  get output(): Planes {
    if (!this.whole) throw new Error('unreachable: a banded assembler holds no whole output');
    return this.whole;
  }

  private get planeCount(): number {
    return this.whole ? this.whole.planes : this.sink!.planes;
  }

  get complete(): boolean {
    return this.next === this.layout.extents.length;
  }

  /** Accepts raw tile `index` (planes × extent); blends and writes every tile now in order. */
  add(index: number, tile: Planes): void {
    checkTile(this.layout, index, tile, this.planeCount);
    if (index < this.next || this.pending.has(index)) {
      throw new DistVaeError('RUNTIME_FAILED', `tile ${index} was delivered twice`);
    }
    this.pending.set(index, tile);
    while (this.pending.has(this.next)) {
      const t = this.pending.get(this.next)!;
      this.pending.delete(this.next);
      this.place(this.next++, t);
    }
  }

  private place(index: number, tile: Planes): void {
    const { cols, rows, rowBlend, colBlend, rawNeighbours } = this.layout;
    const row = Math.floor(index / cols);
    const col = index % cols;
    // Raw-neighbour blending (MiniMax-H3) hands on the raw edges, taken before this tile is blended.
    const edges = rawNeighbours ? tileEdges(this.layout, tile, index) : null;
    const above = this.aboveRows[col];
    if (row > 0 && above) blendV(above, tile, Math.min(above.height, tile.height, rowBlend[row]!));
    if (col > 0 && this.leftCols) blendH(this.leftCols, tile, Math.min(this.leftCols.width, tile.width, colBlend[col]!));
    const at = cropPlacement(this.layout, index);
    if (this.whole) {
      writeBlock(tile, at.h, at.w, this.whole, at.y, at.x);
    } else {
      // The row's crops share its first tile's height (every tile of a row has the same extent rows).
      this.band ??= planes(this.planeCount, at.h, this.layout.outWidth);
      writeBlock(tile, at.h, at.w, this.band, 0, at.x);
      if (col === cols - 1) {
        const band = this.band;
        this.band = null;
        this.sink!.band(at.y, band);
      }
    }
    const next = edges ?? tileEdges(this.layout, tile, index);
    this.aboveRows[col] = row + 1 < rows ? next.lastRows : null;
    this.leftCols = col + 1 < cols ? next.lastCols : null;
  }
}

/** The raw edges of a decoded tile that its neighbours' blends read (one blend deep). */
export interface TileEdges {
  /** Last min(E_h, extent) rows, full width. */
  lastRows: Planes;
  /** Last min(E_w, extent) columns, full height. */
  lastCols: Planes;
}

/** The edges of tile `index` its neighbours below and to the right read: as many rows / columns as the seam after it blends. */
export function tileEdges(layout: TileLayout, tile: Planes, index: number): TileEdges {
  const row = Math.floor(index / layout.cols);
  const col = index % layout.cols;
  const e = { height: layout.rowBlend[row + 1] ?? 0, width: layout.colBlend[col + 1] ?? 0 };
  return {
    lastRows: sliceRows(tile, tile.height - Math.min(e.height, tile.height), tile.height),
    lastCols: sliceCols(tile, tile.width - Math.min(e.width, tile.width), tile.width),
  };
}

/** Indices of the tiles whose edges tile `index` needs: above, left and above-left. */
export function edgeSources(layout: TileLayout, index: number): { above: number | null; left: number | null; corner: number | null } {
  const row = Math.floor(index / layout.cols);
  const col = index % layout.cols;
  return {
    above: row > 0 ? index - layout.cols : null,
    left: col > 0 ? index - 1 : null,
    // Raw-neighbour blending reads the above and left tiles' raw edges only.
    corner: row > 0 && col > 0 && !layout.rawNeighbours ? index - layout.cols - 1 : null,
  };
}

/**
 * A tile's final crop from its raw decode and its neighbours' raw edges (valid when
 * `layout.edgesSuffice`): the tile above's last rows are first blended with the above-left
 * corner, the left tile's last columns with the same corner — exactly what the in-place raster
 * loop would have done to them — then this tile is blended and cropped. Same arithmetic as
 * `RasterAssembler`, so the result is bitwise identical.
 */
export function finalizeTile(
  layout: TileLayout,
  index: number,
  tile: Planes,
  edges: {
    above: Pick<TileEdges, 'lastRows'> | null;
    left: Pick<TileEdges, 'lastCols'> | null;
    corner: Pick<TileEdges, 'lastRows'> | null;
  },
): Planes {
  if (!layout.edgesSuffice) {
    throw new DistVaeError(
      'UNSUPPORTED',
      'raw edges do not suffice when the overlap exceeds half the window; assemble tiles in raster order instead',
    );
  }
  const row = Math.floor(index / layout.cols);
  const col = index % layout.cols;
  const blend = { height: layout.rowBlend[row] ?? 0, width: layout.colBlend[col] ?? 0 };
  const { above, left, corner } = edges;
  const cornerBlock = corner
    ? sliceCols(corner.lastRows, corner.lastRows.width - Math.min(blend.width, corner.lastRows.width), corner.lastRows.width)
    : null;
  if (above) {
    const rowsOfAbove = copy(above.lastRows);
    if (cornerBlock) blendH(cornerBlock, rowsOfAbove, Math.min(cornerBlock.width, rowsOfAbove.width, blend.width));
    blendV(rowsOfAbove, tile, Math.min(rowsOfAbove.height, tile.height, blend.height));
  }
  if (left) {
    const colsOfLeft = copy(left.lastCols);
    if (cornerBlock) blendV(cornerBlock, colsOfLeft, Math.min(cornerBlock.height, colsOfLeft.height, blend.height));
    blendH(colsOfLeft, tile, Math.min(colsOfLeft.width, tile.width, blend.width));
  }
  const at = cropPlacement(layout, index);
  return sliceCols(sliceRows(tile, 0, at.h), 0, at.w);
}

/** Writes a finished crop (from `finalizeTile`) into the output. */
export function writeCrop(layout: TileLayout, index: number, crop: Planes, output: Planes): void {
  const at = cropPlacement(layout, index);
  if (crop.height !== at.h || crop.width !== at.w || crop.planes !== output.planes) {
    throw new DistVaeError(
      'TENSOR_INVALID',
      `crop of tile ${index} is ${crop.planes}x${crop.height}x${crop.width}, expected ${output.planes}x${at.h}x${at.w}`,
    );
  }
  writeBlock(crop, at.h, at.w, output, at.y, at.x);
}

/**
 * Finished crops (from ranks that finalise their own tiles, in any order) gathered into bands of
 * whole tile rows: a row's band is handed to the sink as soon as its last crop is in and every
 * row above it has been handed on, so only rows with a crop still missing are held.
 */
export class CropBandAssembler {
  private readonly rows = new Map<number, { band: Planes; seen: Set<number> }>();
  private nextRow = 0;

  constructor(
    private readonly layout: TileLayout,
    private readonly sink: BandSink,
  ) {}

  get complete(): boolean {
    return this.nextRow === this.layout.rows;
  }

  /** Rows held now (each waiting for a crop of its own or of a row above). */
  get heldRows(): number {
    return this.rows.size;
  }

  add(index: number, crop: Planes): void {
    const { cols } = this.layout;
    const at = cropPlacement(this.layout, index);
    const row = Math.floor(index / cols);
    if (crop.height !== at.h || crop.width !== at.w || crop.planes !== this.sink.planes) {
      throw new DistVaeError(
        'TENSOR_INVALID',
        `crop of tile ${index} is ${crop.planes}x${crop.height}x${crop.width}, expected ${this.sink.planes}x${at.h}x${at.w}`,
      );
    }
    let held = this.rows.get(row);
    if (row < this.nextRow || held?.seen.has(index)) throw new DistVaeError('RUNTIME_FAILED', `tile ${index} was delivered twice`);
    if (!held) {
      held = { band: planes(this.sink.planes, at.h, this.layout.outWidth), seen: new Set() };
      this.rows.set(row, held);
    }
    writeBlock(crop, at.h, at.w, held.band, 0, at.x);
    held.seen.add(index);
    for (let next = this.rows.get(this.nextRow); next && next.seen.size === cols; next = this.rows.get(this.nextRow)) {
      this.rows.delete(this.nextRow);
      this.sink.band(this.layout.rowY[this.nextRow]!, next.band);
      this.nextRow++;
    }
  }
}

function copy(p: Planes): Planes {
  return { planes: p.planes, height: p.height, width: p.width, data: p.data.slice() };
}

function checkTile(layout: TileLayout, index: number, tile: Planes, planeCount: number): void {
  const ext = layout.extents[index];
  if (!ext) throw new DistVaeError('TENSOR_INVALID', `tile index ${index} is outside the grid (0..${layout.extents.length - 1})`);
  if (
    tile.planes !== planeCount ||
    tile.height !== ext.height ||
    tile.width !== ext.width ||
    tile.data.length !== planeCount * ext.height * ext.width
  ) {
    throw new DistVaeError(
      'TENSOR_INVALID',
      `decoded tile ${index} is ${tile.planes}x${tile.height}x${tile.width} (${tile.data.length} values), expected ${planeCount}x${ext.height}x${ext.width}`,
    );
  }
}
