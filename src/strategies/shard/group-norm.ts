// GroupNorm over bands (docs/design.md §6): every stage that outputs a GroupNorm's input also
// outputs its band's statistics per (sample, group) — the mean and M2, the sum of squared
// deviations about that mean, of the band's own rows (never halo rows, which another band
// counts), computed in-graph (band-models.ts). One all-gather hands every rank every band's
// (count, mean, M2); each rank merges them in rank order by Chan's parallel formula, which keeps
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
export function packStatistics(count: number, mean: ArrayLike<number>, m2: ArrayLike<number>): Float64Array {
  const slots = mean.length;
  const packed = new Float64Array(3 * slots);
  for (let s = 0; s < slots; s++) {
    packed[s] = count;
    packed[slots + s] = mean[s]!;
    packed[2 * slots + s] = m2[s]!;
  }
  return packed;
}

/** Every band's packed statistics merged in the order given (rank order), by Chan's formula. */
export function mergeStatistics(parts: readonly Float64Array[]): GroupStatistics {
  const slots = parts[0]!.length / 3;
  const count = new Float64Array(slots);
  const mean = new Float64Array(slots);
  const m2 = new Float64Array(slots);
  for (const p of parts) {
    if (p.length !== 3 * slots) throw new RangeError(`band statistics of ${p.length} values; every band must send ${3 * slots}`);
    for (let s = 0; s < slots; s++) {
      const nB = p[s]!;
      if (nB === 0) continue;
      const nA = count[s]!;
      const n = nA + nB;
      const delta = p[slots + s]! - mean[s]!;
      mean[s] = mean[s]! + (delta * nB) / n;
      m2[s] = m2[s]! + p[2 * slots + s]! + (delta * delta * nA * nB) / n;
      count[s] = n;
    }
  }
  return { count, mean, m2 };
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
