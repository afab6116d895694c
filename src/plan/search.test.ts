// Plan search (docs/design.md §5) against an independent brute-force enumeration of its candidate rule:
// per axis the whole axis untiled (overlap 0), or a tiled window of w >= max(16, R) latent
// units with overlap ceil(w/4) — among windows with the same tile count, those decoding less of
// the axis than every smaller one — paired into grids of max(2, R)..4R tiles. Checks every
// candidate metric of the frontier, that the frontier is exactly the undominated set, and the
// coarse / balanced / fine picks computed here from the frontier.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import { explainTileShapePlan } from './planner.js';
import { scheduleTiles } from './scheduler.js';
import { paretoFrontier, pickProfiles, searchPlans, type SearchCandidate, type SearchResult } from './search.js';

interface AxisChoice {
  window: number;
  overlap: number;
  extents: number[];
}

/** Extents of the tiles of range(0, L, stride) with window w. */
function extents(L: number, w: number, stride: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < L; i += stride) out.push(Math.min(w, L - i));
  return out;
}

function axisChoices(L: number, minWindow: number): AxisChoice[] {
  const choices: AxisChoice[] = [];
  const smallestSum = new Map<number, number>();
  for (let w = minWindow; w < L; w++) {
    const overlap = Math.ceil(w / 4);
    const e = extents(L, w, w - overlap);
    const sum = e.reduce((a, b) => a + b, 0);
    if (sum >= (smallestSum.get(e.length) ?? Infinity)) continue;
    smallestSum.set(e.length, sum);
    choices.push({ window: w, overlap, extents: e });
  }
  if (L >= minWindow) choices.push({ window: L, overlap: 0, extents: [L] });
  return choices;
}

/** A candidate as the brute force states it: the search's fields, with the overlap in latent units instead of pixels. */
type Brute = Omit<SearchCandidate, 'window' | 'overlap'> & { overlapLatent: { height: number; width: number } };

function bruteCandidates(H: number, W: number, R: number): Brute[] {
  const minWindow = Math.max(16, R);
  const out: Brute[] = [];
  for (const h of axisChoices(H, minWindow)) {
    for (const w of axisChoices(W, minWindow)) {
      const rows = h.extents.length;
      const cols = w.extents.length;
      const tiles = rows * cols;
      if (tiles < Math.max(2, R) || tiles > 4 * R) continue;
      const areas = h.extents.flatMap((a) => w.extents.map((b) => a * b));
      out.push({
        windowLatent: { height: Math.max(...h.extents), width: Math.max(...w.extents) },
        overlapLatent: { height: h.overlap, width: w.overlap },
        tiles,
        rows,
        columns: cols,
        windowArea: Math.max(...h.extents) * Math.max(...w.extents),
        decodedAreaRatio: areas.reduce((a, b) => a + b, 0) / (H * W),
        activationShare: Math.max(...areas) / (H * W),
        seams: cols * (rows - 1) + rows * (cols - 1),
        // The scheduler is the imbalance oracle here (it has its own test against an exact solver).
        imbalance: scheduleTiles(areas, R).imbalance,
      });
    }
  }
  return out;
}

type Objectives = Pick<Brute, 'windowArea' | 'decodedAreaRatio' | 'imbalance' | 'columns'>;
function dominates(a: Objectives, b: Objectives): boolean {
  const keys = ['windowArea', 'decodedAreaRatio', 'imbalance', 'columns'] as const;
  return keys.every((k) => a[k] <= b[k]) && keys.some((k) => a[k] < b[k]);
}

const key = (c: { windowLatent: { height: number; width: number } }) => `${c.windowLatent.height}x${c.windowLatent.width}`;

