// Tile grids (docs/design.md §3): the axis rule `range(0, L, stride)` with clipped last tiles, the
// family's rule for when tiling happens at all, temporal chunks, and the blend / keep extents
// on the raw decoder output. Pure arithmetic on latent units.

import type { Size2, VaeSpec } from '../families/types.js';
import type { LatentShape } from './shapes.js';

/** A half-open latent range [start, end). */
export interface Span {
  start: number;
  end: number;
}

/** One tile of a grid: raster index, row and column, latent extents and its crop in the output. */
export interface Tile {
  /** Raster index (row-major). */
  index: number;
  row: number;
  col: number;
  /** Latent extents, half-open. */
  y0: number;
  y1: number;
  x0: number;
  x1: number;
}

/** The tiles a latent is decoded in under the VAE's tiling, with the temporal chunks of video families. */
export interface TileGrid {
  latent: LatentShape;
  /** False when the latent is decoded in one call (tiling off, or the latent fits in the window). */
  tiled: boolean;
  /** Window and stride in latent units (the whole latent when untiled). */
  windowLatent: Size2;
  strideLatent: Size2;
  /** Raw decoder output units per latent unit: spatialRatio / patchSize. */
  outputPerLatent: number;
  /** Blend extent E and kept crop per tile, in raw decoder output units. */
  blend: Size2;
  keep: Size2;
  rows: Span[];
  cols: Span[];
  tiles: Tile[];
  /** Temporal chunks in latent frames; one chunk spanning all frames when time is not tiled. */
  chunks: Span[];
  /** Temporal blend and keep in output frames (0 when time is not tiled). */
  frameBlend: number;
  frameKeep: number;
  /**
   * Per tile row / column, in raw output units: the blend extent E of the seam above / left of it
   * (0 for the first) and the rows / columns its crop keeps. Uniform (`blend`, `keep`) under the
   * common loop; per seam under a family's own loop (MiniMax-H3's derived overlaps).
   */
  rowBlend: number[];
  colBlend: number[];
  rowKeep: number[];
  colKeep: number[];
  /**
   * 'blended': each tile blends with neighbours already blended in place (diffusers' common loop);
   * 'raw': with its neighbours' raw decodes, the above-left corner never involved (MiniMax-H3's
   * `_stitch_tiles`).
   */
  neighbours: 'blended' | 'raw';
}

/** Starts 0, stride, 2·stride, … while start < length; each covers min(window, length − start). */
export function axisSpans(length: number, window: number, stride: number): Span[] {
  const spans: Span[] = [];
  for (let start = 0; start < length; start += stride) spans.push({ start, end: Math.min(start + window, length) });
  return spans;
}

/**
 * MiniMax-H3's `_split_tiles` in latent units: one tile when it covers the axis; else the fewest
 * tiles of `tile` whose union covers `length` with every overlap ≥ `minOverlap`, the slack then
 * added one latent unit at a time to the overlaps round-robin from the first, so tiles cover the
 * axis exactly and every overlap is derived (≥ the minimum). All tiles are `tile` long.
 */
export function splitSpans(length: number, tile: number, minOverlap: number): Span[] {
  if (tile >= length) return [{ start: 0, end: length }];
  if (minOverlap >= tile) throw new RangeError(`minimum overlap ${minOverlap} must be below the tile ${tile}`);
  let count = Math.ceil(length / tile);
  while (tile * count - minOverlap * (count - 1) < length) count++;
  const overlaps = new Array<number>(count - 1).fill(minOverlap);
  const slack = tile * count - minOverlap * (count - 1) - length;
  for (let i = 0; i < slack; i++) overlaps[i % (count - 1)]! += 1;
  const spans: Span[] = [{ start: 0, end: tile }];
  for (const o of overlaps) {
    const start = spans[spans.length - 1]!.end - o;
    spans.push({ start, end: start + tile });
  }
  return spans;
}

/** The overlaps of consecutive spans (what each seam blends), in the spans' units. */
export function seamOverlaps(spans: readonly Span[]): number[] {
  return spans.slice(1).map((s, i) => spans[i]!.end - s.start);
}

/** Whether decode tiles spatially: tiling on and the latent exceeds the window on either axis. */
export function tilesSpatially(vae: VaeSpec, latent: LatentShape, above?: Size2): boolean {
  const r = vae.geometry.spatialRatio;
  const t = vae.tiling;
  const limit = above ?? { height: t.window.height / r, width: t.window.width / r };
  return t.enabled && (latent.height > limit.height || latent.width > limit.width);
}

/** Temporal chunks (latent frames) under the family's temporal policy and the current frame tiling. */
export function temporalChunks(vae: VaeSpec, latentFrames: number): { chunks: Span[]; blend: number; keep: number } {
  const frames = vae.tiling.frames;
  const rt = vae.geometry.temporalRatio;
  if (vae.family.temporal.kind !== 'temporal-chunks' || !frames || !frames.enabled || latentFrames <= frames.window / rt) {
    return { chunks: [{ start: 0, end: latentFrames }], blend: 0, keep: 0 };
  }
  const windowLatent = frames.window / rt;
  const strideLatent = (frames.window - frames.overlap) / rt;
  const chunks = axisSpans(latentFrames, windowLatent + 1, strideLatent);
  return { chunks, blend: frames.overlap, keep: frames.window - frames.overlap };
}

