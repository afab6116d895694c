// Tile grids against an independent transcription of diffusers' loops: `for i in range(0, L,
// stride)` with clipped edge tiles, the "tile only when the latent exceeds the window" trigger
// (both axes then go through the loop), blend / keep extents in diffusers' own terms (KL:
// Smin, Lmin, int(Lmin·(1−f)), int(Smin·f); family B: px window and stride, // patch size), and
// the temporal chunk loop of HunyuanVideo / LTX-2 (docs/design.md §3).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import type { RawConfig, Size2, VaeSpec } from '../families/types.js';
import { KL_TINY_PLAN, LTX2_TINY_16, WAN22_PUBLISHED } from '../families/testing/video-configs.js';
import { axisSpans, temporalChunks, tileGrid, type TileGrid } from './grid.js';

/** Python's range(start, stop, step) — the reference for every tile loop below. */
function pyRange(start: number, stop: number, step: number): number[] {
  if (step <= 0) throw new Error('range() arg 3 must be positive');
  const out: number[] = [];
  for (let i = start; i < stop; i += step) out.push(i);
  return out;
}

/** The reference harness's tiny KL (r 2) with Smin 32 px and overlap 8 px: latent window 16, stride 12. */
const harnessKl = () => tiled(planningVae('autoencoder-kl', KL_TINY_PLAN), { height: 32, width: 32 }, { height: 8, width: 8 });

/** diffusers' slice z[i : i + n] on an axis of length L: [i, min(i + n, L)). */
const slice = (i: number, n: number, L: number) => ({ start: i, end: Math.min(i + n, L) });

/** Spans from [start, end] pairs, to state an expected axis on one line. */
const spans = (...pairs: [number, number][]) => pairs.map(([start, end]) => ({ start, end }));

/** Installs tiling on a VAE directly (not through the planner), in output pixels. */
function tiled(vae: VaeSpec, window: Size2, overlap: Size2): VaeSpec {
  vae.tiling = { ...vae.tiling, enabled: true, window: { ...window }, overlap: { ...overlap } };
  return vae;
}

/** diffusers' AutoencoderKL.tiled_decode geometry for a square tile_sample_min_size and overlap factor. */
function klReference(r: number, smin: number, f: number, h: number, w: number) {
  const lmin = Math.trunc(smin / r);
  const stride = Math.trunc(lmin * (1 - f));
  const blend = Math.trunc(smin * f);
  const keep = smin - blend;
  const triggered = h > lmin || w > lmin;
  const rows = triggered ? pyRange(0, h, stride).map((i) => slice(i, lmin, h)) : [{ start: 0, end: h }];
  const cols = triggered ? pyRange(0, w, stride).map((j) => slice(j, lmin, w)) : [{ start: 0, end: w }];
  return { triggered, stride, blend, keep, rows, cols };
}

/** diffusers' family-B tiled_decode geometry (Wan / Qwen-Image / HunyuanVideo / LTX-2), px window and stride. */
function familyBReference(r: number, p: number, window: Size2, stridePx: Size2, h: number, w: number) {
  const Lh = Math.trunc(window.height / r);
  const Lw = Math.trunc(window.width / r);
  const Sh = Math.trunc(stridePx.height / r);
  const Sw = Math.trunc(stridePx.width / r);
  const keep = { height: Math.trunc(stridePx.height / p), width: Math.trunc(stridePx.width / p) };
  const blend = { height: Math.trunc(window.height / p) - keep.height, width: Math.trunc(window.width / p) - keep.width };
  const triggered = w > Lw || h > Lh;
  const rows = triggered ? pyRange(0, h, Sh).map((i) => slice(i, Lh, h)) : [{ start: 0, end: h }];
  const cols = triggered ? pyRange(0, w, Sw).map((j) => slice(j, Lw, w)) : [{ start: 0, end: w }];
  return { triggered, keep, blend, rows, cols };
}

/** The raster-order tile list implied by row and column spans. */
function rasterTiles(rows: { start: number; end: number }[], cols: { start: number; end: number }[]) {
  const tiles = [];
  for (let i = 0; i < rows.length; i++) {
    for (let j = 0; j < cols.length; j++) {
      tiles.push({
        index: i * cols.length + j,
        row: i,
        col: j,
        y0: rows[i]!.start,
        y1: rows[i]!.end,
        x0: cols[j]!.start,
        x1: cols[j]!.end,
      });
    }
  }
  return tiles;
}

