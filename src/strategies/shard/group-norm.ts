// GroupNorm over bands (docs/design.md §6): statistics of every (sample, group) over the whole image
// from two all-reduces, each summing the bands' float64 partials in rank order — first group
// sums and element counts (→ the global mean), then squared deviations about that global mean
// (→ the biased variance PyTorch uses). One pass of E[x²] − E[x]² cancels catastrophically when
// the mean is large against the spread, and pooling per-band variances drops the spread of the
// band means around the global mean; the two-pass form has neither problem. Each rank sums its
// own band rows only (never halo rows, which another band counts), then normalises its band.

import type { Tensor } from '../../tensor.js';

/** The reduction the two passes need; a rank group's communicator provides it. */
export interface SumAllReduce {
  allReduce(data: Float64Array, op?: 'sum'): Promise<Float64Array>;
}

export interface GroupNormParams {
  groups: number;
  epsilon: number;
  /** Per-channel affine, [C]. */
  scale: Float32Array;
  bias: Float32Array;
}

/**
 * Normalises the band `x` (B, C, …) with statistics over all bands; writes into `out` (which
 * may be `x.data` itself, when x is not read again).
 */
export async function groupNormBand(comm: SumAllReduce, x: Tensor, p: GroupNormParams, out: Float32Array): Promise<Tensor> {
  // Locals for the hot loops: V8 then keeps the arrays in registers instead of reloading x.data.
  const data = x.data;
  const [batch, channels] = x.dims as [number, number];
  const perChannel = data.length / (batch * channels);
  const perGroup = (channels / p.groups) * perChannel;
  const slots = batch * p.groups;
  const first = new Float64Array(2 * slots);
  for (let s = 0; s < slots; s++) {
    let sum = 0;
    for (let i = s * perGroup, end = i + perGroup; i < end; i++) sum += data[i]!;
    first[s] = sum;
    first[slots + s] = perGroup;
  }
  const totals = await comm.allReduce(first, 'sum');
  const mean = new Float64Array(slots);
  for (let s = 0; s < slots; s++) mean[s] = totals[s]! / totals[slots + s]!;
  const second = new Float64Array(slots);
  for (let s = 0; s < slots; s++) {
    let squares = 0;
    const m = mean[s]!;
    for (let i = s * perGroup, end = i + perGroup; i < end; i++) {
      const d = data[i]! - m;
      squares += d * d;
    }
    second[s] = squares;
  }
  const deviations = await comm.allReduce(second, 'sum');
  const perGroupChannels = channels / p.groups;
  for (let s = 0; s < slots; s++) {
    const m = mean[s]!;
    const inverse = 1 / Math.sqrt(deviations[s]! / totals[slots + s]! + p.epsilon);
    const b = Math.floor(s / p.groups);
    const g = s % p.groups;
    for (let c = g * perGroupChannels; c < (g + 1) * perGroupChannels; c++) {
      const gamma = p.scale[c]! * inverse;
      const beta = p.bias[c]!;
      for (let i = (b * channels + c) * perChannel, end = i + perChannel; i < end; i++) out[i] = (data[i]! - m) * gamma + beta;
    }
  }
  return { dims: x.dims, data: out };
}
