// Seeded synthetic weights for benchmarks and tests, identical on every machine. Each
// parameter draws from its own stream, seeded by (seed, FNV-1a hash of its name), so a
// weight does not change when other parameters are added or reordered. Stream: xoshiro128**
// seeded through splitmix32; normals by Box–Muller (V8's Math.log/cos/sin are fdlibm ports,
// the same on every platform; values are then rounded to float32).
//
// Scaling keeps activations O(1) through a deep decoder: conv and linear weights are
// N(0, (gain / sqrt(fanIn))^2), which preserves the second moment of the input (LeCun); pass
// gain √2 for a layer followed by ReLU/SiLU (He) and gain < 1 for the last layer of a residual
// branch so the sum does not grow with depth. Norm weights are 1 + N(0, 0.02²), norm and conv
// biases N(0, 0.02²): close to identity, yet never exactly 1/0, so a swapped weight shows up.

import { reason, type Reason, refuse } from '../errors.js';
import { elementCount, type Tensor } from '../tensor.js';

/** How a parameter is initialised: its role in the layer that owns it. */
export type ParamInit = 'conv' | 'linear' | 'norm-weight' | 'norm-bias' | 'bias';

/** One parameter a graph builder expects: checkpoint key, shape, and initialisation. */
export interface ParamSpec {
  /** The checkpoint key, e.g. `decoder.conv_in.weight`. */
  readonly name: string;
  readonly dims: readonly number[];
  readonly init: ParamInit;
  /** Scales conv/linear weights' standard deviation (default 1); ignored for other inits. */
  readonly gain?: number;
}

/** Standard deviation of biases and of norm weights around 1. */
const SMALL_STD = 0.02;

/** Seeded weights for every parameter in `specs`: the same (specs, seed) give the same tensors anywhere (tests, benchmarks, demos). */
export function syntheticWeights(specs: readonly ParamSpec[], seed: number): Map<string, Tensor> {
  validateSpecs(specs, seed);
  return new Map(specs.map((spec) => [spec.name, syntheticTensor(spec, seed, new Float32Array(elementCount(spec.dims)))]));
}

/**
 * The same weights, each generated into one reused scratch buffer and handed to `store`, which
 * returns what the map keeps (e.g. the tensor written to a file; `t.data` is valid only during
 * the call): a whole decoder's weights are never held in JS, and no buffer per tensor is left
 * for the allocator to keep.
 */
export function storeSyntheticWeights(specs: readonly ParamSpec[], seed: number, store: (t: Tensor) => Tensor): Map<string, Tensor> {
  validateSpecs(specs, seed);
  const scratch = new Float32Array(Math.max(0, ...specs.map((spec) => elementCount(spec.dims))));
  return new Map(specs.map((spec) => [spec.name, store(syntheticTensor(spec, seed, scratch.subarray(0, elementCount(spec.dims))))]));
}

function syntheticTensor(spec: ParamSpec, seed: number, data: Float32Array): Tensor {
  const normal = normalStream(seed, spec.name);
  const fanIn = elementCount(spec.dims.slice(1));
  const [mean, std] =
    spec.init === 'conv' || spec.init === 'linear'
      ? [0, (spec.gain ?? 1) / Math.sqrt(fanIn)]
      : [spec.init === 'norm-weight' ? 1 : 0, SMALL_STD];
  for (let i = 0; i < data.length; i++) data[i] = mean + std * normal();
  return { dims: [...spec.dims], data };
}

function validateSpecs(specs: readonly ParamSpec[], seed: number): void {
  const reasons: Reason[] = [];
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    reasons.push(reason('INVALID_ARGUMENT', 'seed', seed, 'an integer in [0, 2^32 - 1]'));
  const seen = new Set<string>();
  for (const [i, spec] of specs.entries()) {
    const field = `specs[${i}] (${spec.name})`;
    if (seen.has(spec.name)) reasons.push(reason('INVALID_ARGUMENT', `${field}.name`, spec.name, 'a name used once'));
    seen.add(spec.name);
    if (!spec.dims.every((d) => Number.isInteger(d) && d > 0))
      reasons.push(reason('INVALID_ARGUMENT', `${field}.dims`, spec.dims, 'positive integers'));
    const rank = spec.dims.length;
    const rankOk = spec.init === 'conv' ? rank >= 3 : spec.init === 'linear' ? rank === 2 : true;
    if (!rankOk)
      reasons.push(
        reason(
          'INVALID_ARGUMENT',
          `${field}.dims`,
          spec.dims,
          `a shape of the right rank for a ${spec.init} parameter (conv >= 3, linear 2)`,
        ),
      );
    if (spec.gain !== undefined && !(spec.gain > 0 && Number.isFinite(spec.gain)))
      reasons.push(reason('INVALID_ARGUMENT', `${field}.gain`, spec.gain, 'a positive finite number'));
  }
  if (reasons.length) refuse('INVALID_ARGUMENT', reasons, { prefix: `invalid synthetic weight request` });
}

/** A standard-normal generator for one parameter. */
export function normalStream(seed: number, name: string): () => number {
  const next = xoshiro128ss(seed ^ fnv1a(name));
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const z = spare;
      spare = undefined;
      return z;
    }
    // Uniforms in (0, 1): never 0, so the logarithm is finite.
    const u1 = ((next() >>> 0) + 0.5) / 4294967296;
    const u2 = ((next() >>> 0) + 0.5) / 4294967296;
    const radius = Math.sqrt(-2 * Math.log(u1));
    spare = radius * Math.sin(2 * Math.PI * u2);
    return radius * Math.cos(2 * Math.PI * u2);
  };
}

/** FNV-1a over the UTF-16 code units of `text`. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** xoshiro128** (Blackman & Vigna), its 128-bit state filled by splitmix32 from `seed`. */
function xoshiro128ss(seed: number): () => number {
  let x = seed >>> 0;
  const splitmix32 = (): number => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let s0 = splitmix32();
  let s1 = splitmix32();
  let s2 = splitmix32();
  let s3 = splitmix32();
  const rotl = (v: number, k: number): number => (v << k) | (v >>> (32 - k));
  return () => {
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
}

/** Bytes of float32 weights the parameters declare. */
export function weightBytes(specs: readonly ParamSpec[]): number {
  let total = 0;
  for (const s of specs) {
    let n = 4;
    for (const d of s.dims) n *= d;
    total += n;
  }
  return total;
}
