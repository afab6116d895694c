// Float64 reference implementations of the operators decoder graphs use, written as plain
// loops straight from the definitions (PyTorch semantics, NCHW / NC…): tests compare
// onnxruntime's float32 output against these as an independent path. They favour clarity over
// speed; keep test tensors small. Every function takes any numeric array and returns float64.

export interface RefTensor {
  readonly dims: readonly number[];
  readonly data: Float64Array;
}

/** Anything with dims and numeric data: our float32 Tensor or a RefTensor. */
export interface NumericTensor {
  readonly dims: readonly number[];
  readonly data: ArrayLike<number>;
}

/** Elements of a tensor of these dims. */
export function size(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

/** Row-major element strides of a tensor of these dims. */
export function strides(dims: readonly number[]): number[] {
  const s = new Array<number>(dims.length).fill(1);
  for (let i = dims.length - 2; i >= 0; i--) s[i] = s[i + 1]! * dims[i + 1]!;
  return s;
}

/** Calls fn with every multi-index of `dims` in row-major order. */
export function forEachIndex(dims: readonly number[], fn: (index: number[], flat: number) => void): void {
  const n = size(dims);
  const index = new Array<number>(dims.length).fill(0);
  for (let flat = 0; flat < n; flat++) {
    fn(index, flat);
    for (let d = dims.length - 1; d >= 0; d--) {
      if (++index[d]! < dims[d]!) break;
      index[d] = 0;
    }
  }
}

export function toRef(t: NumericTensor): RefTensor {
  return { dims: [...t.dims], data: Float64Array.from(t.data) };
}

/** Element-wise a + b of two tensors of one shape. */
export function add(a: RefTensor, b: RefTensor): RefTensor {
  return { dims: a.dims, data: a.data.map((v, i) => v + b.data[i]!) };
}

/** A reference decoder's weight lookup: the tensor named `key`, or an error naming the key it lacks. */
export function weightLookup(weights: ReadonlyMap<string, NumericTensor>): (key: string) => NumericTensor {
  return (key) => {
    const t = weights.get(key);
    if (!t) throw new Error(`reference decoder: no weight ${key}`);
    return t;
  };
}

export function map(x: NumericTensor, fn: (v: number) => number): RefTensor {
  return { dims: [...x.dims], data: Float64Array.from(x.data, fn) };
}

export const relu = (x: NumericTensor) => map(x, (v) => Math.max(v, 0));
export const sigmoid = (x: NumericTensor) => map(x, (v) => 1 / (1 + Math.exp(-v)));
export const silu = (x: NumericTensor) => map(x, (v) => v / (1 + Math.exp(-v)));
export const tanh = (x: NumericTensor) => map(x, Math.tanh);

export interface ConvParams {
  /** Per spatial axis: [begin…, end…] as in ONNX, or one number for every side. */
  pads?: number | readonly number[];
  strides?: readonly number[];
  dilations?: readonly number[];
  group?: number;
}

/**
 * N-d convolution (cross-correlation, as PyTorch's ConvNd): x [N, Cin, *S], w [Cout, Cin/g, *K],
 * bias [Cout]. out[n, co, o] = b[co] + Σ_ci Σ_k x[n, g·Cin/g + ci, o·stride − pad_begin + k·dilation] · w[co, ci, k].
 */
export function conv(x: NumericTensor, w: NumericTensor, bias: NumericTensor | undefined, params: ConvParams = {}): RefTensor {
  const [n, cin, ...inSpatial] = x.dims as number[];
  const [cout, cinPerGroup, ...kernel] = w.dims as number[];
  const rank = kernel.length;
  const group = params.group ?? 1;
  const st = params.strides ?? new Array<number>(rank).fill(1);
  const dil = params.dilations ?? new Array<number>(rank).fill(1);
  const pads =
    typeof params.pads === 'number' || params.pads === undefined ? new Array<number>(2 * rank).fill(params.pads ?? 0) : params.pads;
  if (cin! !== cinPerGroup! * group || cout! % group !== 0)
    throw new Error(`conv: channels ${cin} / weight ${w.dims} / group ${group} mismatch`);
  const outSpatial = inSpatial.map((s, i) => Math.floor((s + pads[i]! + pads[i + rank]! - dil[i]! * (kernel[i]! - 1) - 1) / st[i]!) + 1);
  const outDims = [n!, cout!, ...outSpatial];
  if (rank === 2) return conv2dLoops(x, w, bias, outDims, pads, st, dil, group);
  if (rank === 3 && group === 1 && st.every((v) => v === 1) && dil.every((v) => v === 1)) return conv3dLoops(x, w, bias, outDims, pads);
  const out = new Float64Array(size(outDims));
  const xs = strides(x.dims);
  const ws = strides(w.dims);
  const coutPerGroup = cout! / group;
  forEachIndex(outDims, (o, flat) => {
    const [b, co] = o as [number, number];
    const g = Math.floor(co / coutPerGroup);
    let acc = bias ? bias.data[co]! : 0;
    for (let ci = 0; ci < cinPerGroup!; ci++) {
      forEachIndex(kernel, (k) => {
        let xOffset = b * xs[0]! + (g * cinPerGroup! + ci) * xs[1]!;
        for (let d = 0; d < rank; d++) {
          const pos = o[d + 2]! * st[d]! - pads[d]! + k[d]! * dil[d]!;
          if (pos < 0 || pos >= inSpatial[d]!) return;
          xOffset += pos * xs[d + 2]!;
        }
        let wOffset = co * ws[0]! + ci * ws[1]!;
        for (let d = 0; d < rank; d++) wOffset += k[d]! * ws[d + 2]!;
        acc += x.data[xOffset]! * w.data[wOffset]!;
      });
    }
    out[flat] = acc;
  });
  return { dims: outDims, data: out };
}

/**
 * The 2-D case of `conv` as plain loops (the general path runs a closure per tap, ~100× slower):
 * the same sum, accumulated per output row over (ci, ky, kx) with the row's columns innermost.
 */
function conv2dLoops(
  x: NumericTensor,
  w: NumericTensor,
  bias: NumericTensor | undefined,
  outDims: number[],
  pads: readonly number[],
  st: readonly number[],
  dil: readonly number[],
  group: number,
): RefTensor {
  const [n, cout, oh, ow] = outDims as [number, number, number, number];
  const [, cin, ih, iw] = x.dims as [number, number, number, number];
  const [, cinPerGroup, kh, kw] = w.dims as [number, number, number, number];
  const coutPerGroup = cout / group;
  const out = new Float64Array(n * cout * oh * ow);
  const row = new Float64Array(ow);
  for (let b = 0; b < n; b++) {
    for (let co = 0; co < cout; co++) {
      const g = Math.floor(co / coutPerGroup);
      for (let oy = 0; oy < oh; oy++) {
        row.fill(bias ? bias.data[co]! : 0);
        for (let ci = 0; ci < cinPerGroup; ci++) {
          const plane = (b * cin + g * cinPerGroup + ci) * ih * iw;
          for (let ky = 0; ky < kh; ky++) {
            const iy = oy * st[0]! - pads[0]! + ky * dil[0]!;
            if (iy < 0 || iy >= ih) continue;
            for (let kx = 0; kx < kw; kx++) {
              const weight = w.data[((co * cinPerGroup + ci) * kh + ky) * kw + kx]!;
              const offset = kx * dil[1]! - pads[1]!;
              for (let ox = 0; ox < ow; ox++) {
                const ix = ox * st[1]! + offset;
                if (ix >= 0 && ix < iw) row[ox]! += x.data[plane + iy * iw + ix]! * weight;
              }
            }
          }
        }
        out.set(row, ((b * cout + co) * oh + oy) * ow);
      }
    }
  }
  return { dims: outDims, data: out };
}

/**
 * The 3-D case of `conv` (stride 1, no dilation, one group) as plain loops, for video decoders:
 * the same sum, accumulated per output row over (ci, kt, ky, kx) with the row's columns innermost.
 */
function conv3dLoops(
  x: NumericTensor,
  w: NumericTensor,
  bias: NumericTensor | undefined,
  outDims: number[],
  pads: readonly number[],
): RefTensor {
  const [n, cout, ot, oh, ow] = outDims as [number, number, number, number, number];
  const [, cin, it, ih, iw] = x.dims as [number, number, number, number, number];
  const [, , kt, kh, kw] = w.dims as [number, number, number, number, number];
  const out = new Float64Array(n * cout * ot * oh * ow);
  const row = new Float64Array(ow);
  for (let b = 0; b < n; b++) {
    for (let co = 0; co < cout; co++) {
      for (let oz = 0; oz < ot; oz++) {
        for (let oy = 0; oy < oh; oy++) {
          row.fill(bias ? bias.data[co]! : 0);
          for (let ci = 0; ci < cin; ci++) {
            const volume = (b * cin + ci) * it * ih * iw;
            for (let kz = 0; kz < kt; kz++) {
              const iz = oz - pads[0]! + kz;
              if (iz < 0 || iz >= it) continue;
              for (let ky = 0; ky < kh; ky++) {
                const iy = oy - pads[1]! + ky;
                if (iy < 0 || iy >= ih) continue;
                const line = volume + (iz * ih + iy) * iw;
                for (let kx = 0; kx < kw; kx++) {
                  const weight = w.data[(((co * cin + ci) * kt + kz) * kh + ky) * kw + kx]!;
                  const offset = kx - pads[2]!;
                  const from = Math.max(0, -offset);
                  const to = Math.min(ow, iw - offset);
                  for (let ox = from; ox < to; ox++) row[ox]! += x.data[line + ox + offset]! * weight;
                }
              }
            }
          }
          out.set(row, (((b * cout + co) * ot + oz) * oh + oy) * ow);
        }
      }
    }
  }
  return { dims: outDims, data: out };
}

/**
 * GroupNorm as PyTorch: x [N, C, *S]; statistics per (n, group) over C/G channels and all
 * positions, biased variance, two-pass; then per-channel gamma and beta.
 */
export function groupNorm(x: NumericTensor, groups: number, gamma: NumericTensor, beta: NumericTensor, epsilon: number): RefTensor {
  const [n, c] = x.dims as [number, number];
  const inner = size(x.dims.slice(2));
  const perGroup = (c / groups) * inner;
  const out = new Float64Array(size(x.dims));
  for (let b = 0; b < n; b++) {
    for (let g = 0; g < groups; g++) {
      const start = (b * c + g * (c / groups)) * inner;
      let mean = 0;
      for (let i = 0; i < perGroup; i++) mean += x.data[start + i]!;
      mean /= perGroup;
      let variance = 0;
      for (let i = 0; i < perGroup; i++) variance += (x.data[start + i]! - mean) ** 2;
      variance /= perGroup;
      const inv = 1 / Math.sqrt(variance + epsilon);
      for (let i = 0; i < perGroup; i++) {
        const channel = g * (c / groups) + Math.floor(i / inner);
        out[start + i] = (x.data[start + i]! - mean) * inv * gamma.data[channel]! + beta.data[channel]!;
      }
    }
  }
  return { dims: [...x.dims], data: out };
}

/** LayerNorm over the last axis with per-feature gamma and (optional) beta. */
export function layerNorm(x: NumericTensor, gamma: NumericTensor, beta: NumericTensor | undefined, epsilon: number): RefTensor {
  const d = x.dims[x.dims.length - 1]!;
  const out = new Float64Array(size(x.dims));
  for (let row = 0; row < out.length / d; row++) {
    let mean = 0;
    for (let i = 0; i < d; i++) mean += x.data[row * d + i]!;
    mean /= d;
    let variance = 0;
    for (let i = 0; i < d; i++) variance += (x.data[row * d + i]! - mean) ** 2;
    variance /= d;
    for (let i = 0; i < d; i++)
      out[row * d + i] = ((x.data[row * d + i]! - mean) / Math.sqrt(variance + epsilon)) * gamma.data[i]! + (beta ? beta.data[i]! : 0);
  }
  return { dims: [...x.dims], data: out };
}

/** PyTorch `interpolate(mode='nearest', scale_factor=f)`: out[…, o] = x[…, floor(o / f)] per spatial axis. */
export function upsampleNearest(x: NumericTensor, factors: readonly number[]): RefTensor {
  const spatial = x.dims.length - 2;
  if (factors.length !== spatial) throw new Error(`upsampleNearest: ${factors.length} factors for ${spatial} spatial axes`);
  const outDims = x.dims.map((d, i) => (i < 2 ? d : d * factors[i - 2]!));
  const xs = strides(x.dims);
  const out = new Float64Array(size(outDims));
  forEachIndex(outDims, (o, flat) => {
    let offset = o[0]! * xs[0]! + o[1]! * xs[1]!;
    for (let d = 0; d < spatial; d++) offset += Math.floor(o[d + 2]! / factors[d]!) * xs[d + 2]!;
    out[flat] = x.data[offset]!;
  });
  return { dims: outDims, data: out };
}

/** Softmax along one axis (negative counts from the end), max-subtracted. */
export function softmax(x: NumericTensor, axis = -1): RefTensor {
  const a = axis < 0 ? x.dims.length + axis : axis;
  const xs = strides(x.dims);
  const len = x.dims[a]!;
  const out = new Float64Array(size(x.dims));
  const outer = x.dims.map((d, i) => (i === a ? 1 : d));
  forEachIndex(outer, (index) => {
    let base = 0;
    index.forEach((v, i) => (base += v * xs[i]!));
    let max = -Infinity;
    for (let i = 0; i < len; i++) max = Math.max(max, x.data[base + i * xs[a]!]!);
    let sum = 0;
    for (let i = 0; i < len; i++) sum += Math.exp(x.data[base + i * xs[a]!]! - max);
    for (let i = 0; i < len; i++) out[base + i * xs[a]!] = Math.exp(x.data[base + i * xs[a]!]! - max) / sum;
  });
  return { dims: [...x.dims], data: out };
}

/** nn.Linear on the last axis: y[..., o] = bias[o] + Σ_i x[..., i]·W[o, i], with W (out, in). */
export function linear(x: NumericTensor, weight: NumericTensor, bias: NumericTensor): RefTensor {
  const [out, inputs] = weight.dims as [number, number];
  const rows = x.data.length / inputs;
  const y = new Float64Array(rows * out);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < out; o++) {
      let acc = bias.data[o]!;
      for (let i = 0; i < inputs; i++) acc += x.data[r * inputs + i]! * weight.data[o * inputs + i]!;
      y[r * out + o] = acc;
    }
  }
  return { dims: [...x.dims.slice(0, -1), out], data: y };
}

