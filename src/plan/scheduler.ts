// The scheduler (docs/design.md §5): deals tiles to ranks by work (latent area × frames), not by count,
// minimising the heaviest rank's load over all assignments (a rank's tiles need not be
// contiguous). Deterministic: two starts — optimal contiguous raster-order runs and
// largest-first — each improved by local search out of the heaviest rank (single moves and
// swaps, and an exhaustive re-split of the heaviest rank with another when the two hold few
// tiles); the better result wins; when it is not provably within 1% of the optimum, a
// node-bounded exact search follows. With fewer tiles than ranks each tile gets its own rank and
// the others stay idle: work is never duplicated.

/** Tiles dealt to ranks: each rank's tiles and load, the largest load and the imbalance. */
export interface Schedule {
  /** Tile indices per rank, in raster order; idle ranks have none. */
  ranks: number[][];
  /** Load per rank (sum of its tiles' work). */
  loads: number[];
  maxLoad: number;
  /** max load / (total / ranks) − 1; 0 is perfect balance. */
  imbalance: number;
  /** Ranks that received no tile (only when there are fewer tiles than ranks). */
  idleRanks: number[];
  /** Lower bound on any assignment's heaviest load; maxLoad equals it when provably optimal. */
  lowerBound: number;
}

/** Pairs holding at most this many tiles are re-split exhaustively (2^n subsets). */
const EXHAUSTIVE_PAIR_TILES = 12;

/** A heaviest load at most this factor above the lower bound is within 1% of the optimum: no exact search needed. */
const WITHIN_OPTIMUM = 1.01;

/** Node budget of the exact search that follows the heuristics (deterministic: nodes, not time). */
const EXACT_SEARCH_NODES = 200;

/** Deals tiles of the given work to `ranks`, minimising the largest load; each tile goes to exactly one rank. */
export function scheduleTiles(work: readonly number[], ranks: number): Schedule {
  if (!Number.isInteger(ranks) || ranks < 1) throw new RangeError(`ranks must be a positive integer, got ${ranks}`);
  const n = work.length;
  if (n <= ranks)
    return finish(
      work,
      work.map((_, i) => i),
      ranks,
    );
  const starts = [contiguousRuns(work, ranks), largestFirst(work, ranks)];
  let best: number[] | null = null;
  let bestKey: [number, number] = [Infinity, Infinity];
  for (const owner of starts) {
    localSearch(work, owner, ranks);
    const loads = loadsOf(work, owner, ranks);
    const key: [number, number] = [Math.max(...loads), loads.reduce((s, l) => s + l * l, 0)];
    if (key[0] < bestKey[0] || (key[0] === bestKey[0] && key[1] < bestKey[1])) {
      best = owner;
      bestKey = key;
    }
  }
  // Moves and pair re-splits can stall where only a three-way exchange helps (up to 4% above the
  // optimum on small grids); a bounded exact search closes that gap when the bound is not met.
  if (bestKey[0] > WITHIN_OPTIMUM * maxLoadLowerBound(work, ranks)) best = exactSearch(work, ranks, best!, bestKey[0]) ?? best;
  return finish(work, best!, ranks);
}

/**
 * Tiles dealt round-robin in raster order (tile i to rank i mod R) for output that streams band
 * by band: ranks working at similar speeds finish tiles near each other in raster order, so the
 * rows waiting for a missing tile stay few, whereas the balanced schedule's contiguous runs would
 * finish the image's lower part first and hold it until the upper part is done. Loads differ by
 * at most one tile's work.
 */
export function scheduleInterleaved(work: readonly number[], ranks: number): Schedule {
  if (!Number.isInteger(ranks) || ranks < 1) throw new RangeError(`ranks must be a positive integer, got ${ranks}`);
  return finish(
    work,
    work.map((_, i) => i % ranks),
    ranks,
  );
}

/**
 * Depth-first search for an assignment whose heaviest load is below `peak`: largest tile first,
 * ranks with equal loads tried once, pruned when the remaining work cannot fit in the room the
 * ranks have left under the best peak so far. Returns the best assignment found, or null when
 * none beat `peak` within the node budget.
 */
