// Plan search (docs/design.md §5): enumerate candidate grids with between max(2, R) and 4·R tiles under
// the conservative constraints (narrow axis ≥ 16 latent units and ≥ R units, overlap
// ceil(window/4) on tiled axes, windows the VAE accepts), keep the Pareto frontier over
// (window area, decoded area, imbalance, tile columns), and pick coarse / balanced / fine.
// Profile names describe geometry, not speed. A caller's `admit` (the memory layer's budget)
// drops candidates before the frontier is taken, so a smaller plan is never hidden behind one
// that cannot run.

import type { Size2, VaeSpec } from '../families/types.js';
import { axisSpans } from './grid.js';
import { maxLoadLowerBound, scheduleTiles } from './scheduler.js';
import { latentShapeOf, type SampleShape } from './shapes.js';

/** The smallest window the search considers on an axis, in latent units (or the ranks, when more). */
export const MIN_NARROW_AXIS_LATENT = 16;

/** A plan the search considered, with the costs it is ranked by. */
export interface SearchCandidate {
  /** Window and overlap in output pixels. */
  window: Size2;
  overlap: Size2;
  /** Effective window in latent units (an untiled axis spans the whole latent). */
  windowLatent: Size2;
  tiles: number;
  rows: number;
  columns: number;
  /** Effective window area in latent units². */
  windowArea: number;
  decodedAreaRatio: number;
  activationShare: number;
  seams: number;
  imbalance: number;
}

/** What `searchPlans` found: how many candidates met the constraints, the Pareto frontier and three picks. */
export interface SearchResult {
  /** How many candidates met the constraints. */
  candidates: number;
  /** Undominated candidates, largest window first. */
  frontier: SearchCandidate[];
  picks: { coarse: SearchCandidate | null; balanced: SearchCandidate | null; fine: SearchCandidate | null };
}

export interface AxisOption {
  window: number;
  overlap: number;
  count: number;
  extents: number[];
  extentSum: number;
  maxExtent: number;
}

/**
 * Window options on one axis (windows ≥ `minWindow` latent units, overlap ceil(w/4)), plus the
 * whole axis untiled. Among windows giving the same tile count only those that decode less of
 * the axis than every smaller window with that count are kept: a larger window with no smaller
 * extent sum is no better on window area, decoded area or tile columns, and its only chance —
 * a better balance — comes from clipped slivers that a smaller window also produces.
 */
export function axisOptions(length: number, minWindow: number): AxisOption[] {
  const bestSum = new Map<number, number>();
  const options: AxisOption[] = [];
  for (let w = Math.max(2, minWindow); w < length; w++) {
    const overlap = Math.ceil(w / 4);
    const extents = axisSpans(length, w, w - overlap).map((s) => s.end - s.start);
    const count = extents.length;
    const extentSum = extents.reduce((a, b) => a + b, 0);
    if (extentSum >= (bestSum.get(count) ?? Infinity)) continue;
    bestSum.set(count, extentSum);
    options.push({ window: w, overlap, count, extents, extentSum, maxExtent: extents.reduce((m, e) => Math.max(m, e), 0) });
  }
  if (length >= minWindow) options.push({ window: length, overlap: 0, count: 1, extents: [length], extentSum: length, maxExtent: length });
  return options;
}

/** Options of `searchPlans`. */
export interface SearchOptions {
  /**
   * Whether a candidate may run (e.g. fits a memory budget); candidates it refuses are dropped
   * before the frontier is taken. Asked lazily: a candidate an admitted one dominates is never asked.
   */
  admit?: (candidate: SearchCandidate) => boolean;
}

/** Searches plans for a (valid) sample shape over `ranks`. */
export function searchPlans(vae: VaeSpec, sample: SampleShape, ranks: number, options: SearchOptions = {}): SearchResult {
  const latent = latentShapeOf(vae.geometry, sample);
  const r = vae.geometry.spatialRatio;
  const minTiles = Math.max(2, ranks);
  const maxTiles = 4 * ranks;
  const minNarrow = Math.max(MIN_NARROW_AXIS_LATENT, ranks);
  const minWindow = Math.max(vae.family.minWindowLatent, minNarrow);
  const rowsOptions = axisOptions(latent.height, minWindow);
  const colsOptions = axisOptions(latent.width, minWindow);
  const latentArea = latent.height * latent.width;
  const candidates: { candidate: SearchCandidate; areas: number[]; imbalanceBound: number }[] = [];
  for (const h of rowsOptions) {
    for (const w of colsOptions) {
      const tiles = h.count * w.count;
      if (tiles < minTiles || tiles > maxTiles) continue;
      const window = { height: h.window * r, width: w.window * r };
      if (vae.family.extraWindowReasons && vae.family.extraWindowReasons(vae.config, window).length > 0) continue;
      const areas: number[] = [];
      for (const eh of h.extents) for (const ew of w.extents) areas.push(eh * ew);
      const total = h.extentSum * w.extentSum;
      candidates.push({
        candidate: {
          window,
          overlap: { height: h.overlap * r, width: w.overlap * r },
          windowLatent: { height: h.maxExtent, width: w.maxExtent },
          tiles,
          rows: h.count,
          columns: w.count,
          windowArea: h.maxExtent * w.maxExtent,
          decodedAreaRatio: total / latentArea,
          activationShare: (h.maxExtent * w.maxExtent) / latentArea,
          seams: w.count * (h.count - 1) + h.count * (w.count - 1),
          imbalance: NaN,
        },
        areas,
        imbalanceBound: maxLoadLowerBound(areas, ranks) / (total / ranks) - 1,
      });
    }
  }
  // Lazy frontier: candidates in ascending objective order; one is scheduled (and admitted) only
  // when no member found so far would dominate it even at its imbalance lower bound. The frontier
  // holds only admitted candidates, so one dominated by a member is dominated among the admitted.
  candidates.sort((a, b) => byObjectives(a.candidate, b.candidate) || a.imbalanceBound - b.imbalanceBound);
  let frontier: SearchCandidate[] = [];
  for (const { candidate: c, areas, imbalanceBound } of candidates) {
    if (frontier.some((f) => dominates(f, { ...c, imbalance: imbalanceBound }))) continue;
    c.imbalance = scheduleTiles(areas, ranks).imbalance;
    if (frontier.some((f) => dominates(f, c))) continue;
    if (options.admit && !options.admit(c)) continue;
    frontier = frontier.filter((f) => !dominates(c, f));
    frontier.push(c);
  }
  return { candidates: candidates.length, frontier: frontier.sort(byLargerWindow), picks: pickProfiles(frontier) };
}