/** Matrix product over the last two axes, the leading (batch) axes broadcast as numpy does. */
export function matmul(a: NumericTensor, b: NumericTensor): RefTensor {
  const [m, k] = a.dims.slice(-2) as [number, number];
  const [k2, n] = b.dims.slice(-2) as [number, number];
  const batchA = a.dims.slice(0, -2);
  const batchB = b.dims.slice(0, -2);
  const rank = Math.max(batchA.length, batchB.length);
  const batch = Array.from({ length: rank }, (_, i) => {
    const [da, db] = [batchA[i - (rank - batchA.length)] ?? 1, batchB[i - (rank - batchB.length)] ?? 1];
    if (da !== db && da !== 1 && db !== 1) throw new Error(`matmul: ${a.dims} x ${b.dims}`);
    return Math.max(da, db);
  });
  if (k !== k2) throw new Error(`matmul: ${a.dims} x ${b.dims}`);
  // A batch axis of size 1 is read again for every index of the other operand's.
  const offset = (dims: readonly number[], index: readonly number[]) =>
    dims.reduce((o, d, i) => o * d + (d === 1 ? 0 : index[i + rank - dims.length]!), 0);
  const out = new Float64Array(size(batch) * m * n);
  forEachIndex(batch, (index, p) => {
    const pa = offset(batchA, index) * m * k;
    const pb = offset(batchB, index) * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let acc = 0;
        for (let t = 0; t < k; t++) acc += a.data[pa + i * k + t]! * b.data[pb + t * n + j]!;
        out[p * m * n + i * n + j] = acc;
      }
    }
  });
  return { dims: [...batch, m, n], data: out };
}

