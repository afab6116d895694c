// Tensor sizes of a built graph for given input dims: every value's shape propagated through the
// nodes in order (small tensors — shapes, axes, scales — are propagated by value, so a Reshape
// to `Shape(x)` is sized), giving the largest tensor a run allocates. This is what a device
// whose buffers are capped (WebGPU's maxBufferSize / maxStorageBufferBindingSize) must hold in
// one buffer, so tile plans are checked against it before a decode starts. Ops the builder does
// not emit are refused by name rather than guessed.

import { DistVaeError } from '../errors.js';
import { DataType, type AttributeProto, type ModelProto, type NodeProto, type TensorProto } from './onnx-proto.js';
import { tensorProtoValues } from './tensor-proto.js';

/** One tensor of a run: its value name, shape and size in bytes. */
export interface TensorSize {
  name: string;
  dims: number[];
  bytes: number;
}

/** Sizes of every tensor of a run (initializers, inputs, node outputs) and the largest of them. */
export interface GraphTensorSizes {
  largest: TensorSize;
  /** Each graph output's shape. */
  outputs: Record<string, number[]>;
  /** Every value, in graph order. */
  tensors: TensorSize[];
}

interface Fact {
  dims: number[];
  /** Element size in bytes. */
  itemBytes: number;
  /** The elements, for small tensors whose values are known. */
  values?: number[];
}

const ITEM_BYTES: Record<number, number> = {
  [DataType.FLOAT]: 4,
  [DataType.INT64]: 8,
  [DataType.INT32]: 4,
  [DataType.FLOAT16]: 2,
  [DataType.DOUBLE]: 8,
  [DataType.UINT8]: 1,
  [DataType.INT8]: 1,
  [DataType.BOOL]: 1,
};
const VALUE_TYPES = new Set<number>([DataType.FLOAT, DataType.DOUBLE, DataType.INT64, DataType.INT32]);
const UNARY = new Set([
  'Relu',
  'Tanh',
  'Sigmoid',
  'Sqrt',
  'Erf',
  'Identity',
  'Clip',
  'Softmax',
  'Exp',
  'Neg',
  'Abs',
  'InstanceNormalization',
  'BatchNormalization',
  'LayerNormalization',
  'GroupNormalization',
]);
const BROADCAST = new Set(['Add', 'Sub', 'Mul', 'Div', 'Pow', 'Where', 'Max', 'Min']);
/** Small tensors (shapes, axes, scales) are propagated by value up to this many elements. */
const VALUE_LIMIT = 64;

const count = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);

function unsupported(node: NodeProto, why: string): never {
  throw new DistVaeError('UNSUPPORTED', `tensor sizes: cannot size ${node.op_type} node ${node.name ?? '?'}: ${why}`);
}

function attribute(node: NodeProto, name: string): AttributeProto | undefined {
  return node.attribute?.find((a) => a.name === name);
}

function attrInts(node: NodeProto, name: string): number[] | undefined {
  const a = attribute(node, name);
  return a ? (a.ints ?? []).map(Number) : undefined;
}

function attrInt(node: NodeProto, name: string, fallback: number): number {
  const a = attribute(node, name);
  return a?.i === undefined ? fallback : Number(a.i);
}

function factOfTensor(t: TensorProto): Fact {
  const dims = (t.dims ?? []).map(Number);
  const itemBytes = ITEM_BYTES[t.data_type ?? DataType.FLOAT] ?? 4;
  if (count(dims) > VALUE_LIMIT || !VALUE_TYPES.has(t.data_type ?? DataType.FLOAT)) return { dims, itemBytes };
  return { dims, itemBytes, values: tensorProtoValues(t) };
}

function broadcast(node: NodeProto, shapes: readonly number[][]): number[] {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    let d = 1;
    for (const s of shapes) {
      const v = s[i - (rank - s.length)] ?? 1;
      if (v !== 1 && d !== 1 && v !== d) unsupported(node, `shapes [${shapes.map((x) => x.join(', ')).join('] and [')}] do not broadcast`);
      if (v !== 1) d = v;
    }
    out.push(d);
  }
  return out;
}

function normAxis(axis: number, rank: number): number {
  return axis < 0 ? axis + rank : axis;
}

