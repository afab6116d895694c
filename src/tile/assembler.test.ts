// The streaming assembler and the edge-based finalisation against an independent, naive
// transcription of diffusers' tiled_decode loop (decode every tile, blend in place in raster
// order, crop, concatenate, slice), on a stand-in decoder whose tiles differ from the whole.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import { tileOverlapPlan, tileShapePlan, setTiling } from '../plan/planner.js';
import { tileGrid, type TileGrid } from '../plan/grid.js';
import { planes, type Planes } from './blend.js';
import { CropBandAssembler, RasterAssembler, edgeSources, finalizeTile, tileEdges, writeCrop, type TileEdges } from './assembler.js';
import type { TileLayout } from './layout.js';
import { tileLayout } from './layout.js';

const PLANES = 2;

/** Seeded stand-in latent: PLANES planes of h×w values. */
function latent(h: number, w: number, seed: number): Float32Array {
  const out = new Float32Array(PLANES * h * w);
  let s = seed;
  for (let i = 0; i < out.length; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    out[i] = (s / 2147483648) * 2 - 1;
  }
  return out;
}

/**
 * Stand-in decoder: nearest upsampling by u plus a term that depends on the position inside
 * the tile, so overlapping tiles disagree and blending matters (like a real decoder's padding).
 */
function decodeTile(z: Float32Array, h: number, w: number, y0: number, y1: number, x0: number, x1: number, u: number): Planes {
  const th = (y1 - y0) * u;
  const tw = (x1 - x0) * u;
  const out = planes(PLANES, th, tw);
  for (let p = 0; p < PLANES; p++)
    for (let y = 0; y < th; y++)
      for (let x = 0; x < tw; x++) {
        const v = z[(p * h + y0 + Math.floor(y / u)) * w + x0 + Math.floor(x / u)]!;
        out.data[(p * th + y) * tw + x] = v + 0.01 * Math.sin(0.3 * y + 0.7 * x + p);
      }
  return out;
}

/** Naive diffusers loop: keep every tile, blend in place in raster order, crop, concat, slice. */
function naiveTiledDecode(z: Float32Array, grid: TileGrid): Planes {
  const { height: h, width: w } = grid.latent;
  const u = grid.outputPerLatent;
  const E = grid.blend;
  const keep = grid.keep;
  const rows: Planes[][] = grid.rows.map((r) => grid.cols.map((c) => decodeTile(z, h, w, r.start, r.end, c.start, c.end, u)));
  const outH = h * u;
  const outW = w * u;
  const out = planes(PLANES, outH, outW);
  let oy = 0;
  rows.forEach((row, i) => {
    let ox = 0;
    let rowH = 0;
    row.forEach((tile, j) => {
      if (i > 0) {
        const a = rows[i - 1]![j]!;
        const e = Math.min(a.height, tile.height, E.height);
        for (let p = 0; p < PLANES; p++)
          for (let y = 0; y < e; y++)
            for (let x = 0; x < tile.width; x++) {
              const ai = (p * a.height + a.height - e + y) * a.width + x;
              const bi = (p * tile.height + y) * tile.width + x;
              tile.data[bi] = a.data[ai]! * (1 - y / e) + tile.data[bi]! * (y / e);
            }
      }
      if (j > 0) {
        const a = row[j - 1]!;
        const e = Math.min(a.width, tile.width, E.width);
        for (let p = 0; p < PLANES; p++)
          for (let y = 0; y < tile.height; y++)
            for (let x = 0; x < e; x++) {
              const ai = (p * a.height + y) * a.width + a.width - e + x;
              const bi = (p * tile.height + y) * tile.width + x;
              tile.data[bi] = a.data[ai]! * (1 - x / e) + tile.data[bi]! * (x / e);
            }
      }
      const ch = Math.min(keep.height, tile.height);
      const cw = Math.min(keep.width, tile.width);
      for (let p = 0; p < PLANES; p++)
        for (let y = 0; y < ch; y++)
          for (let x = 0; x < cw; x++) {
            if (oy + y < outH && ox + x < outW)
              out.data[(p * outH + oy + y) * outW + ox + x] = tile.data[(p * tile.height + y) * tile.width + x]!;
          }
      ox += cw;
      rowH = ch;
    });
    oy += rowH;
  });
  return out;
}