/** Permutes axes: out.dims[i] = x.dims[perm[i]]. */
export function transpose(x: NumericTensor, perm: readonly number[]): RefTensor {
  const outDims = perm.map((p) => x.dims[p]!);
  const xs = strides(x.dims);
  const out = new Float64Array(size(outDims));
  forEachIndex(outDims, (o, flat) => {
    let offset = 0;
    o.forEach((v, i) => (offset += v * xs[perm[i]!]!));
    out[flat] = x.data[offset]!;
  });
  return { dims: outDims, data: out };
}

/**
 * Scaled dot-product attention, single head: q [B, L, D], k [B, S, D], v [B, S, Dv] →
 * softmax(q·kᵀ·scale) · v, scale defaulting to 1/√D (the diffusers VAE mid-block attention).
 */
export function attention(
  q: NumericTensor,
  k: NumericTensor,
  v: NumericTensor,
  scale = 1 / Math.sqrt(q.dims[q.dims.length - 1]!),
): RefTensor {
  const scores = map(matmul(q, transpose(k, [0, 2, 1])), (s) => s * scale);
  return matmul(softmax(scores, -1), v);
}

/**
 * Padding with ONNX-ordered pads [begin…, end…] (negative values crop): a number fills with
 * that constant; 'edge' repeats the border element (PyTorch 'replicate'); 'reflect' mirrors
 * without repeating the border (index −1 reads 1, index L reads L − 2).
 */