const CASES = [
  { family: 'autoencoder-kl', height: 4096, width: 4096, ranks: 8 },
  { family: 'autoencoder-kl', height: 1024, width: 1536, ranks: 4 },
  { family: 'autoencoder-kl', height: 1360, width: 768, ranks: 3 },
  { family: 'autoencoder-kl', height: 512, width: 512, ranks: 4 },
  { family: 'autoencoder-kl', height: 1088, width: 32768, ranks: 2 },
  { family: 'autoencoder-kl', height: 1024, width: 1280, ranks: 20 },
  { family: 'flux2', height: 2048, width: 1024, ranks: 1 },
  { family: 'ltx2', height: 4096, width: 4096, ranks: 8, frames: 9 },
  { family: 'wan', height: 720, width: 1280, ranks: 6, frames: 81 },
  { family: 'tae', height: 1000, width: 1504, ranks: 5 },
] as const;

const searched = new Map<(typeof CASES)[number], { result: SearchResult; H: number; W: number; r: number }>();
/** Each case is searched once and shared by the tests below (the search is deterministic, tested at the end). */
function runSearch(c: (typeof CASES)[number]): { result: SearchResult; H: number; W: number; r: number } {
  if (!searched.has(c)) {
    const vae = planningVae(c.family);
    const r = vae.geometry.spatialRatio;
    const sample = { height: c.height, width: c.width, ...('frames' in c ? { frames: c.frames } : {}) };
    searched.set(c, { result: searchPlans(vae, sample, c.ranks), H: c.height / r, W: c.width / r, r });
  }
  return searched.get(c)!;
}

test('every frontier candidate meets the constraints and carries the metrics of its grid', () => {
  for (const c of CASES) {
    const { result, H, W, r } = runSearch(c);
    const R = c.ranks;
    const vae = planningVae(c.family);
    assert.ok(result.frontier.length > 0, `${c.family} ${c.height}x${c.width}`);
    for (const f of result.frontier) {
      assert.ok(f.tiles >= Math.max(2, R) && f.tiles <= 4 * R, `tiles ${f.tiles}`);
      assert.equal(f.tiles, f.rows * f.columns);
      // Windows in whole latent units; narrow axis >= max(16, R).
      assert.equal(f.window.height % r, 0);
      assert.equal(f.window.width % r, 0);
      assert.ok(Math.min(f.windowLatent.height, f.windowLatent.width) >= Math.max(16, R));
      // Overlap ceil(w/4) on a tiled axis, 0 on an untiled one (which spans the whole axis).
      for (const [axis, L, count] of [
        ['height', H, f.rows],
        ['width', W, f.columns],
      ] as const) {
        const wl = f.window[axis] / r;
        if (count === 1) {
          assert.deepEqual([wl, f.overlap[axis]], [L, 0], `${axis} untiled`);
        } else {
          assert.ok(wl < L);
          assert.equal(f.overlap[axis], Math.ceil(wl / 4) * r);
          assert.equal(extents(L, wl, wl - Math.ceil(wl / 4)).length, count);
        }
      }
      // The VAE accepts the window.
      assert.deepEqual(explainTileShapePlan(vae, f.window.height, f.window.width), []);
      // Metrics recomputed from the grid.
      const eh = f.rows === 1 ? [H] : extents(H, f.window.height / r, (f.window.height - f.overlap.height) / r);
      const ew = f.columns === 1 ? [W] : extents(W, f.window.width / r, (f.window.width - f.overlap.width) / r);
      const areas = eh.flatMap((a) => ew.map((b) => a * b));
      assert.deepEqual(f.windowLatent, { height: Math.max(...eh), width: Math.max(...ew) });
      assert.equal(f.windowArea, Math.max(...eh) * Math.max(...ew));
      assert.ok(Math.abs(f.decodedAreaRatio - areas.reduce((a, b) => a + b, 0) / (H * W)) < 1e-12);
      assert.ok(Math.abs(f.activationShare - Math.max(...areas) / (H * W)) < 1e-12);
      assert.equal(f.seams, f.columns * (f.rows - 1) + f.rows * (f.columns - 1));
      assert.equal(f.imbalance, scheduleTiles(areas, R).imbalance);
    }
  }
});