function assertGridMatches(
  grid: TileGrid,
  ref: { triggered: boolean; rows: { start: number; end: number }[]; cols: { start: number; end: number }[] },
) {
  assert.equal(grid.tiled, ref.triggered);
  assert.deepEqual(grid.rows, ref.rows);
  assert.deepEqual(grid.cols, ref.cols);
  assert.deepEqual(grid.tiles, rasterTiles(ref.rows, ref.cols));
}

test('axisSpans reproduces range(0, L, stride) with clipped last tiles over a sweep of lengths, windows and strides', () => {
  for (let L = 1; L <= 70; L++) {
    for (let window = 1; window <= 24; window++) {
      for (let stride = 1; stride <= window; stride++) {
        const expected = pyRange(0, L, stride).map((i) => slice(i, window, L));
        const spans = axisSpans(L, window, stride);
        assert.deepEqual(spans, expected, `L=${L} window=${window} stride=${stride}`);
        assert.equal(spans.length, Math.ceil(L / stride));
        // Every latent unit is covered, no span is empty, none exceeds the window.
        assert.equal(spans[0]!.start, 0);
        assert.equal(spans.at(-1)!.end, L);
        for (const s of spans) assert.ok(s.end > s.start && s.end - s.start <= window);
      }
    }
  }
});

test('KL: the harness case (tiny VAE, Smin 32, latent 40x56) gives starts {0,12,24,36} x {0,12,24,36,48}, blend 8, keep 24', () => {
  const vae = harnessKl();
  const grid = tileGrid(vae, { height: 40, width: 56, frames: 1 });
  assert.deepEqual(
    grid.rows.map((s) => s.start),
    [0, 12, 24, 36],
  );
  assert.deepEqual(
    grid.cols.map((s) => s.start),
    [0, 12, 24, 36, 48],
  );
  assert.equal(grid.tiles.length, 20);
  assert.deepEqual(
    [grid.blend, grid.keep],
    [
      { height: 8, width: 8 },
      { height: 24, width: 24 },
    ],
  );
  assertGridMatches(grid, klReference(2, 32, 0.25, 40, 56));
});

test("KL with f = 0.25 matches diffusers' loop, blend and keep on every latent size up to 3 windows, square windows 8..64 latent", () => {
  const r = 8;
  const vae = planningVae('autoencoder-kl');
  for (const lmin of [1, 2, 4, 8, 12, 16, 64]) {
    const smin = lmin * r;
    const overlap = Math.trunc(smin * 0.25);
    if (overlap % r !== 0) continue; // diffusers' own output would be misshapen; the planner refuses it
    tiled(vae, { height: smin, width: smin }, { height: overlap, width: overlap });
    for (const h of [1, lmin - 1, lmin, lmin + 1, 2 * lmin + 3, 3 * lmin]) {
      for (const w of [1, lmin, lmin + 1, 3 * lmin - 1]) {
        if (h < 1 || w < 1) continue;
        const grid = tileGrid(vae, { height: h, width: w, frames: 1 });
        const ref = klReference(r, smin, 0.25, h, w);
        assertGridMatches(grid, ref);
        if (ref.triggered) {
          assert.deepEqual(grid.blend, { height: ref.blend, width: ref.blend });
          assert.deepEqual(grid.keep, { height: ref.keep, width: ref.keep });
          assert.deepEqual(grid.strideLatent, { height: ref.stride, width: ref.stride });
        }
      }
    }
  }
});

test('an axis with stride < L <= window gets two tiles (as in diffusers) when the other axis exceeds the window', () => {
  // SD 1.x default: window 64 latent, stride 48; sample 512x1024 -> latent 64x128.
  const vae = tiled(planningVae('autoencoder-kl'), { height: 512, width: 512 }, { height: 128, width: 128 });
  const grid = tileGrid(vae, { height: 64, width: 128, frames: 1 });
  assert.deepEqual(grid.rows, spans([0, 64], [48, 64]));
  assert.deepEqual(grid.cols, spans([0, 64], [48, 112], [96, 128]));
  assert.equal(grid.tiles.length, 6);
  // 50 < L = 60 <= 64 on both axes: nothing exceeds the window, so no tiling at all.
  assert.equal(tileGrid(vae, { height: 60, width: 60, frames: 1 }).tiled, false);
});