function exactSearch(work: readonly number[], ranks: number, start: readonly number[], peak: number): number[] | null {
  const order = work.map((_, i) => i).sort((a, b) => work[b]! - work[a]! || a - b);
  const smallest = work[order[order.length - 1]!]!;
  const remaining = new Array<number>(order.length + 1).fill(0);
  for (let k = order.length - 1; k >= 0; k--) remaining[k] = remaining[k + 1]! + work[order[k]!]!;
  const lowerBound = maxLoadLowerBound(work, ranks);
  const loads = new Array<number>(ranks).fill(0);
  const owner = [...start];
  let best = peak;
  let found: number[] | null = null;
  let nodes = 0;
  const visit = (k: number): void => {
    if (k === order.length) {
      best = Math.max(...loads);
      found = [...owner];
      return;
    }
    // Every rank must end strictly below `best`; a rank without room for the smallest tile takes nothing more.
    let room = 0;
    for (const l of loads) if (best - l > smallest) room += best - l;
    if (remaining[k]! >= room) return;
    const w = work[order[k]!]!;
    for (let r = 0; r < ranks && best > lowerBound && nodes < EXACT_SEARCH_NODES; r++) {
      if (loads[r]! + w >= best || loads.indexOf(loads[r]!) < r) continue;
      nodes++;
      loads[r]! += w;
      owner[order[k]!] = r;
      visit(k + 1);
      loads[r]! -= w;
    }
  };
  visit(0);
  return found;
}

function finish(work: readonly number[], owner: readonly number[], ranks: number): Schedule {
  const assignment = Array.from({ length: ranks }, () => [] as number[]);
  owner.forEach((r, i) => assignment[r]!.push(i));
  const loads = loadsOf(work, owner, ranks);
  const total = loads.reduce((a, b) => a + b, 0);
  const maxLoad = Math.max(...loads);
  return {
    ranks: assignment,
    loads,
    maxLoad,
    imbalance: total > 0 ? maxLoad / (total / ranks) - 1 : 0,
    idleRanks: assignment.flatMap((tiles, r) => (tiles.length === 0 ? [r] : [])),
    lowerBound: maxLoadLowerBound(work, ranks),
  };
}

/**
 * Lower bound on the heaviest load over all assignments: the largest tile, the mean, and the
 * pigeonhole bound — among the k·R + 1 largest tiles some rank holds k + 1, so the heaviest
 * rank carries at least the k + 1 smallest of them.
 */
export function maxLoadLowerBound(work: readonly number[], ranks: number): number {
  const sorted = [...work].sort((a, b) => b - a);
  // prefix[i]: the i largest tiles' work, so each window sum is one subtraction (linear in the tiles, not quadratic).
  const prefix = new Array<number>(sorted.length + 1).fill(0);
  sorted.forEach((w, i) => (prefix[i + 1] = prefix[i]! + w));
  const total = prefix[sorted.length]!;
  let bound = Math.max(sorted[0] ?? 0, total / ranks);
  for (let k = 1; k * ranks < sorted.length; k++) bound = Math.max(bound, prefix[k * ranks + 1]! - prefix[k * ranks - k]!);
  return bound;
}

function loadsOf(work: readonly number[], owner: readonly number[], ranks: number): number[] {
  const loads = new Array<number>(ranks).fill(0);
  owner.forEach((r, i) => (loads[r]! += work[i]!));
  return loads;
}

/** Raster-order runs with the smallest possible heaviest run (binary search on the bound). */
function contiguousRuns(work: readonly number[], ranks: number): number[] {
  const runsNeeded = (bound: number): number => {
    let runs = 1;
    let load = 0;
    for (const w of work) {
      if (load + w > bound) {
        runs++;
        load = 0;
      }
      load += w;
    }
    return runs;
  };
  let lo = work.reduce((m, w) => Math.max(m, w), 0);
  let hi = work.reduce((a, b) => a + b, 0);
  if (work.every(Number.isInteger)) {
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (runsNeeded(mid) <= ranks) hi = mid;
      else lo = mid + 1;
    }
  } else {
    for (let i = 0; i < 100 && hi - lo > 1e-12 * hi; i++) {
      const mid = (lo + hi) / 2;
      if (runsNeeded(mid) <= ranks) hi = mid;
      else lo = mid;
    }
  }
  const owner: number[] = [];
  let rank = 0;
  let load = 0;
  for (const w of work) {
    if (load + w > hi && rank < ranks - 1) {
      rank++;
      load = 0;
    }
    load += w;
    owner.push(rank);
  }
  return owner;
}