test('the frontier is exactly the undominated set of a brute-force enumeration of the candidate rule', () => {
  for (const c of CASES) {
    const { result, H, W } = runSearch(c);
    const label = `${c.family} ${c.height}x${c.width} R=${c.ranks}`;
    const brute = bruteCandidates(H, W, c.ranks);
    assert.equal(result.candidates, brute.length, label);
    const byKey = new Map(brute.map((b) => [key(b), b]));
    for (const f of result.frontier) {
      const b = byKey.get(key(f));
      assert.ok(b, `${label}: ${key(f)} is not a candidate of the rule`);
      assert.deepEqual(
        [f.tiles, f.rows, f.columns, f.windowArea, f.seams, f.imbalance],
        [b.tiles, b.rows, b.columns, b.windowArea, b.seams, b.imbalance],
      );
      assert.ok(Math.abs(f.decodedAreaRatio - b.decodedAreaRatio) < 1e-12);
      // Undominated by every candidate, and by every other frontier member.
      for (const other of brute) assert.ok(!dominates(other, f), `${label}: ${key(f)} dominated by ${key(other)}`);
      for (const other of result.frontier) assert.ok(!dominates(other, f));
    }
    const undominated = brute
      .filter((b) => !brute.some((o) => dominates(o, b)))
      .map(key)
      .sort();
    assert.deepEqual(result.frontier.map(key).sort(), undominated, label);
    // Largest window first.
    for (let i = 1; i < result.frontier.length; i++) assert.ok(result.frontier[i - 1]!.windowArea >= result.frontier[i]!.windowArea);
  }
});

/** What the picks must satisfy on a (non-empty) frontier, as docs/design.md §5 states them. */
function referencePicks(frontier: readonly SearchCandidate[]) {
  const maxArea = Math.max(...frontier.map((f) => f.windowArea));
  const minArea = Math.min(...frontier.map((f) => f.windowArea));
  const norm = (v: number, all: number[]) => {
    const lo = Math.min(...all);
    const hi = Math.max(...all);
    return hi > lo ? (v - lo) / (hi - lo) : 0;
  };
  const score = (c: SearchCandidate) =>
    Math.max(
      norm(
        c.windowArea,
        frontier.map((f) => f.windowArea),
      ),
      norm(
        c.decodedAreaRatio,
        frontier.map((f) => f.decodedAreaRatio),
      ),
      norm(
        c.imbalance,
        frontier.map((f) => f.imbalance),
      ),
    );
  return { maxArea, minArea, score };
}

test('picks: coarse has the largest window area, fine the smallest, balanced minimises the worst normalised score among the others', () => {
  for (const c of CASES) {
    const { result } = runSearch(c);
    const { coarse, balanced, fine } = result.picks;
    const ref = referencePicks(result.frontier);
    assert.ok(coarse);
    assert.equal(coarse.windowArea, ref.maxArea);
    assert.ok(result.frontier.includes(coarse));
    if (fine) {
      assert.equal(fine.windowArea, ref.minArea);
      assert.ok(result.frontier.includes(fine));
    }
    const picked = [coarse, balanced, fine].filter((p): p is SearchCandidate => p !== null);
    assert.equal(new Set(picked.map(key)).size, picked.length, 'picks are distinct windows');
    const others = result.frontier.filter((f) => f !== coarse && f !== fine);
    if (others.length === 0) {
      assert.equal(balanced, null);
      continue;
    }
    assert.ok(balanced);
    const best = Math.min(...others.map(ref.score));
    assert.ok(
      Math.abs(ref.score(balanced) - best) < 1e-12,
      `${c.family} ${c.height}x${c.width}: balanced score ${ref.score(balanced)} vs best ${best}`,
    );
    // Ties go to the larger window.
    for (const o of others) if (Math.abs(ref.score(o) - best) < 1e-12) assert.ok(o.windowArea <= balanced.windowArea);
  }
});