test('tiles only when the latent exceeds the window: equal to the window is one call; one unit more tiles both axes', () => {
  const vae = tiled(planningVae('autoencoder-kl'), { height: 256, width: 512 }, { height: 64, width: 128 });
  const fits = tileGrid(vae, { height: 32, width: 64, frames: 1 });
  assert.equal(fits.tiled, false);
  assert.deepEqual(fits.tiles, [{ index: 0, row: 0, col: 0, y0: 0, y1: 32, x0: 0, x1: 64 }]);
  assert.deepEqual(
    [fits.blend, fits.keep],
    [
      { height: 0, width: 0 },
      { height: 256, width: 512 },
    ],
  );
  const over = tileGrid(vae, { height: 32, width: 65, frames: 1 });
  assert.equal(over.tiled, true);
  // Height (L = 32 = window, stride 24) also goes through the loop: two rows.
  assert.deepEqual(over.rows, spans([0, 32], [24, 32]));
  assert.deepEqual(over.cols, spans([0, 64], [48, 65]));
  // Tiling off: one call whatever the size.
  vae.tiling.enabled = false;
  assert.equal(tileGrid(vae, { height: 500, width: 500, frames: 1 }).tiles.length, 1);
});

test('strips: a window wider than the image with overlap 0 on that axis gives full-width row strips', () => {
  // 1024x1024 px, r = 8 -> latent 128x128; window 256x4096 px = 32x512 latent; overlap 64x0.
  const vae = tiled(planningVae('autoencoder-kl'), { height: 256, width: 4096 }, { height: 64, width: 0 });
  const grid = tileGrid(vae, { height: 128, width: 128, frames: 1 });
  assert.deepEqual(
    grid.rows.map((s) => [s.start, s.end]),
    pyRange(0, 128, 24).map((i) => [i, Math.min(i + 32, 128)]),
  );
  assert.deepEqual(grid.cols, [{ start: 0, end: 128 }]);
  assert.equal(grid.tiles.length, 6);
  for (const t of grid.tiles) assert.deepEqual([t.x0, t.x1, t.col], [0, 128, 0]);
  assert.deepEqual(grid.tiles.at(-1), { index: 5, row: 5, col: 0, y0: 120, y1: 128, x0: 0, x1: 128 });
});

test('tiny latents: 1x1 and anything smaller than one window decode whole; a 1-unit window tiles a 2x3 latent into 6', () => {
  const vae = tiled(planningVae('autoencoder-kl'), { height: 512, width: 512 }, { height: 128, width: 128 });
  for (const [h, w] of [
    [1, 1],
    [1, 64],
    [8, 12],
    [64, 64],
  ] as const) {
    const grid = tileGrid(vae, { height: h, width: w, frames: 1 });
    assert.equal(grid.tiled, false, `${h}x${w}`);
    assert.deepEqual(grid.tiles, [{ index: 0, row: 0, col: 0, y0: 0, y1: h, x0: 0, x1: w }]);
    assert.deepEqual(grid.windowLatent, { height: h, width: w });
  }
  tiled(vae, { height: 8, width: 8 }, { height: 0, width: 0 });
  const ones = tileGrid(vae, { height: 2, width: 3, frames: 1 });
  // Raster order, one latent unit each: rows [0, 1) and [1, 2), columns [0, 1), [1, 2), [2, 3).
  assert.deepEqual(
    ones.tiles.map((t) => [t.y0, t.y1, t.x0, t.x1]),
    [0, 1].flatMap((y) => [0, 1, 2].map((x) => [y, y + 1, x, x + 1])),
  );
  assert.deepEqual(ones.keep, { height: 8, width: 8 });
});

test('odd sizes: latent 13x21 under a 16-unit window with stride 12 has 1-unit and 9-unit clipped edges', () => {
  const vae = harnessKl();
  const grid = tileGrid(vae, { height: 13, width: 21, frames: 1 });
  assert.deepEqual(grid.rows, spans([0, 13], [12, 13]));
  assert.deepEqual(grid.cols, spans([0, 16], [12, 21]));
  assertGridMatches(grid, klReference(2, 32, 0.25, 13, 21));
  // Odd window and overlap in latent units (family B, window 7 latent, stride 5) on a prime-sized latent.
  const wan = tiled(planningVae('wan'), { height: 56, width: 56 }, { height: 16, width: 16 });
  const g2 = tileGrid(wan, { height: 23, width: 17, frames: 1 });
  assertGridMatches(g2, familyBReference(8, 1, { height: 56, width: 56 }, { height: 40, width: 40 }, 23, 17));
  assert.deepEqual(g2.rows.at(-1), { start: 20, end: 23 });
  assert.deepEqual(g2.cols.at(-1), { start: 15, end: 17 });
});