function gridFor(
  family: string,
  config: Record<string, unknown> | undefined,
  latentH: number,
  latentW: number,
  window: [number, number],
  overlap: [number, number],
): TileGrid {
  const vae = planningVae(family, config);
  const shape = tileShapePlan(vae, window[0], window[1]);
  assert.ok(shape, `window ${window} refused`);
  setTiling(vae, shape);
  const ov = tileOverlapPlan(vae, overlap[0], overlap[1]);
  assert.ok(ov, `overlap ${overlap} refused`);
  setTiling(vae, ov);
  return tileGrid(vae, { height: latentH, width: latentW, frames: 1 });
}

/** Deterministic shuffle so tiles arrive out of raster order. */
function shuffled(n: number, seed: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  let s = seed;
  for (let i = n - 1; i > 0; i--) {
    s = (s * 16807) % 2147483647;
    const j = s % (i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

const KL_TINY = { block_out_channels: [16, 32], norm_num_groups: 8, sample_size: 32 }; // r = 2

interface Case {
  name: string;
  family: string;
  config?: Record<string, unknown>;
  latent: [number, number];
  window: [number, number];
  overlap: [number, number];
}

/** A case on the tiny KL decoder (most of the table): the name, then latent, window and overlap (h, w). */
function kl(name: string, latent: [number, number], window: [number, number], overlap: [number, number]): Case {
  return { name, family: 'autoencoder-kl', config: KL_TINY, latent, window, overlap };
}

const CASES: Case[] = [
  kl('grid with clipped last row and column', [40, 56], [32, 32], [8, 8]),
  kl('odd latent, rectangular window, unequal overlaps', [37, 53], [24, 40], [6, 12]),
  kl('horizontal strips (window wider than the image)', [50, 20], [24, 64], [8, 0]),
  kl('single tile (latent smaller than window)', [9, 7], [32, 32], [8, 8]),
  kl('stride < L <= window gives two tiles', [16, 40], [32, 32], [8, 8]),
  kl('extreme aspect ratio', [4, 300], [16, 16], [4, 4]),
  kl('large overlap (more than half the window)', [30, 34], [16, 16], [12, 10]),
  kl('zero overlap', [21, 19], [16, 16], [0, 0]),
  {
    name: 'patch-size family (wan 2.2: blend on raw output at r/p)',
    family: 'wan',
    config: { patch_size: 2, scale_factor_spatial: 16, out_channels: 12 },
    latent: [13, 22],
    window: [96, 128],
    overlap: [32, 32],
  },
];

/** Tile rows whose every tile, and every tile above, has arrived. */
function leadingCompleteRows(layout: TileLayout, arrived: ReadonlySet<number>): number {
  let rows = 0;
  while (rows < layout.rows && Array.from({ length: layout.cols }, (_, c) => rows * layout.cols + c).every((i) => arrived.has(i))) rows++;
  return rows;
}

/** A band sink that checks bands arrive in order and concatenates them. */
function bandCollector(layout: TileLayout): {
  sink: { planes: number; band: (y0: number, band: Planes) => void };
  rows: () => number;
  output: () => Planes;
} {
  const out = planes(PLANES, layout.outHeight, layout.outWidth);
  let y = 0;
  let rows = 0;
  const sink = {
    planes: PLANES,
    band: (y0: number, band: Planes) => {
      assert.equal(y0, y, 'bands arrive in order, without gaps');
      assert.equal(band.width, layout.outWidth);
      writeBlockRows(band, out, y0);
      y += band.height;
      rows++;
    },
  };
  return { sink, rows: () => rows, output: () => (assert.equal(y, layout.outHeight), out) };
}

function writeBlockRows(band: Planes, out: Planes, y0: number): void {
  for (let p = 0; p < PLANES; p++)
    out.data.set(band.data.subarray(p * band.height * band.width, (p + 1) * band.height * band.width), (p * out.height + y0) * out.width);
}

/** Finalise a copy of tile i from the edges of its neighbours above, left and above-left, as a rank would. */
function finalizeFromEdges(layout: TileLayout, edges: readonly TileEdges[], decoded: readonly Planes[], i: number): Planes {
  const src = edgeSources(layout, i);
  const pick = (k: number | null) => (k === null ? null : edges[k]!);
  const tile = decoded[i]!;
  return finalizeTile(
    layout,
    i,
    { ...tile, data: tile.data.slice() },
    { above: pick(src.above), left: pick(src.left), corner: pick(src.corner) },
  );
}

for (const c of CASES) {
  test(`assembler matches the naive diffusers loop: ${c.name}`, () => {
    const grid = gridFor(c.family, c.config, c.latent[0], c.latent[1], c.window, c.overlap);
    const [h, w] = c.latent;
    const z = latent(h, w, 7);
    const expected = naiveTiledDecode(z, grid);
    const layout = tileLayout(grid);
    const u = grid.outputPerLatent;
    const decoded = grid.tiles.map((t) => decodeTile(z, h, w, t.y0, t.y1, t.x0, t.x1, u));
    for (const seed of [1, 2]) {
      const assembler = new RasterAssembler(layout, planes(PLANES, layout.outHeight, layout.outWidth));
      for (const i of shuffled(decoded.length, seed)) {
        const tile = decoded[i]!;
        assembler.add(i, { ...tile, data: tile.data.slice() });
      }
      assert.ok(assembler.complete);
      assert.deepEqual(assembler.output.data, expected.data, 'streaming assembly must be bitwise identical to the naive loop');
      // Band mode: rows flushed as soon as the raster order reaches the end of each.
      const bands = bandCollector(layout);
      const banded = new RasterAssembler(layout, bands.sink);
      const arrived = new Set<number>();
      for (const i of shuffled(decoded.length, seed)) {
        const tile = decoded[i]!;
        banded.add(i, { ...tile, data: tile.data.slice() });
        arrived.add(i);
        assert.equal(bands.rows(), leadingCompleteRows(layout, arrived), `seed ${seed}, after tile ${i}`);
      }
      assert.deepEqual(bands.output().data, expected.data, 'banded raster assembly must be bitwise identical to the naive loop');
    }
    if (layout.edgesSuffice) {
      // Edge-based finalisation in a scrambled order, as ranks would do it.
      const edges: TileEdges[] = decoded.map((t, i) => tileEdges(layout, t, i));
      const out = planes(PLANES, layout.outHeight, layout.outWidth);
      for (const i of shuffled(decoded.length, 3)) writeCrop(layout, i, finalizeFromEdges(layout, edges, decoded, i), out);
      assert.deepEqual(out.data, expected.data, 'edge-based finalisation must be bitwise identical to the naive loop');
      // The same crops in band mode, in two scrambled orders: each row flushed once every tile of
      // it and of the rows above has arrived, and not before.
      const crops = decoded.map((_, i) => finalizeFromEdges(layout, edges, decoded, i));
      for (const seed of [4, 5]) {
        const bands = bandCollector(layout);
        const assembler = new CropBandAssembler(layout, bands.sink);
        const arrived = new Set<number>();
        for (const i of shuffled(crops.length, seed)) {
          assembler.add(i, crops[i]!);
          arrived.add(i);
          assert.equal(bands.rows(), leadingCompleteRows(layout, arrived), `seed ${seed}, after tile ${i}`);
          assert.ok(assembler.heldRows <= layout.rows - bands.rows());
        }
        assert.ok(assembler.complete);
        assert.deepEqual(bands.output().data, expected.data, 'banded crops must be bitwise identical to the naive loop');
        assert.throws(() => assembler.add(0, crops[0]!), /twice/);
      }
    } else {
      assert.throws(() => finalizeTile(layout, 0, decoded[0]!, { above: null, left: null, corner: null }), /half the window/);
    }
  });
}

test('assembler rejects a tile of the wrong shape and a tile delivered twice', () => {
  const grid = gridFor('autoencoder-kl', KL_TINY, 40, 56, [32, 32], [8, 8]);
  const layout = tileLayout(grid);
  const assembler = new RasterAssembler(layout, planes(PLANES, layout.outHeight, layout.outWidth));
  assert.throws(() => assembler.add(0, planes(PLANES, 31, 32)), /expected 2x32x32/);
  assert.throws(() => assembler.add(99, planes(PLANES, 32, 32)), /outside the grid/);
  assembler.add(0, planes(PLANES, 32, 32));
  assert.throws(() => assembler.add(0, planes(PLANES, 32, 32)), /twice/);
});