/** How a grid is read: `spatialOnly` (one chunk), and `encode` (the encoder's tiles: output is the latent itself). */
export interface GridOptions {
  /** Treat all frames as one chunk: the grid of one temporal chunk, as the spatial tiling operation sees it. */
  spatialOnly?: boolean;
  /**
   * The grid of a tiled *encode* (docs/design.md §3, tiled encodes): the same window and overlap
   * (input pixels, a multiple of r) cut the image into tiles of whole latent units, and the
   * encoder's outputs are blended on the latent: one output unit per latent unit, blend
   * E = overlap / r latent units, keep = the stride — diffusers' `_tiled_encode` (its
   * `blend_extent = tile_latent_min_size · f`, `row_limit = tile_latent_min_size − blend_extent`).
   */
  encode?: boolean;
  /**
   * The latent size past which the grid tiles (on either axis), when it is not the window: Wan
   * 2.2's encoder tiles once the input exceeds window/p (FamilyEncoder.patchifiedTiles).
   */
  tilesAbove?: Size2;
}

/** The tile grid of a latent under the VAE's tiling (GridOptions). */
export function tileGrid(vae: VaeSpec, latent: LatentShape, options: GridOptions = {}): TileGrid {
  const { spatialRatio: r, patchSize: p } = vae.geometry;
  const outputPerLatent = options.encode ? 1 : r / p;
  // Output units per pixel of overlap: 1/p on the raw decoder output, 1/r on the latent an encoder writes.
  const blendDivisor = options.encode ? r : p;
  const time = options.spatialOnly ? { chunks: [{ start: 0, end: latent.frames }], blend: 0, keep: 0 } : temporalChunks(vae, latent.frames);
  const neighbours = vae.family.diffusersTiling === 'tile-and-min-overlap' ? ('raw' as const) : ('blended' as const);
  const base = { latent, outputPerLatent, chunks: time.chunks, frameBlend: time.blend, frameKeep: time.keep, neighbours };
  if (!tilesSpatially(vae, latent, options.tilesAbove)) {
    const whole = { height: latent.height, width: latent.width };
    return {
      ...base,
      rowBlend: [0],
      colBlend: [0],
      rowKeep: [latent.height * outputPerLatent],
      colKeep: [latent.width * outputPerLatent],
      tiled: false,
      windowLatent: whole,
      strideLatent: whole,
      blend: { height: 0, width: 0 },
      keep: { height: latent.height * outputPerLatent, width: latent.width * outputPerLatent },
      rows: [{ start: 0, end: latent.height }],
      cols: [{ start: 0, end: latent.width }],
      tiles: [{ index: 0, row: 0, col: 0, y0: 0, y1: latent.height, x0: 0, x1: latent.width }],
    };
  }
  const { window, overlap } = vae.tiling;
  const windowLatent = { height: window.height / r, width: window.width / r };
  const strideLatent = { height: (window.height - overlap.height) / r, width: (window.width - overlap.width) / r };
  const tiles = (rows: Span[], cols: Span[]): Tile[] => {
    const list: Tile[] = [];
    rows.forEach((rs, row) =>
      cols.forEach((cs, col) => list.push({ index: list.length, row, col, y0: rs.start, y1: rs.end, x0: cs.start, x1: cs.end })),
    );
    return list;
  };
  if (neighbours === 'raw') {
    // The family's own loop: per-axis spans with derived overlaps; each tile keeps up to the next one's start.
    const rows = splitSpans(latent.height, windowLatent.height, overlap.height / r);
    const cols = splitSpans(latent.width, windowLatent.width, overlap.width / r);
    const blendOf = (spans: Span[]) => [0, ...seamOverlaps(spans).map((o) => o * outputPerLatent)];
    const keepOf = (spans: Span[]) => spans.map((s, i) => ((spans[i + 1]?.start ?? s.end) - s.start) * outputPerLatent);
    const [rowBlend, colBlend] = [blendOf(rows), blendOf(cols)];
    return {
      ...base,
      tiled: true,
      windowLatent,
      strideLatent,
      // The largest derived blend and the smallest kept crop: the uniform summary of a per-seam plan.
      blend: { height: Math.max(...rowBlend), width: Math.max(...colBlend) },
      keep: { height: Math.min(...keepOf(rows)), width: Math.min(...keepOf(cols)) },
      rowBlend,
      colBlend,
      rowKeep: keepOf(rows),
      colKeep: keepOf(cols),
      rows,
      cols,
      tiles: tiles(rows, cols),
    };
  }
  const rows = axisSpans(latent.height, windowLatent.height, strideLatent.height);
  const cols = axisSpans(latent.width, windowLatent.width, strideLatent.width);
  const blend = { height: overlap.height / blendDivisor, width: overlap.width / blendDivisor };
  const keep = { height: strideLatent.height * outputPerLatent, width: strideLatent.width * outputPerLatent };
  return {
    ...base,
    tiled: true,
    windowLatent,
    strideLatent,
    blend,
    keep,
    rowBlend: rows.map((_, i) => (i === 0 ? 0 : blend.height)),
    colBlend: cols.map((_, i) => (i === 0 ? 0 : blend.width)),
    rowKeep: rows.map(() => keep.height),
    colKeep: cols.map(() => keep.width),
    rows,
    cols,
    tiles: tiles(rows, cols),
  };
}

/** A tile's area in latent units². */
export function tileArea(t: Tile): number {
  return (t.y1 - t.y0) * (t.x1 - t.x0);
}

/** Latent frames a tile carries over all chunks (each chunk repeats the spatial grid). */
export function framesPerTile(grid: TileGrid): number {
  return grid.chunks.reduce((n, c) => n + (c.end - c.start), 0);
}