/** Largest tile first onto the least-loaded rank (ties: lower index). */
function largestFirst(work: readonly number[], ranks: number): number[] {
  const order = work.map((_, i) => i).sort((a, b) => work[b]! - work[a]! || a - b);
  const loads = new Array<number>(ranks).fill(0);
  const owner = new Array<number>(work.length).fill(0);
  for (const t of order) {
    let k = 0;
    for (let r = 1; r < ranks; r++) if (loads[r]! < loads[k]!) k = r;
    owner[t] = k;
    loads[k]! += work[t]!;
  }
  return owner;
}

/**
 * Repeatedly lowers the heaviest rank: with each other rank in turn, lightest first, it tries
 * their best exhaustive re-split when the two hold few tiles, else the best single move or swap
 * between them, and applies the first change that leaves both below the old maximum. Each step
 * lowers the sum of squared loads, so the search ends.
 */
function localSearch(work: readonly number[], owner: number[], ranks: number): void {
  const loads = loadsOf(work, owner, ranks);
  const tilesOf: number[][] = Array.from({ length: ranks }, () => []);
  owner.forEach((r, t) => tilesOf[r]!.push(t));
  const byLoad = Array.from({ length: ranks }, (_, r) => r);
  for (;;) {
    let heavy = 0;
    for (let r = 1; r < ranks; r++) if (loads[r]! > loads[heavy]!) heavy = r;
    const top = loads[heavy]!;
    byLoad.sort((a, b) => loads[a]! - loads[b]! || a - b);
    let change: { tiles: number[]; to: number[] } | null = null;
    for (const k of byLoad) {
      if (k === heavy) continue;
      change = improvePair(work, tilesOf[heavy]!, tilesOf[k]!, heavy, k, top, loads[k]!);
      if (change) break;
    }
    if (!change) return;
    change.tiles.forEach((t, i) => {
      const from = owner[t]!;
      const to = change!.to[i]!;
      if (from === to) return;
      loads[from]! -= work[t]!;
      loads[to]! += work[t]!;
      owner[t] = to;
      tilesOf[from]!.splice(tilesOf[from]!.indexOf(t), 1);
      tilesOf[to]!.push(t);
    });
    for (const list of tilesOf) list.sort((a, b) => a - b);
  }
}

/** The best re-split (small pairs) or move/swap between `heavy` and `k` whose larger load ends below `top`; null if none. */
function improvePair(
  work: readonly number[],
  heavyTiles: readonly number[],
  otherTiles: readonly number[],
  heavy: number,
  k: number,
  top: number,
  otherLoad: number,
): { tiles: number[]; to: number[] } | null {
  const pair = [...heavyTiles, ...otherTiles];
  if (pair.length <= EXHAUSTIVE_PAIR_TILES) {
    const split = bestSplit(work, pair);
    return split.peak < top ? { tiles: pair, to: split.inFirst.map((first) => (first ? heavy : k)) } : null;
  }
  let bestPeak = top;
  let best: { tiles: number[]; to: number[] } | null = null;
  for (const t of heavyTiles) {
    const wt = work[t]!;
    const movePeak = Math.max(top - wt, otherLoad + wt);
    if (movePeak < bestPeak) {
      bestPeak = movePeak;
      best = { tiles: [t], to: [k] };
    }
    for (const u of otherTiles) {
      const delta = wt - work[u]!;
      if (delta <= 0) continue;
      const swapPeak = Math.max(top - delta, otherLoad + delta);
      if (swapPeak < bestPeak) {
        bestPeak = swapPeak;
        best = { tiles: [t, u], to: [k, heavy] };
      }
    }
  }
  return best;
}

/** The split of `tiles` into two sets with the smallest larger half (first found on ties). */
function bestSplit(work: readonly number[], tiles: readonly number[]): { peak: number; inFirst: boolean[] } {
  const n = tiles.length;
  const total = tiles.reduce((s, t) => s + work[t]!, 0);
  let bestPeak = Infinity;
  let bestMask = 0;
  // The first tile stays in the first set: the mirror image of a split is the same split.
  for (let mask = 1; mask < 1 << n; mask += 2) {
    let first = 0;
    for (let i = 0; i < n; i++) if (mask & (1 << i)) first += work[tiles[i]!]!;
    const peak = Math.max(first, total - first);
    if (peak < bestPeak) {
      bestPeak = peak;
      bestMask = mask;
    }
  }
  return { peak: bestPeak, inFirst: tiles.map((_, i) => (bestMask & (1 << i)) !== 0) };
}