function dominates(a: SearchCandidate, b: SearchCandidate): boolean {
  const le =
    a.windowArea <= b.windowArea && a.decodedAreaRatio <= b.decodedAreaRatio && a.imbalance <= b.imbalance && a.columns <= b.columns;
  const lt = a.windowArea < b.windowArea || a.decodedAreaRatio < b.decodedAreaRatio || a.imbalance < b.imbalance || a.columns < b.columns;
  return le && lt;
}

/** Candidates no other candidate dominates, largest window first (ties: see `byLargerWindow`). */
export function paretoFrontier(candidates: readonly SearchCandidate[]): SearchCandidate[] {
  const sorted = [...candidates].sort(byObjectives);
  const frontier: SearchCandidate[] = [];
  for (const c of sorted) {
    // Sorted ascending by every objective in turn, so only earlier candidates can dominate c.
    if (!frontier.some((f) => dominates(f, c))) frontier.push(c);
  }
  return frontier.sort(byLargerWindow);
}

/** Ascending by every objective in turn: window area, then as `afterWindowArea`. */
function byObjectives(a: SearchCandidate, b: SearchCandidate): number {
  return a.windowArea - b.windowArea || afterWindowArea(a, b);
}

/** Larger window first; then as `afterWindowArea`. */
function byLargerWindow(a: SearchCandidate, b: SearchCandidate): number {
  return b.windowArea - a.windowArea || afterWindowArea(a, b);
}

/** Lower decoded area, imbalance, columns; then the taller, then the wider window (so no two windows tie). */
function afterWindowArea(a: SearchCandidate, b: SearchCandidate): number {
  return (
    a.decodedAreaRatio - b.decodedAreaRatio ||
    a.imbalance - b.imbalance ||
    a.columns - b.columns ||
    b.window.height - a.window.height ||
    b.window.width - a.window.width
  );
}

function sameWindow(a: SearchCandidate, b: SearchCandidate): boolean {
  return a.window.height === b.window.height && a.window.width === b.window.width;
}

/**
 * coarse = largest window, fine = smallest, balanced = among the others the one minimising the
 * worst of the min–max normalised window-area, decoded-area and imbalance scores (ties to the
 * larger window). Picks are distinct windows; one that does not exist is null.
 */
export function pickProfiles(frontier: readonly SearchCandidate[]): SearchResult['picks'] {
  if (frontier.length === 0) return { coarse: null, balanced: null, fine: null };
  const coarse = frontier[0]!;
  const smallestArea = frontier[frontier.length - 1]!.windowArea;
  const fineCandidates = frontier.filter((c) => c.windowArea === smallestArea && !sameWindow(c, coarse));
  const fine = fineCandidates[0] ?? null;
  const others = frontier.filter((c) => !sameWindow(c, coarse) && (fine === null || !sameWindow(c, fine)));
  const norm = (values: number[]) => {
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    return (v: number) => (hi > lo ? (v - lo) / (hi - lo) : 0);
  };
  const nArea = norm(frontier.map((c) => c.windowArea));
  const nDecoded = norm(frontier.map((c) => c.decodedAreaRatio));
  const nImbalance = norm(frontier.map((c) => c.imbalance));
  let balanced: SearchCandidate | null = null;
  let bestScore = Infinity;
  for (const c of others) {
    // `others` keeps the frontier's larger-window-first order, so strict < sends ties to the larger window.
    const score = Math.max(nArea(c.windowArea), nDecoded(c.decodedAreaRatio), nImbalance(c.imbalance));
    if (score < bestScore) {
      bestScore = score;
      balanced = c;
    }
  }
  return { coarse, balanced, fine };
}
