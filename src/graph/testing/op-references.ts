// Float64 reference implementations of every op in the op table (../ops.ts), keyed by op name and
// following the ONNX definitions (opset 21) for the attributes our graphs use, so a test can run
// a built graph node by node on an independent path (runReferenceModel) and compare it with
// onnxruntime. Written for clarity over speed (reference-ops.ts holds the loops); keep test
// tensors small. Not shipped.

import { floatAttribute, intAttribute, intsAttribute, stringAttribute, tensorAttribute } from '../attributes.js';
import { DataType, type ModelProto, type NodeProto } from '../onnx-proto.js';
import { normaliseAxis, type OpName } from '../ops.js';
import { tensorProtoValues } from '../tensor-proto.js';
import {
  concat,
  conv,
  forEachIndex,
  groupNorm,
  map,
  matmul,
  pad,
  size,
  slice,
  softmax,
  strides,
  transpose,
  type RefTensor,
} from './reference-ops.js';

/** One node's outputs from its inputs (undefined: an optional input left out). */
export type ReferenceOp = (inputs: readonly (RefTensor | undefined)[], node: NodeProto) => RefTensor[];

const tensor = (dims: readonly number[], data: ArrayLike<number>): RefTensor => ({ dims: [...dims], data: Float64Array.from(data) });
const elementsOf = (t: RefTensor | undefined): number[] => Array.from(t?.data ?? []);

function need(inputs: readonly (RefTensor | undefined)[], i: number, node: NodeProto): RefTensor {
  const t = inputs[i];
  if (!t) throw new Error(`reference ${node.op_type}: input ${i} is missing`);
  return t;
}

/** Numpy broadcasting of any number of operands through `fn`. */
function broadcast(operands: readonly RefTensor[], fn: (...v: number[]) => number): RefTensor {
  const rank = Math.max(...operands.map((t) => t.dims.length));
  const dims = Array.from({ length: rank }, (_, i) => Math.max(...operands.map((t) => t.dims[t.dims.length - rank + i] ?? 1)));
  const steps = operands.map((t) => {
    const s = strides(t.dims);
    return dims.map((_, i) => {
      const axis = t.dims.length - rank + i;
      return axis < 0 || t.dims[axis] === 1 ? 0 : s[axis]!;
    });
  });
  const out = new Float64Array(size(dims));
  forEachIndex(dims, (index, flat) => {
    const v = operands.map((t, k) => t.data[index.reduce((o, x, i) => o + x * steps[k]![i]!, 0)]!);
    out[flat] = fn(...v);
  });
  return { dims, data: out };
}

const binary =
  (fn: (a: number, b: number) => number): ReferenceOp =>
  (inputs, node) => [broadcast([need(inputs, 0, node), need(inputs, 1, node)], fn)];
const unary =
  (fn: (v: number) => number): ReferenceOp =>
  (inputs, node) => [map(need(inputs, 0, node), fn)];

/** Reduces over the axes input (all axes when absent) with a fold from `init`, then `finish`. */
const reduction =
  (init: number, step: (acc: number, v: number) => number, finish: (acc: number, n: number) => number = (a) => a): ReferenceOp =>
  (inputs, node) => {
    const x = need(inputs, 0, node);
    const axes = (inputs[1] ? elementsOf(inputs[1]) : x.dims.map((_, i) => i)).map((a) => normaliseAxis(a, x.dims.length));
    const kept = x.dims.map((d, i) => (axes.includes(i) ? 1 : d));
    const acc = new Float64Array(size(kept)).fill(init);
    const ks = strides(kept);
    forEachIndex(x.dims, (index, flat) => {
      const o = index.reduce((s, v, i) => s + (axes.includes(i) ? 0 : v * ks[i]!), 0);
      acc[o] = step(acc[o]!, x.data[flat]!);
    });
    const n = size(x.dims) / size(kept);
    const dims = intAttribute(node, 'keepdims', 1) === 1 ? kept : x.dims.filter((_, i) => !axes.includes(i));
    return [{ dims, data: acc.map((a) => finish(a, n)) }];
  };

/** Normalises each run of `inner` consecutive elements; `affine(i, v)` applies scale and bias by position. */
function normalise(x: RefTensor, inner: number, epsilon: number, affine: (flat: number, v: number) => number): RefTensor {
  const out = new Float64Array(x.data.length);
  for (let start = 0; start < out.length; start += inner) {
    let mean = 0;
    for (let i = 0; i < inner; i++) mean += x.data[start + i]!;
    mean /= inner;
    let variance = 0;
    for (let i = 0; i < inner; i++) variance += (x.data[start + i]! - mean) ** 2;
    variance /= inner;
    for (let i = 0; i < inner; i++) out[start + i] = affine(start + i, (x.data[start + i]! - mean) / Math.sqrt(variance + epsilon));
  }
  return { dims: [...x.dims], data: out };
}

