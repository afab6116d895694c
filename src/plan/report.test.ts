// Metrics of a grid and the plan report (docs/design.md §5, §9): decoded-area ratio, activation share,
// the seams formula, per-rank loads (latent area × latent frames over all chunks) that add up to
// the total work, imbalance, and the JSON field names of the CLI contract. References are
// computed here from an independently built grid.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import type { VaeSpec } from '../families/types.js';
import { tileGrid } from './grid.js';
import { gridMetrics, scheduleGrid, tileWork } from './metrics.js';
import { tileOverlapPlan, tileShapePlan, setTiling } from './planner.js';
import { planReport } from './report.js';

/** Starts of range(0, L, stride) with their clipped extents. */
function extents(L: number, window: number, stride: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < L; i += stride) out.push(Math.min(window, L - i));
  return out;
}

function plan(vae: VaeSpec, window: [number, number], overlap: [number, number]): VaeSpec {
  setTiling(vae, tileShapePlan(vae, window[0], window[1])!);
  setTiling(vae, tileOverlapPlan(vae, overlap[0], overlap[1])!);
  return vae;
}

const CASES = [
  { family: 'autoencoder-kl', window: [512, 512], overlap: [128, 128], latent: [128, 192] },
  { family: 'autoencoder-kl', window: [512, 512], overlap: [128, 128], latent: [8, 1024] },
  { family: 'autoencoder-kl', window: [256, 640], overlap: [64, 0], latent: [100, 70] },
  { family: 'flux2', window: [384, 256], overlap: [96, 64], latent: [131, 77] },
  { family: 'wan', window: [256, 256], overlap: [64, 64], latent: [45, 80] },
] as const;

test('decoded-area ratio, activation share, rows x columns and seams match an independent grid', () => {
  for (const c of CASES) {
    const vae = plan(planningVae(c.family), [c.window[0], c.window[1]], [c.overlap[0], c.overlap[1]]);
    const [h, w] = c.latent;
    const r = vae.geometry.spatialRatio;
    const wl = [c.window[0] / r, c.window[1] / r];
    const sl = [(c.window[0] - c.overlap[0]) / r, (c.window[1] - c.overlap[1]) / r];
    const rowsExt = extents(h, wl[0]!, sl[0]!);
    const colsExt = extents(w, wl[1]!, sl[1]!);
    const areas = rowsExt.flatMap((a) => colsExt.map((b) => a * b));
    const m = gridMetrics(tileGrid(vae, { height: h, width: w, frames: 1 }));
    const rows = rowsExt.length;
    const cols = colsExt.length;
    assert.equal(m.tiles, rows * cols);
    assert.deepEqual([m.rows, m.columns], [rows, cols]);
    assert.equal(m.decodedAreaRatio, areas.reduce((a, b) => a + b, 0) / (h * w));
    assert.equal(m.activationShare, Math.max(...areas) / (h * w));
    // Seams: pairs of neighbouring tiles, counted directly.
    let pairs = 0;
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) pairs += (i + 1 < rows ? 1 : 0) + (j + 1 < cols ? 1 : 0);
    assert.equal(m.seams, pairs);
    assert.equal(m.seams, cols * (rows - 1) + rows * (cols - 1));
    assert.ok(m.decodedAreaRatio >= 1);
  }
});

test('an untiled latent: one tile, ratio 1, share 1, no seams', () => {
  const vae = planningVae('autoencoder-kl');
  vae.tiling.enabled = true;
  assert.deepEqual(gridMetrics(tileGrid(vae, { height: 30, width: 50, frames: 1 })), {
    tiles: 1,
    rows: 1,
    columns: 1,
    decodedAreaRatio: 1,
    activationShare: 1,
    seams: 0,
  });
});

test("per-rank loads: each is the sum of its tiles' work, they add up to the total, imbalance = max / mean − 1", () => {
  for (const c of CASES) {
    const vae = plan(planningVae(c.family), [c.window[0], c.window[1]], [c.overlap[0], c.overlap[1]]);
    const grid = tileGrid(vae, { height: c.latent[0], width: c.latent[1], frames: 1 });
    const areas = grid.tiles.map((t) => (t.y1 - t.y0) * (t.x1 - t.x0));
    assert.deepEqual(tileWork(grid), areas);
    for (const ranks of [1, 2, 3, 5, 8]) {
      const s = scheduleGrid(grid, ranks);
      const total = areas.reduce((a, b) => a + b, 0);
      assert.equal(s.loads.length, ranks);
      s.ranks.forEach((tiles, k) =>
        assert.equal(
          s.loads[k],
          tiles.reduce((a, t) => a + areas[t]!, 0),
        ),
      );
      assert.equal(
        s.loads.reduce((a, b) => a + b, 0),
        total,
      );
      assert.equal(s.maxLoad, Math.max(...s.loads));
      assert.ok(Math.abs(s.imbalance - (s.maxLoad / (total / ranks) - 1)) < 1e-12);
    }
  }
});