test('picks that do not exist are null: no candidates for tiny latents or a narrow axis under 16 units; one or two frontier members', () => {
  const kl = planningVae('autoencoder-kl');
  // 64x8192 px: the latent is 8 units high, under the 16-unit narrow-axis floor.
  const strip = searchPlans(kl, { height: 64, width: 8192 }, 2);
  assert.deepEqual(strip, { candidates: 0, frontier: [], picks: { coarse: null, balanced: null, fine: null } });
  // 128x128 px = 16x16 latent: only the untiled single tile, below max(2, R) tiles.
  assert.equal(searchPlans(kl, { height: 128, width: 128 }, 1).candidates, 0);
  // 8x8 px = one latent unit.
  assert.equal(searchPlans(kl, { height: 8, width: 8 }, 4).frontier.length, 0);
  // 17 units per side, R = 20: narrow axis must hold >= 20 units -> nothing.
  assert.equal(searchPlans(kl, { height: 136, width: 136 }, 20).candidates, 0);
  // 200x136 px = 25x17 latent, one rank: one frontier member -> coarse only.
  const one = searchPlans(kl, { height: 200, width: 136 }, 1);
  assert.equal(one.frontier.length, 1);
  assert.deepEqual([one.picks.coarse, one.picks.balanced, one.picks.fine], [one.frontier[0], null, null]);
  // 136x136 px = 17x17: two members -> coarse and fine, no balanced.
  const two = searchPlans(kl, { height: 136, width: 136 }, 1);
  assert.equal(two.frontier.length, 2);
  assert.equal(two.picks.balanced, null);
  assert.notEqual(two.picks.fine, null);
  assert.ok(two.picks.coarse!.windowArea > two.picks.fine!.windowArea);
});

test('paretoFrontier and pickProfiles on hand-made candidates: dominance on all four objectives, ties to the larger window', () => {
  const cand = (
    h: number,
    w: number,
    windowArea: number,
    decodedAreaRatio: number,
    imbalance: number,
    columns: number,
  ): SearchCandidate => ({
    window: { height: h, width: w },
    overlap: { height: 0, width: 0 },
    windowLatent: { height: h, width: w },
    tiles: columns,
    rows: 1,
    columns,
    windowArea,
    decodedAreaRatio,
    activationShare: 0,
    seams: 0,
    imbalance,
  });
  const a = cand(40, 40, 1600, 1.2, 0.1, 2);
  const b = cand(40, 30, 1200, 1.3, 0.1, 2);
  const dominatedByB = cand(30, 41, 1230, 1.3, 0.2, 2);
  const equalToB = cand(30, 40, 1200, 1.3, 0.1, 2); // same objectives as b: neither dominates the other
  const c = cand(20, 30, 600, 1.5, 0.0, 3);
  const d = cand(30, 30, 900, 1.4, 0.3, 3);
  const frontier = paretoFrontier([dominatedByB, c, a, equalToB, d, b]);
  assert.deepEqual(frontier.map(key), ['40x40', '40x30', '30x40', '30x30', '20x30']);
  const picks = pickProfiles(frontier);
  assert.equal(key(picks.coarse!), '40x40');
  assert.equal(key(picks.fine!), '20x30');
  // Scores (area, decoded, imbalance normalised over the frontier): b and equalToB tie at 0.6; d scores 1.
  assert.equal(key(picks.balanced!), '40x30');
  assert.deepEqual(pickProfiles([]), { coarse: null, balanced: null, fine: null });
});

test('the search is deterministic', () => {
  const vae = planningVae('autoencoder-kl');
  assert.deepEqual(searchPlans(vae, { height: 3072, width: 2048 }, 6), searchPlans(vae, { height: 3072, width: 2048 }, 6));
});
