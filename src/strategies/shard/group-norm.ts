// GroupNorm over bands (docs/design.md §6): every stage that outputs a GroupNorm's input also
// outputs, per row of the band's own rows (never halo rows, which another band counts), the
// mean and M2 — the sum of squared deviations about that mean — computed in-graph
// (band-models.ts); the rank merges them per (sample, group) in float64. One all-gather hands
// every rank every band's (count, mean, M2); each rank merges them in rank order by Chan's
// parallel formula (the same fold as within the band), which keeps
// the spread of the band means around the global mean (pooling the bands' M2 alone drops it) and
// never forms E[x²] − E[x]² (which cancels catastrophically when the mean is large against the
// spread), so it is as stable as the two-pass form. The merged mean and biased variance (what
// PyTorch uses) are folded with the per-channel affine into one scale and shift per (sample,
// channel), which the next stage applies in-graph.

/** The one collective the merge needs; a rank group's communicator provides it. */
export interface GatherAll {
  allGather(data: unknown): Promise<unknown[]>;
}

export interface GroupNormParams {
  groups: number;
  epsilon: number;
  /** Per-channel affine, [C]. */
  scale: Float32Array;
  bias: Float32Array;
}

/** Statistics of `slots` (sample, group) pairs: element counts, means and M2. */
export interface GroupStatistics {
  count: Float64Array;
  mean: Float64Array;
  m2: Float64Array;
}

/** One band's statistics as one message: counts, then means, then M2 (3 · slots float64). */
export function packStatistics(count: number | ArrayLike<number>, mean: ArrayLike<number>, m2: ArrayLike<number>): Float64Array {
  const slots = mean.length;
  const packed = new Float64Array(3 * slots);
  for (let s = 0; s < slots; s++) {
    packed[s] = typeof count === 'number' ? count : count[s]!;
    packed[slots + s] = mean[s]!;
    packed[2 * slots + s] = m2[s]!;
  }
  return packed;
}

/** Folds (nB, meanB, m2B) into slot `s` of `into` (Chan's formula). */
function merge(into: GroupStatistics, s: number, nB: number, meanB: number, m2B: number): void {
  if (nB === 0) return;
  const nA = into.count[s]!;
  const n = nA + nB;
  const delta = meanB - into.mean[s]!;
  into.mean[s] = into.mean[s]! + (delta * nB) / n;
  into.m2[s] = into.m2[s]! + m2B + (delta * delta * nA * nB) / n;
  into.count[s] = n;
}

function emptyStatistics(slots: number): GroupStatistics {
  return { count: new Float64Array(slots), mean: new Float64Array(slots), m2: new Float64Array(slots) };
}

/** Every band's packed statistics merged in the order given (rank order), by Chan's formula. */
export function mergeStatistics(parts: readonly Float64Array[]): GroupStatistics {
  const slots = parts[0]!.length / 3;
  const merged = emptyStatistics(slots);
  for (const p of parts) {
    if (p.length !== 3 * slots) throw new RangeError(`band statistics of ${p.length} values; every band must send ${3 * slots}`);
    for (let s = 0; s < slots; s++) merge(merged, s, p[s]!, p[slots + s]!, p[2 * slots + s]!);
  }
  return merged;
}

/**
 * One band's packed statistics per (sample, group) from its per-row ones: `mean` and `m2` hold,
 * for every (sample, channel, row…), the mean and M2 of `perEntry` elements (laid out
 * [B, C, …]); the rows of each group's channels are merged in order, in float64.
 */
export function bandStatistics(
  mean: Float32Array,
  m2: Float32Array,
  batch: number,
  channels: number,
  groups: number,
  perEntry: number,
): Float64Array {
  const slots = batch * groups;
  const merged = emptyStatistics(slots);
  const perChannel = mean.length / (batch * channels);
  const perGroup = channels / groups;
  for (let i = 0; i < mean.length; i++) {
    const c = Math.floor(i / perChannel);
    merge(merged, Math.floor(c / channels) * groups + Math.floor((c % channels) / perGroup), perEntry, mean[i]!, m2[i]!);
  }
  return packStatistics(merged.count, merged.mean, merged.m2);
}

/** The GroupNorm as a per-(sample, channel) scale and shift: y = x · scale + shift. */
export function groupNormAffine(stats: GroupStatistics, p: GroupNormParams, batch: number): { scale: Float32Array; shift: Float32Array } {
  const channels = p.scale.length;
  const perGroup = channels / p.groups;
  const scale = new Float32Array(batch * channels);
  const shift = new Float32Array(batch * channels);
  for (let b = 0; b < batch; b++) {
    for (let c = 0; c < channels; c++) {
      const s = b * p.groups + Math.floor(c / perGroup);
      const inverse = 1 / Math.sqrt(stats.m2[s]! / stats.count[s]! + p.epsilon);
      const a = p.scale[c]! * inverse;
      scale[b * channels + c] = a;
      shift[b * channels + c] = p.bias[c]! - stats.mean[s]! * a;
    }
  }
  return { scale, shift };
}

/** This band's statistics merged with every other band's, in one all-gather. */
export async function allGroupStatistics(comm: GatherAll, band: Float64Array): Promise<GroupStatistics> {
  return mergeStatistics((await comm.allGather(band)) as Float64Array[]);
}