function outputFacts(node: NodeProto, ins: (Fact | undefined)[]): Fact[] {
  const op = node.op_type ?? '';
  const x = ins[0];
  const need = (f: Fact | undefined, what: string): Fact => f ?? unsupported(node, `its ${what} has no known shape`);
  const values = (f: Fact | undefined, what: string): number[] =>
    need(f, what).values ?? unsupported(node, `its ${what} is not a known constant`);
  if (op === 'Constant') {
    const t = attribute(node, 'value')?.t ?? unsupported(node, 'no tensor value');
    return [factOfTensor(t)];
  }
  if (UNARY.has(op)) return [{ ...need(x, 'input') }];
  if (op === 'Cast') {
    const to = attrInt(node, 'to', DataType.FLOAT);
    return [{ ...need(x, 'input'), itemBytes: ITEM_BYTES[to] ?? 4 }];
  }
  if (BROADCAST.has(op)) {
    const shapes = ins.map((f, i) => need(f, `input ${i}`).dims);
    return [{ dims: broadcast(node, shapes), itemBytes: need(x, 'input').itemBytes }];
  }
  if (op === 'Shape') return [{ dims: [need(x, 'input').dims.length], itemBytes: 8, values: [...need(x, 'input').dims] }];
  if (op === 'Conv') {
    const xd = need(x, 'input').dims;
    const wd = need(ins[1], 'weight').dims;
    const spatial = xd.length - 2;
    const kernel = attrInts(node, 'kernel_shape') ?? wd.slice(2);
    const pads = attrInts(node, 'pads') ?? new Array<number>(2 * spatial).fill(0);
    const strides = attrInts(node, 'strides') ?? new Array<number>(spatial).fill(1);
    const dilations = attrInts(node, 'dilations') ?? new Array<number>(spatial).fill(1);
    const out = [xd[0]!, wd[0]!];
    for (let i = 0; i < spatial; i++)
      out.push(Math.floor((xd[2 + i]! + pads[i]! + pads[spatial + i]! - dilations[i]! * (kernel[i]! - 1) - 1) / strides[i]!) + 1);
    return [{ dims: out, itemBytes: 4 }];
  }
  if (op === 'Resize') {
    const xd = need(x, 'input').dims;
    const sizes = ins[3];
    if (sizes?.values) return [{ dims: [...sizes.values], itemBytes: 4 }];
    const scales = ins[2] && node.input?.[2] ? ins[2] : undefined;
    const s =
      scales?.values ?? (scales ? unsupported(node, 'its scales are not a known constant') : unsupported(node, 'neither scales nor sizes'));
    return [{ dims: xd.map((d, i) => Math.floor(d * s[i]!)), itemBytes: 4 }];
  }
  if (op === 'Reshape') {
    const xf = need(x, 'input');
    const target = values(ins[1], 'shape');
    const dims = target.map((d, i) => (d === 0 ? xf.dims[i]! : d));
    const known = dims.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
    const out = dims.map((d) => (d === -1 ? count(xf.dims) / known : d));
    return [{ dims: out, itemBytes: xf.itemBytes, ...(xf.values ? { values: xf.values } : {}) }];
  }
  if (op === 'Flatten') {
    const xd = need(x, 'input').dims;
    const axis = normAxis(attrInt(node, 'axis', 1), xd.length);
    return [{ dims: [count(xd.slice(0, axis)), count(xd.slice(axis))], itemBytes: need(x, 'input').itemBytes }];
  }
  if (op === 'Transpose') {
    const xd = need(x, 'input').dims;
    const perm = attrInts(node, 'perm') ?? xd.map((_, i) => xd.length - 1 - i);
    return [{ dims: perm.map((p) => xd[p]!), itemBytes: need(x, 'input').itemBytes }];
  }
  if (op === 'MatMul') {
    const a = need(x, 'input A').dims;
    const b = need(ins[1], 'input B').dims;
    const batch = broadcast(node, [a.slice(0, -2), b.slice(0, -2)]);
    return [{ dims: [...batch, a[a.length - 2]!, b[b.length - 1]!], itemBytes: 4 }];
  }
  if (op === 'Gemm') {
    const a = need(x, 'input A').dims;
    const b = need(ins[1], 'input B').dims;
    const m = attrInt(node, 'transA', 0) ? a[1]! : a[0]!;
    const n = attrInt(node, 'transB', 0) ? b[0]! : b[1]!;
    return [{ dims: [m, n], itemBytes: 4 }];
  }
  if (op === 'ReduceMean') {
    const xd = need(x, 'input').dims;
    const axes = (ins[1] ? values(ins[1], 'axes') : (attrInts(node, 'axes') ?? xd.map((_, i) => i))).map((a) => normAxis(a, xd.length));
    const keep = attrInt(node, 'keepdims', 1) === 1;
    const dims = keep ? xd.map((d, i) => (axes.includes(i) ? 1 : d)) : xd.filter((_, i) => !axes.includes(i));
    return [{ dims, itemBytes: 4 }];
  }
  if (op === 'DepthToSpace') {
    const [n, c, h, w] = need(x, 'input').dims as [number, number, number, number];
    const b = attrInt(node, 'blocksize', 1);
    return [{ dims: [n, c / (b * b), h * b, w * b], itemBytes: 4 }];
  }
  if (op === 'Unsqueeze') {
    const xf = need(x, 'input');
    const rank = xf.dims.length + values(ins[1], 'axes').length;
    const axes = values(ins[1], 'axes').map((a) => normAxis(a, rank));
    const dims: number[] = [];
    for (let i = 0, j = 0; i < rank; i++) dims.push(axes.includes(i) ? 1 : xf.dims[j++]!);
    return [{ dims, itemBytes: xf.itemBytes, ...(xf.values ? { values: xf.values } : {}) }];
  }
  if (op === 'Concat') {
    const facts = ins.map((f, i) => need(f, `input ${i}`));
    const rank = facts[0]!.dims.length;
    const axis = normAxis(attrInt(node, 'axis', 0), rank);
    const dims = [...facts[0]!.dims];
    dims[axis] = facts.reduce((s, f) => s + f.dims[axis]!, 0);
    const allValues = rank === 1 && facts.every((f) => f.values) ? facts.flatMap((f) => f.values!) : undefined;
    return [{ dims, itemBytes: facts[0]!.itemBytes, ...(allValues ? { values: allValues } : {}) }];
  }
  if (op === 'Slice') {
    const xf = need(x, 'input');
    const starts = values(ins[1], 'starts');
    const ends = values(ins[2], 'ends');
    const axes = ins[3] ? values(ins[3], 'axes') : starts.map((_, i) => i);
    const steps = ins[4] ? values(ins[4], 'steps') : starts.map(() => 1);
    const dims = [...xf.dims];
    let sliced = xf.values ? [...xf.values] : undefined;
    axes.forEach((a, i) => {
      const axis = normAxis(a, dims.length);
      const d = dims[axis]!;
      const step = steps[i]!;
      if (step !== 1) unsupported(node, `step ${step}`);
      const clampIndex = (v: number) => Math.min(Math.max(v < 0 ? v + d : v, 0), d);
      const s = clampIndex(starts[i]!);
      const e = clampIndex(ends[i]!);
      dims[axis] = Math.max(0, e - s);
      if (sliced && dims.length === 1) sliced = sliced.slice(s, e);
    });
    return [{ dims, itemBytes: xf.itemBytes, ...(sliced ? { values: sliced } : {}) }];
  }
  if (op === 'Split') {
    const xf = need(x, 'input');
    const axis = normAxis(attrInt(node, 'axis', 0), xf.dims.length);
    const sizes = ins[1] ? values(ins[1], 'split') : unsupported(node, 'no split sizes');
    return sizes.map((s) => {
      const dims = [...xf.dims];
      dims[axis] = s;
      return { dims, itemBytes: xf.itemBytes };
    });
  }
  if (op === 'Pad') {
    const xf = need(x, 'input');
    const pads = values(ins[1], 'pads');
    const rank = xf.dims.length;
    return [{ dims: xf.dims.map((d, i) => d + pads[i]! + pads[rank + i]!), itemBytes: xf.itemBytes }];
  }
  return unsupported(node, 'this op is not modelled');
}