test('extreme aspect ratios: 64x8192 px and 8192x64 px under SD 1.x defaults', () => {
  const vae = tiled(planningVae('autoencoder-kl'), { height: 512, width: 512 }, { height: 128, width: 128 });
  const wide = tileGrid(vae, { height: 8, width: 1024, frames: 1 });
  const ref = klReference(8, 512, 0.25, 8, 1024);
  assertGridMatches(wide, ref);
  assert.equal(wide.rows.length, 1);
  assert.equal(wide.cols.length, 22);
  assert.deepEqual(wide.cols.at(-1), { start: 1008, end: 1024 });
  const tall = tileGrid(vae, { height: 1024, width: 8, frames: 1 });
  assert.deepEqual([tall.rows.length, tall.cols.length], [22, 1]);
  assert.deepEqual(
    tall.tiles.map((t) => t.index),
    pyRange(0, 22, 1),
  );
});

test("family B grids match diffusers' px window / stride loop for every family and config, rectangular too", () => {
  const cases: { family: string; config?: RawConfig; window: Size2; overlap: Size2; latent: [number, number] }[] = [
    { family: 'wan', window: { height: 256, width: 256 }, overlap: { height: 64, width: 64 }, latent: [60, 104] },
    { family: 'qwen-image', window: { height: 256, width: 384 }, overlap: { height: 64, width: 128 }, latent: [128, 128] },
    { family: 'hunyuan-video', window: { height: 256, width: 256 }, overlap: { height: 64, width: 64 }, latent: [45, 80] },
    { family: 'ltx2', window: { height: 512, width: 512 }, overlap: { height: 64, width: 64 }, latent: [34, 60] },
    { family: 'ltx2', window: { height: 256, width: 640 }, overlap: { height: 96, width: 0 }, latent: [34, 20] },
    {
      family: 'wan',
      config: { dim_mult: [1, 2], temperal_downsample: [true], scale_factor_spatial: 2, scale_factor_temporal: 2 },
      window: { height: 32, width: 32 },
      overlap: { height: 8, width: 8 },
      latent: [24, 40],
    },
  ];
  for (const c of cases) {
    const vae = tiled(planningVae(c.family, c.config), c.window, c.overlap);
    const { spatialRatio: r, patchSize: p } = vae.geometry;
    const stridePx = { height: c.window.height - c.overlap.height, width: c.window.width - c.overlap.width };
    const ref = familyBReference(r, p, c.window, stridePx, c.latent[0], c.latent[1]);
    const grid = tileGrid(vae, { height: c.latent[0], width: c.latent[1], frames: 1 });
    assertGridMatches(grid, ref);
    assert.deepEqual([grid.blend, grid.keep], [ref.blend, ref.keep], c.family);
  }
});

test('patch size: Wan 2.2 blends and keeps on the raw decoder output, ratio/p px per latent unit (blend = overlap/p)', () => {
  // Published Wan 2.2 (r 16, p 2) at its defaults 256/192: latent tile 16, stride 12, E = 128 − 96 = 32 raw px, keep 96 raw px.
  const wan22 = planningVae('wan', WAN22_PUBLISHED);
  tiled(wan22, { height: 256, width: 256 }, { height: 64, width: 64 });
  const grid = tileGrid(wan22, { height: 44, width: 80, frames: 1 });
  assert.equal(grid.outputPerLatent, 8);
  assert.deepEqual(
    [grid.windowLatent, grid.strideLatent],
    [
      { height: 16, width: 16 },
      { height: 12, width: 12 },
    ],
  );
  assert.deepEqual(
    [grid.blend, grid.keep],
    [
      { height: 32, width: 32 },
      { height: 96, width: 96 },
    ],
  );
  assertGridMatches(grid, familyBReference(16, 2, { height: 256, width: 256 }, { height: 192, width: 192 }, 44, 80));
  // Rectangular with unequal overlaps on the tiny 2.2 config (r 8, p 2).
  const tiny = planningVae('wan', {
    dim_mult: [1, 2, 2],
    temperal_downsample: [true, false],
    patch_size: 2,
    scale_factor_spatial: 8,
    scale_factor_temporal: 2,
    out_channels: 12,
    z_dim: 48,
    is_residual: true,
    decoder_base_dim: 16,
  });
  tiled(tiny, { height: 64, width: 96 }, { height: 16, width: 40 });
  const g = tileGrid(tiny, { height: 20, width: 30, frames: 3 });
  const ref = familyBReference(8, 2, { height: 64, width: 96 }, { height: 48, width: 56 }, 20, 30);
  assertGridMatches(g, ref);
  assert.deepEqual(
    [g.blend, g.keep],
    [
      { height: 8, width: 20 },
      { height: 24, width: 28 },
    ],
  );
  // Untiled: keep is the whole latent in raw decoder units, nothing blended.
  const whole = tileGrid(tiny, { height: 6, width: 10, frames: 1 });
  assert.deepEqual(
    [whole.blend, whole.keep],
    [
      { height: 0, width: 0 },
      { height: 24, width: 40 },
    ],
  );
});