function castTo(to: number, v: number): number {
  if (to === DataType.FLOAT) return Math.fround(v);
  if (to === DataType.BOOL) return v !== 0 ? 1 : 0;
  if (to === DataType.DOUBLE || to === DataType.FLOAT16) return v;
  return Math.trunc(v);
}

/** Reshape's target with 0 (copy the input's dim) and -1 (the rest) resolved. */
function reshapeDims(x: RefTensor, target: readonly number[]): number[] {
  const dims = target.map((d, i) => (d === 0 ? x.dims[i]! : d));
  const known = dims.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
  return dims.map((d) => (d === -1 ? size(x.dims) / known : d));
}

/** ConvTranspose: every input position scatters its kernel-weighted value to o = i·stride − pad + k·dilation. */
const convTranspose: ReferenceOp = (inputs, node) => {
  const x = need(inputs, 0, node);
  const w = need(inputs, 1, node);
  const [n, cin, ...inSpatial] = x.dims as number[];
  const [, coutPerGroup, ...kernel] = w.dims as number[];
  const rank = kernel.length;
  const group = intAttribute(node, 'group', 1);
  const st = intsAttribute(node, 'strides') ?? kernel.map(() => 1);
  const dil = intsAttribute(node, 'dilations') ?? kernel.map(() => 1);
  const pads = intsAttribute(node, 'pads') ?? kernel.flatMap(() => [0, 0]);
  const extra = intsAttribute(node, 'output_padding') ?? kernel.map(() => 0);
  const outSpatial = inSpatial.map((s, i) => st[i]! * (s - 1) + extra[i]! + dil[i]! * (kernel[i]! - 1) + 1 - pads[i]! - pads[i + rank]!);
  const dims = [n!, coutPerGroup! * group, ...outSpatial];
  const out = new Float64Array(size(dims));
  const os = strides(dims);
  const ws = strides(w.dims);
  const cinPerGroup = cin! / group;
  forEachIndex(x.dims, (index, flat) => {
    const [b, ci] = index as [number, number];
    const g = Math.floor(ci / cinPerGroup);
    for (let co = 0; co < coutPerGroup!; co++) {
      forEachIndex(kernel, (k) => {
        let target = b * os[0]! + (g * coutPerGroup! + co) * os[1]!;
        for (let d = 0; d < rank; d++) {
          const pos = index[d + 2]! * st[d]! - pads[d]! + k[d]! * dil[d]!;
          if (pos < 0 || pos >= outSpatial[d]!) return;
          target += pos * os[d + 2]!;
        }
        let wOffset = ci * ws[0]! + co * ws[1]!;
        for (let d = 0; d < rank; d++) wOffset += k[d]! * ws[d + 2]!;
        out[target]! += x.data[flat]! * w.data[wOffset]!;
      });
    }
  });
  const bias = inputs[2];
  if (bias) forEachIndex(dims, (index, flat) => (out[flat]! += bias.data[index[1]!]!));
  return [{ dims, data: out }];
};

/** Resize, nearest mode: source index from the coordinate transformation and the nearest rounding. */
const resize: ReferenceOp = (inputs, node) => {
  const x = need(inputs, 0, node);
  const mode = stringAttribute(node, 'mode', 'nearest');
  if (mode !== 'nearest') throw new Error(`reference Resize: mode ${mode} is not implemented`);
  const transform = stringAttribute(node, 'coordinate_transformation_mode', 'half_pixel');
  const rounding = stringAttribute(node, 'nearest_mode', 'round_prefer_floor');
  const sizes = elementsOf(inputs[3]);
  const scales = sizes.length > 0 ? sizes.map((s, i) => s / x.dims[i]!) : elementsOf(inputs[2]);
  const dims = sizes.length > 0 ? sizes : x.dims.map((d, i) => Math.floor(d * scales[i]!));
  const source = (o: number, i: number): number => {
    const s = scales[i]!;
    const c = transform === 'asymmetric' ? o / s : transform === 'half_pixel' ? (o + 0.5) / s - 0.5 : Number.NaN;
    if (Number.isNaN(c)) throw new Error(`reference Resize: coordinate_transformation_mode ${transform} is not implemented`);
    const r =
      rounding === 'floor'
        ? Math.floor(c)
        : rounding === 'ceil'
          ? Math.ceil(c)
          : rounding === 'round_prefer_ceil'
            ? Math.floor(c + 0.5)
            : Math.ceil(c - 0.5);
    return Math.min(Math.max(r, 0), x.dims[i]! - 1);
  };
  const xs = strides(x.dims);
  const out = new Float64Array(size(dims));
  forEachIndex(dims, (o, flat) => (out[flat] = x.data[o.reduce((s, v, i) => s + source(v, i) * xs[i]!, 0)]!));
  return [{ dims, data: out }];
};

