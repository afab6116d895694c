// The latent distribution an encoder's moments describe (diffusers' DiagonalGaussianDistribution):
// the moments (B, 2C, …) split on axis 1 into mean and log-variance, the log-variance clamped to
// [−30, 20]; `latentMean` is `latent_dist.mode()`, `sampleLatents` is `latent_dist.sample()`
// drawn with OUR generator — a seed gives the same latents on every machine, but never torch's
// (torch draws from its own Philox / Mersenne-Twister stream, which this does not reproduce).
// Whether a family has a distribution at all is its declaration (`latentDistribution`: TAE and
// DC-AE return latents directly, so sampling is refused for them), never its name.

import { DistVaeError, reason, refuse } from '../errors.js';
import type { FamilySpec } from '../families/types.js';
import type { Tensor } from '../tensor.js';

/** diffusers' clamp of the log-variance. */
const LOGVAR_MIN = -30;
const LOGVAR_MAX = 20;

/** Refuses sampling (`option`, as the caller spells it) for a family whose encoder has no distribution. */
export function refuseSamplingWithout(family: Pick<FamilySpec, 'name' | 'latentDistribution'>, option = 'sample'): void {
  if ((family.latentDistribution ?? 'diagonal-gaussian') === 'diagonal-gaussian') return;
  refuse(
    'UNSUPPORTED',
    reason(
      'NO_LATENT_DISTRIBUTION',
      option,
      family.name,
      'a family whose encoder returns a latent distribution (the diffusers KL classes)',
      `${option}: the ${family.name} encoder returns its latents directly, with no distribution to sample from; drop ${option}`,
    ),
  );
}

/** Mean and log-variance halves of (B, 2C, …) moments, checked. */
function halves(moments: Tensor): { b: number; c: number; plane: number } {
  const [b, c2] = moments.dims as [number, number];
  if (moments.dims.length < 3 || c2 % 2 !== 0) {
    throw new DistVaeError(
      'TENSOR_INVALID',
      `latent moments [${moments.dims.join(', ')}] must be (B, 2C, ...): mean and log-variance stacked on axis 1`,
    );
  }
  return { b, c: c2 / 2, plane: moments.data.length / (b * c2) };
}

/** `latent_dist.mode()`: the mean half of (B, 2C, …) moments, (B, C, …). */
export function latentMean(moments: Tensor): Tensor {
  const { b, c, plane } = halves(moments);
  const out = new Float32Array(b * c * plane);
  for (let bi = 0; bi < b; bi++) out.set(moments.data.subarray(bi * 2 * c * plane, (bi * 2 + 1) * c * plane), bi * c * plane);
  return { dims: [b, c, ...moments.dims.slice(2)], data: out };
}

/** diffusers' `std` of one log-variance: exp(clamp(logvar, −30, 20) / 2). */
function stdOfLogvar(logvar: number): number {
  return Math.exp(0.5 * Math.min(Math.max(logvar, LOGVAR_MIN), LOGVAR_MAX));
}

/** `latent_dist.std`: exp(clamp(logvar, −30, 20) / 2) of the log-variance half of (B, 2C, …) moments, (B, C, …). */
export function latentStd(moments: Tensor): Tensor {
  const { b, c, plane } = halves(moments);
  const out = new Float32Array(b * c * plane);
  for (let bi = 0; bi < b; bi++) {
    const logvar = moments.data.subarray((bi * 2 + 1) * c * plane, (bi * 2 + 2) * c * plane);
    for (let i = 0; i < c * plane; i++) out[bi * c * plane + i] = stdOfLogvar(logvar[i]!);
  }
  return { dims: [b, c, ...moments.dims.slice(2)], data: out };
}

/**
 * Standard normal values from `seed`: a SplitMix32-style stream of 32-bit integers, paired by
 * Box–Muller (float64, then rounded to float32). Deterministic per seed on every machine; not torch's.
 */
export function normalStream(seed: number, count: number): Float32Array {
  if (!Number.isSafeInteger(seed)) refuse('INVALID_ARGUMENT', reason('SEED_INVALID', 'seed', seed, 'an integer'));
  let state = (seed >>> 0) ^ (Math.floor(seed / 2 ** 32) >>> 0);
  const next = (): number => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  const out = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    // u1 in (0, 1]: log never sees 0.
    const u1 = (next() + 1) / 2 ** 32;
    const u2 = next() / 2 ** 32;
    const r = Math.sqrt(-2 * Math.log(u1));
    out[i] = r * Math.cos(2 * Math.PI * u2);
    if (i + 1 < count) out[i + 1] = r * Math.sin(2 * Math.PI * u2);
  }
  return out;
}

/**
 * `latent_dist.sample()`: mean + exp(logvar / 2) · ε with ε from `normalStream(seed)` (in the
 * output's C order), logvar clamped to [−30, 20] as diffusers does. (B, C, …) from (B, 2C, …).
 */
export function sampleLatents(moments: Tensor, seed: number): Tensor {
  const { b, c, plane } = halves(moments);
  const eps = normalStream(seed, b * c * plane);
  const out = new Float32Array(eps.length);
  for (let bi = 0; bi < b; bi++) {
    const base = bi * 2 * c * plane;
    for (let i = 0; i < c * plane; i++) {
      const o = bi * c * plane + i;
      out[o] = moments.data[base + i]! + Math.fround(stdOfLogvar(moments.data[base + c * plane + i]!)) * eps[o]!;
    }
  }
  return { dims: [b, c, ...moments.dims.slice(2)], data: out };
}