export function pad(x: NumericTensor, pads: readonly number[], value: number | 'edge' | 'reflect' = 0): RefTensor {
  const rank = x.dims.length;
  const outDims = x.dims.map((d, i) => d + pads[i]! + pads[i + rank]!);
  const xs = strides(x.dims);
  const out = new Float64Array(size(outDims));
  const source = (pos: number, length: number): number => {
    if (pos >= 0 && pos < length) return pos;
    if (value === 'edge') return pos < 0 ? 0 : length - 1;
    if (value === 'reflect') {
      if (length < 2) throw new Error(`pad: reflect needs an extent of at least 2, got ${length}`);
      return pos < 0 ? -pos : 2 * (length - 1) - pos;
    }
    return -1;
  };
  forEachIndex(outDims, (o, flat) => {
    let offset = 0;
    for (let d = 0; d < rank; d++) {
      const pos = source(o[d]! - pads[d]!, x.dims[d]!);
      if (pos < 0) {
        out[flat] = value as number;
        return;
      }
      offset += pos * xs[d]!;
    }
    out[flat] = x.data[offset]!;
  });
  return { dims: outDims, data: out };
}

/** Elements start, start+step, … (< end) along one axis; start/end already in range. */
export function slice(x: NumericTensor, axis: number, start: number, end: number, step = 1): RefTensor {
  const count = Math.max(0, Math.ceil((end - start) / step));
  const outDims = x.dims.map((d, i) => (i === axis ? count : d));
  const xs = strides(x.dims);
  const out = new Float64Array(size(outDims));
  forEachIndex(outDims, (o, flat) => {
    let offset = 0;
    o.forEach((v, i) => (offset += (i === axis ? start + v * step : v) * xs[i]!));
    out[flat] = x.data[offset]!;
  });
  return { dims: outDims, data: out };
}

/** Joins tensors along one axis; other axes must match. */
export function concat(xs: readonly NumericTensor[], axis: number): RefTensor {
  const outDims = xs[0]!.dims.map((d, i) => (i === axis ? xs.reduce((s, t) => s + t.dims[axis]!, 0) : d));
  const out = new Float64Array(size(outDims));
  const os = strides(outDims);
  let offsetAlongAxis = 0;
  for (const t of xs) {
    forEachIndex(t.dims, (index, flat) => {
      let target = 0;
      index.forEach((v, i) => (target += (i === axis ? v + offsetAlongAxis : v) * os[i]!));
      out[target] = t.data[flat]!;
    });
    offsetAlongAxis += t.dims[axis]!;
  }
  return { dims: outDims, data: out };
}