/** Every op of the table: the type makes a missing or unknown op a compile error. */
export const OP_REFERENCES: { readonly [op in OpName]: ReferenceOp } = {
  Constant: (_, node) => {
    const t = tensorAttribute(node, 'value')!;
    return [tensor((t.dims ?? []).map(Number), tensorProtoValues(t))];
  },
  Identity: unary((v) => v),
  Cast: (inputs, node) => [map(need(inputs, 0, node), (v) => castTo(intAttribute(node, 'to', DataType.FLOAT), v))],
  Relu: unary((v) => Math.max(v, 0)),
  Sigmoid: unary((v) => 1 / (1 + Math.exp(-v))),
  Tanh: unary(Math.tanh),
  Sqrt: unary(Math.sqrt),
  Sin: unary(Math.sin),
  Cos: unary(Math.cos),
  Clip: (inputs, node) => {
    const lo = inputs[1]?.data[0] ?? -Infinity;
    const hi = inputs[2]?.data[0] ?? Infinity;
    return [map(need(inputs, 0, node), (v) => Math.min(Math.max(v, lo), hi))];
  },
  Add: binary((a, b) => a + b),
  Sub: binary((a, b) => a - b),
  Mul: binary((a, b) => a * b),
  Div: binary((a, b) => a / b),
  Pow: binary((a, b) => a ** b),
  Max: (inputs) => [
    broadcast(
      inputs.filter((t): t is RefTensor => t !== undefined),
      Math.max,
    ),
  ],
  Greater: binary((a, b) => (a > b ? 1 : 0)),
  Where: (inputs, node) => [
    broadcast(
      [0, 1, 2].map((i) => need(inputs, i, node)),
      (c, a, b) => (c ? a : b),
    ),
  ],
  Softmax: (inputs, node) => [softmax(need(inputs, 0, node), intAttribute(node, 'axis', -1))],
  LayerNormalization: (inputs, node) => {
    const x = need(inputs, 0, node);
    const inner = size(x.dims.slice(normaliseAxis(intAttribute(node, 'axis', -1), x.dims.length)));
    const scale = need(inputs, 1, node);
    const bias = inputs[2];
    return [
      normalise(x, inner, floatAttribute(node, 'epsilon', 1e-5), (i, v) => v * scale.data[i % inner]! + (bias ? bias.data[i % inner]! : 0)),
    ];
  },
  InstanceNormalization: (inputs, node) => {
    const x = need(inputs, 0, node);
    const [scale, bias] = [need(inputs, 1, node), need(inputs, 2, node)];
    const inner = size(x.dims.slice(2));
    const c = x.dims[1]!;
    const channel = (i: number) => Math.floor(i / inner) % c;
    return [normalise(x, inner, floatAttribute(node, 'epsilon', 1e-5), (i, v) => v * scale.data[channel(i)]! + bias.data[channel(i)]!)];
  },
  GroupNormalization: (inputs, node) => [
    groupNorm(
      need(inputs, 0, node),
      intAttribute(node, 'num_groups', 1),
      need(inputs, 1, node),
      need(inputs, 2, node),
      floatAttribute(node, 'epsilon', 1e-5),
    ),
  ],
  BatchNormalization: (inputs, node) => {
    const x = need(inputs, 0, node);
    const [scale, bias, mean, variance] = [1, 2, 3, 4].map((i) => need(inputs, i, node).data);
    const inner = size(x.dims.slice(2));
    const epsilon = floatAttribute(node, 'epsilon', 1e-5);
    const out = x.data.map((v, i) => {
      const c = Math.floor(i / inner) % x.dims[1]!;
      return ((v - mean![c]!) / Math.sqrt(variance![c]! + epsilon)) * scale![c]! + bias![c]!;
    });
    return [{ dims: [...x.dims], data: out }];
  },
  ReduceMean: reduction(
    0,
    (a, v) => a + v,
    (a, n) => a / n,
  ),
  ReduceL2: reduction(0, (a, v) => a + v * v, Math.sqrt),
  ReduceSumSquare: reduction(0, (a, v) => a + v * v),
  ReduceProd: reduction(1, (a, v) => a * v),
  Shape: (inputs, node) => {
    const dims = need(inputs, 0, node).dims;
    const start = normaliseAxis(intAttribute(node, 'start', 0), dims.length);
    const end = normaliseAxis(intAttribute(node, 'end', dims.length), dims.length);
    const values = dims.slice(start, end);
    return [tensor([values.length], values)];
  },
  Reshape: (inputs, node) => {
    const x = need(inputs, 0, node);
    return [{ dims: reshapeDims(x, elementsOf(need(inputs, 1, node))), data: x.data }];
  },
  Flatten: (inputs, node) => {
    const x = need(inputs, 0, node);
    const axis = normaliseAxis(intAttribute(node, 'axis', 1), x.dims.length);
    return [{ dims: [size(x.dims.slice(0, axis)), size(x.dims.slice(axis))], data: x.data }];
  },
  Transpose: (inputs, node) => {
    const x = need(inputs, 0, node);
    return [transpose(x, intsAttribute(node, 'perm') ?? x.dims.map((_, i) => x.dims.length - 1 - i))];
  },
  Unsqueeze: (inputs, node) => {
    const x = need(inputs, 0, node);
    const axes = elementsOf(need(inputs, 1, node));
    const rank = x.dims.length + axes.length;
    const inserted = new Set(axes.map((a) => normaliseAxis(a, rank)));
    const dims: number[] = [];
    for (let i = 0, k = 0; i < rank; i++) dims.push(inserted.has(i) ? 1 : x.dims[k++]!);
    return [{ dims, data: x.data }];
  },
  Concat: (inputs, node) => {
    const xs = inputs.filter((t): t is RefTensor => t !== undefined);
    return [concat(xs, normaliseAxis(intAttribute(node, 'axis', 0), xs[0]!.dims.length))];
  },
  Gather: (inputs, node) => {
    const x = need(inputs, 0, node);
    const indices = need(inputs, 1, node);
    const axis = normaliseAxis(intAttribute(node, 'axis', 0), x.dims.length);
    const dims = [...x.dims.slice(0, axis), ...indices.dims, ...x.dims.slice(axis + 1)];
    const xs = strides(x.dims);
    const out = new Float64Array(size(dims));
    const q = indices.dims.length;
    forEachIndex(dims, (o, flat) => {
      const at = o.slice(axis, axis + q).reduce((s, v, i) => s * indices.dims[i]! + v, 0);
      const raw = indices.data[at]!;
      const source = [...o.slice(0, axis), raw < 0 ? raw + x.dims[axis]! : raw, ...o.slice(axis + q)];
      out[flat] = x.data[source.reduce((s, v, i) => s + v * xs[i]!, 0)]!;
    });
    return [{ dims, data: out }];
  },
  Slice: (inputs, node) => {
    let x = need(inputs, 0, node);
    const starts = elementsOf(need(inputs, 1, node));
    const ends = elementsOf(need(inputs, 2, node));
    const axes = inputs[3] ? elementsOf(inputs[3]) : starts.map((_, i) => i);
    const steps = inputs[4] ? elementsOf(inputs[4]) : starts.map(() => 1);
    axes.forEach((a, i) => {
      const axis = normaliseAxis(a, x.dims.length);
      const d = x.dims[axis]!;
      const step = steps[i]!;
      const [lo, hi] = step > 0 ? [0, d] : [-1, d - 1];
      const clamp = (v: number) => Math.min(Math.max(v < 0 ? v + d : v, lo), hi);
      x = slice(x, axis, clamp(starts[i]!), clamp(ends[i]!), step);
    });
    return [x];
  },
  Split: (inputs, node) => {
    const x = need(inputs, 0, node);
    const axis = normaliseAxis(intAttribute(node, 'axis', 0), x.dims.length);
    const parts = node.output?.length ?? 1;
    const even = Math.ceil(x.dims[axis]! / parts);
    const sizes = inputs[1] ? elementsOf(inputs[1]) : Array.from({ length: parts }, (_, i) => Math.min(even, x.dims[axis]! - i * even));
    let start = 0;
    return sizes.map((s) => slice(x, axis, start, (start += s)));
  },
  Pad: (inputs, node) => {
    const mode = stringAttribute(node, 'mode', 'constant');
    const fill = mode === 'constant' ? (inputs[2]?.data[0] ?? 0) : mode === 'edge' ? 'edge' : 'reflect';
    return [pad(need(inputs, 0, node), elementsOf(need(inputs, 1, node)), fill)];
  },
  Tile: (inputs, node) => {
    const x = need(inputs, 0, node);
    const repeats = elementsOf(need(inputs, 1, node));
    const dims = x.dims.map((d, i) => d * repeats[i]!);
    const xs = strides(x.dims);
    const out = new Float64Array(size(dims));
    forEachIndex(dims, (o, flat) => (out[flat] = x.data[o.reduce((s, v, i) => s + (v % x.dims[i]!) * xs[i]!, 0)]!));
    return [{ dims, data: out }];
  },
  ConstantOfShape: (inputs, node) => {
    const dims = elementsOf(need(inputs, 0, node));
    const t = tensorAttribute(node, 'value');
    return [{ dims, data: new Float64Array(size(dims)).fill(t ? tensorProtoValues(t)[0]! : 0) }];
  },
  Range: (inputs, node) => {
    const [start, limit, delta] = [0, 1, 2].map((i) => need(inputs, i, node).data[0]!) as [number, number, number];
    const n = Math.max(0, Math.ceil((limit - start) / delta));
    return [
      tensor(
        [n],
        Array.from({ length: n }, (_, i) => start + i * delta),
      ),
    ];
  },
  MatMul: (inputs, node) => [matmul(need(inputs, 0, node), need(inputs, 1, node))],
  Gemm: (inputs, node) => {
    const a = need(inputs, 0, node);
    const b = need(inputs, 1, node);
    const product = matmul(
      intAttribute(node, 'transA', 0) ? transpose(a, [1, 0]) : a,
      intAttribute(node, 'transB', 0) ? transpose(b, [1, 0]) : b,
    );
    const alpha = floatAttribute(node, 'alpha', 1);
    const beta = floatAttribute(node, 'beta', 1);
    const c = inputs[2];
    return [c ? broadcast([product, c], (p, v) => alpha * p + beta * v) : map(product, (p) => alpha * p)];
  },
  Conv: (inputs, node) => {
    if (stringAttribute(node, 'auto_pad', 'NOTSET') !== 'NOTSET') throw new Error('reference Conv: auto_pad is not implemented');
    const params = {
      group: intAttribute(node, 'group', 1),
      ...(intsAttribute(node, 'pads') ? { pads: intsAttribute(node, 'pads')! } : {}),
      ...(intsAttribute(node, 'strides') ? { strides: intsAttribute(node, 'strides')! } : {}),
      ...(intsAttribute(node, 'dilations') ? { dilations: intsAttribute(node, 'dilations')! } : {}),
    };
    return [conv(need(inputs, 0, node), need(inputs, 1, node), inputs[2], params)];
  },
  ConvTranspose: convTranspose,
  DepthToSpace: (inputs, node) => {
    const x = need(inputs, 0, node);
    const [n, c, h, w] = x.dims as [number, number, number, number];
    const b = intAttribute(node, 'blocksize', 1);
    const crd = stringAttribute(node, 'mode', 'DCR') === 'CRD';
    const oc = c / (b * b);
    const dims = [n, oc, h * b, w * b];
    const out = new Float64Array(size(dims));
    forEachIndex(dims, ([bn, co, y, xx], flat) => {
      const [by, bx] = [y! % b, xx! % b];
      const ci = crd ? (co! * b + by) * b + bx : (by * b + bx) * oc + co!;
      out[flat] = x.data[((bn! * c + ci) * h + Math.floor(y! / b)) * w + Math.floor(xx! / b)]!;
    });
    return [{ dims, data: out }];
  },
  Resize: resize,
};

/**
 * Runs `model` node by node on the references (initializers from their TensorProtos): every
 * value it computes, by name, for the given graph inputs.
 */
export function runReferenceModel(model: ModelProto, feeds: Readonly<Record<string, RefTensor>>): Map<string, RefTensor> {
  const values = new Map<string, RefTensor>(Object.entries(feeds));
  for (const t of model.graph?.initializer ?? []) values.set(t.name!, tensor((t.dims ?? []).map(Number), tensorProtoValues(t)));
  for (const node of model.graph?.node ?? []) {
    const op = node.op_type ?? '';
    if (!Object.hasOwn(OP_REFERENCES, op)) throw new Error(`reference: no implementation of ${op} (node ${node.name})`);
    const inputs = (node.input ?? []).map((name) => (name === '' ? undefined : values.get(name)));
    const outputs = OP_REFERENCES[op as OpName](inputs, node);
    (node.output ?? []).forEach((name, i) => outputs[i] && values.set(name, outputs[i]!));
  }
  return values;
}