/**
 * Sizes every tensor of a run of `model` on inputs of the given dims (graph input name → dims),
 * initializers included, and names the largest.
 */
export function graphTensorSizes(model: ModelProto, inputDims: Readonly<Record<string, readonly number[]>>): GraphTensorSizes {
  const graph = model.graph ?? {};
  const facts = new Map<string, Fact>();
  const tensors: TensorSize[] = [];
  const record = (name: string, f: Fact) => {
    facts.set(name, f);
    tensors.push({ name, dims: f.dims, bytes: count(f.dims) * f.itemBytes });
  };
  for (const t of graph.initializer ?? []) record(t.name ?? '', factOfTensor(t));
  for (const input of graph.input ?? []) {
    const name = input.name ?? '';
    if (facts.has(name)) continue;
    const dims = inputDims[name];
    if (!dims) throw new DistVaeError('INVALID_ARGUMENT', `tensor sizes: no dims given for graph input ${name}`);
    record(name, { dims: [...dims], itemBytes: 4 });
  }
  for (const node of graph.node ?? []) {
    const ins = (node.input ?? []).map((n) => (n === '' ? undefined : facts.get(n)));
    const outs = outputFacts(node, ins);
    (node.output ?? []).forEach((name, i) => {
      if (outs[i]) record(name, outs[i]!);
    });
  }
  const outputs: Record<string, number[]> = {};
  for (const o of graph.output ?? []) {
    const f = facts.get(o.name ?? '');
    if (f) outputs[o.name ?? ''] = f.dims;
  }
  const largest = tensors.reduce((a, b) => (b.bytes > a.bytes ? b : a), { name: '', dims: [], bytes: 0 });
  return { largest, outputs, tensors };
}