test('video load is latent area x latent frames carried over every temporal chunk', () => {
  // HunyuanVideo, 33 frames = 9 latent frames: chunks [0,5) [3,8) [6,9) -> 5 + 5 + 3 = 13 latent frames per tile.
  const vae = plan(planningVae('hunyuan-video'), [256, 256], [64, 64]);
  const report = planReport(vae, { height: 320, width: 480, frames: 33 }, 3);
  assert.deepEqual(report.latent, { height: 40, width: 60, frames: 9 });
  const areas = report.tileList.map((t) => (t.y1 - t.y0) * (t.x1 - t.x0));
  assert.equal(
    report.ranks.reduce((a, r) => a + r.load, 0),
    13 * areas.reduce((a, b) => a + b, 0),
  );
  for (const r of report.ranks) assert.equal(r.load, 13 * r.tiles.reduce((a, t) => a + areas[t]!, 0));
  assert.deepEqual(report.stride, { height: 24, width: 24, frames: 3 });
  assert.deepEqual(report.frames, { enabled: true, window: 16, overlap: 4, chunks: 3 });
  // Wan steps frames inside each tile: all 9 latent frames once.
  const wan = plan(planningVae('wan'), [256, 256], [64, 64]);
  const w = planReport(wan, { height: 320, width: 480, frames: 33 }, 2);
  assert.equal(
    w.ranks.reduce((a, r) => a + r.load, 0),
    9 * w.tileList.reduce((a, t) => a + (t.y1 - t.y0) * (t.x1 - t.x0), 0),
  );
  assert.equal(w.frames, null);
  assert.deepEqual(w.stride, { height: 24, width: 24 });
});

test('the report carries the CLI JSON contract: field names, units and shapes (docs/design.md §9)', () => {
  const vae = plan(planningVae('autoencoder-kl'), [512, 512], [128, 128]);
  const report = JSON.parse(JSON.stringify(planReport(vae, { height: 1024, width: 1536 }, 4)));
  for (const key of [
    'family',
    'latent',
    'window',
    'overlap',
    'stride',
    'tiles',
    'rows',
    'columns',
    'decodedAreaRatio',
    'activationShare',
    'seams',
    'imbalance',
    'ranks',
    'tileList',
  ]) {
    assert.ok(key in report, key);
  }
  assert.equal(report.family, 'autoencoder-kl');
  assert.deepEqual(report.latent, { height: 128, width: 192, frames: 1 });
  assert.deepEqual(report.window, { height: 512, width: 512 });
  assert.deepEqual(report.overlap, { height: 128, width: 128 });
  assert.deepEqual(report.stride, { height: 48, width: 48 });
  // rows: range(0,128,48) = 0,48,96; cols: range(0,192,48) = 0,48,96,144.
  assert.deepEqual([report.tiles, report.rows, report.columns], [12, 3, 4]);
  assert.equal(report.seams, 4 * 2 + 3 * 3);
  assert.equal(typeof report.imbalance, 'number');
  assert.equal(report.diffusersEquivalent, true);
  assert.deepEqual(
    report.ranks.map((r: { rank: number }) => r.rank),
    [0, 1, 2, 3],
  );
  for (const r of report.ranks) assert.deepEqual(Object.keys(r).sort(), ['load', 'rank', 'tiles']);
  assert.equal(report.tileList.length, 12);
  for (const t of report.tileList) assert.deepEqual(Object.keys(t).sort(), ['col', 'index', 'row', 'x0', 'x1', 'y0', 'y1']);
  assert.deepEqual(report.tileList[11], { index: 11, row: 2, col: 3, y0: 96, y1: 128, x0: 144, x1: 192 });
  // Every tile index appears on exactly one rank.
  assert.deepEqual(
    report.ranks.flatMap((r: { tiles: number[] }) => r.tiles).sort((a: number, b: number) => a - b),
    [...Array(12).keys()],
  );
});

test('fewer tiles than ranks: all R ranks listed, idle ones with no tiles, and the report says so', () => {
  const vae = plan(planningVae('autoencoder-kl'), [512, 512], [128, 128]);
  const report = planReport(vae, { height: 512, width: 1024 }, 8); // 2 x 3 = 6 tiles
  assert.equal(report.tiles, 6);
  assert.equal(report.ranks.length, 8);
  assert.equal(report.idleRanks, 2);
  assert.deepEqual(
    report.ranks.map((r) => r.tiles.length),
    [1, 1, 1, 1, 1, 1, 0, 0],
  );
  assert.match(report.note!, /2 rank\(s\) stay idle/);
  // An untiled latent on several ranks: one tile, the others idle, diffusersEquivalent trivially true.
  const small = planReport(vae, { height: 256, width: 256 }, 3);
  assert.equal(small.tiled, false);
  assert.deepEqual([small.tiles, small.idleRanks], [1, 2]);
  assert.deepEqual(
    [small.window, small.overlap],
    [
      { height: 256, width: 256 },
      { height: 0, width: 0 },
    ],
  );
  assert.match(small.note!, /one window/);
});