/** diffusers' _temporal_tiled_decode chunk loop (HunyuanVideo / LTX-2), frames in output frames. */
function chunkReference(F: number, rt: number, tmin: number, tstride: number, on: boolean) {
  const Ft = Math.trunc(tmin / rt);
  const St = Math.trunc(tstride / rt);
  if (!on || !(F > Ft)) return { chunks: [{ start: 0, end: F }], blend: 0, keep: 0 };
  return { chunks: pyRange(0, F, St).map((i) => slice(i, Ft + 1, F)), blend: tmin - tstride, keep: tstride };
}

test('HunyuanVideo temporal chunks: Tmin/rt + 1 latent frames every Tstride/rt, only when F > Tmin/rt (defaults 16/12 frames)', () => {
  const vae = planningVae('hunyuan-video');
  for (let F = 1; F <= 30; F++) {
    const got = temporalChunks(vae, F);
    assert.deepEqual(got, chunkReference(F, 4, 16, 12, true), `F=${F}`);
  }
  // 33 output frames = 9 latent frames: chunks [0,5) [3,8) [6,9); each repeats the spatial grid.
  assert.deepEqual(temporalChunks(vae, 9).chunks, [
    { start: 0, end: 5 },
    { start: 3, end: 8 },
    { start: 6, end: 9 },
  ]);
  tiled(vae, { height: 256, width: 256 }, { height: 64, width: 64 });
  const grid = tileGrid(vae, { height: 40, width: 40, frames: 9 });
  assert.deepEqual([grid.chunks.length, grid.frameBlend, grid.frameKeep], [3, 4, 12]);
  assert.equal(grid.tiles.length, 4);
  // Temporal tiling off: one chunk spanning every frame.
  vae.tiling = { ...vae.tiling, frames: { ...vae.tiling.frames!, enabled: false } };
  assert.deepEqual(temporalChunks(vae, 9), { chunks: [{ start: 0, end: 9 }], blend: 0, keep: 0 });
});

test('LTX-2 temporal chunks: off by default; when on (16/8 frames, rt 8) chunks of 3 latent frames every 1, short trailing chunks kept', () => {
  const vae = planningVae('ltx2');
  assert.deepEqual(temporalChunks(vae, 7), { chunks: [{ start: 0, end: 7 }], blend: 0, keep: 0 });
  vae.tiling = { ...vae.tiling, frames: { enabled: true, window: 16, overlap: 8 } };
  for (let F = 1; F <= 12; F++) assert.deepEqual(temporalChunks(vae, F), chunkReference(F, 8, 16, 8, true), `F=${F}`);
  assert.deepEqual(temporalChunks(vae, 5).chunks, [
    { start: 0, end: 3 },
    { start: 1, end: 4 },
    { start: 2, end: 5 },
    { start: 3, end: 5 },
    { start: 4, end: 5 },
  ]);
  // Tiny LTX-2 (rt 4) with a 24/8-frame window: Ft 6, St 4.
  const tiny = planningVae('ltx2', LTX2_TINY_16);
  tiny.tiling = { ...tiny.tiling, frames: { enabled: true, window: 24, overlap: 8 } };
  for (let F = 1; F <= 20; F++) assert.deepEqual(temporalChunks(tiny, F), chunkReference(F, 4, 24, 16, true), `F=${F}`);
});

test('frame-stepped and image families never chunk time', () => {
  for (const family of ['wan', 'qwen-image', 'autoencoder-kl']) {
    assert.deepEqual(temporalChunks(planningVae(family), 9), { chunks: [{ start: 0, end: 9 }], blend: 0, keep: 0 });
  }
});
