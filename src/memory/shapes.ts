// Static shapes of every value of a built decoder graph for concrete input dims: the op subset
// distvae's graph builder emits, read node by node in graph order (a built graph is
// topologically sorted). Small integer tensors (Shape, shape arithmetic, Constant literals) are
// evaluated too, since Reshape targets are computed from them. An op outside the subset is
// refused by name rather than guessed, so a new op cannot silently drop out of a prediction.

import { DistVaeError, reason } from '../errors.js';
import { AttributeType, DataType, type AttributeProto, type ModelProto, type NodeProto, type TensorProto } from '../graph/onnx-proto.js';
import { tensorProtoValues } from '../graph/tensor-proto.js';

/** A value's shape, element size and (for small integer tensors) its elements. */
export interface ValueShape {
  dims: number[];
  /** Bytes per element. */
  itemBytes: number;
  /** Elements of a small constant-foldable tensor (shapes, axes, scales); absent otherwise. */
  values?: number[];
}

const ITEM_BYTES: Record<number, number> = {
  [DataType.FLOAT]: 4,
  [DataType.FLOAT16]: 2,
  [DataType.DOUBLE]: 8,
  [DataType.INT64]: 8,
  [DataType.INT32]: 4,
  [DataType.INT8]: 1,
  [DataType.UINT8]: 1,
  [DataType.BOOL]: 1,
};

/** Elements kept for constant folding: shape tensors are tiny, activations never fold. */
const FOLD_LIMIT = 64;

function unsupported(node: NodeProto, why: string): never {
  const r = reason(
    'MEMORY_MODEL_UNSUPPORTED',
    'node',
    node.name ?? node.op_type,
    'an op the memory model reads',
    `memory model: node ${node.name} (${node.op_type}): ${why}`,
  );
  throw new DistVaeError('UNSUPPORTED', r.message, { reasons: [r] });
}

function attribute(node: NodeProto, name: string): AttributeProto | undefined {
  return node.attribute?.find((a) => a.name === name);
}

function intAttr(node: NodeProto, name: string, fallback: number): number {
  const a = attribute(node, name);
  return a === undefined ? fallback : Number(a.i ?? 0);
}

function intsAttr(node: NodeProto, name: string): number[] | undefined {
  const a = attribute(node, name);
  return a === undefined ? undefined : (a.ints ?? []).map(Number);
}

export function elements(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

/** Bytes of a value. */
export function bytesOf(shape: ValueShape): number {
  return elements(shape.dims) * shape.itemBytes;
}

function tensorShape(t: TensorProto): ValueShape {
  const dims = (t.dims ?? []).map(Number);
  const itemBytes = ITEM_BYTES[t.data_type ?? DataType.FLOAT] ?? 4;
  const shape: ValueShape = { dims, itemBytes };
  if (elements(dims) <= FOLD_LIMIT && t.data_type !== DataType.FLOAT16) shape.values = tensorProtoValues(t);
  return shape;
}

function broadcast(node: NodeProto, shapes: ValueShape[]): number[] {
  const rank = Math.max(...shapes.map((s) => s.dims.length));
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    let d = 1;
    for (const s of shapes) {
      const v = s.dims[s.dims.length - rank + i] ?? 1;
      if (v !== 1) {
        if (d !== 1 && d !== v) unsupported(node, `cannot broadcast [${shapes.map((x) => x.dims.join('x')).join('], [')}]`);
        d = v;
      }
    }
    out.push(d);
  }
  return out;
}

function normAxis(axis: number, rank: number): number {
  return axis < 0 ? axis + rank : axis;
}

function elementwise(op: string, a: number, b: number): number {
  switch (op) {
    case 'Add':
      return a + b;
    case 'Sub':
      return a - b;
    case 'Mul':
      return a * b;
    case 'Div':
      return Math.trunc(a / b);
    default:
      return Number.NaN;
  }
}

const SAME_SHAPE = new Set([
  'Identity',
  'Relu',
  'Sigmoid',
  'Tanh',
  'Softmax',
  'Sqrt',
  'Exp',
  'Neg',
  'Erf',
  'Clip',
  'InstanceNormalization',
  'BatchNormalization',
  'LayerNormalization',
  'Cast',
  'Abs',
  'Not',
]);
const BROADCAST = new Set(['Add', 'Sub', 'Mul', 'Div', 'Pow', 'Equal', 'Less', 'Greater', 'And', 'Or', 'Where', 'Max', 'Min']);
const BOOL_OUT = new Set(['Equal', 'Less', 'Greater', 'And', 'Or', 'Not']);

/** Infers one node's output shapes from its inputs' (null inputs: optional ones left out). */
function inferNode(node: NodeProto, inputs: (ValueShape | null)[]): ValueShape[] {
  const op = node.op_type ?? '';
  const x = inputs[0];
  const need = (i: number): ValueShape => inputs[i] ?? unsupported(node, `input ${i} has no known shape`);
  if (op === 'Constant') {
    const value = attribute(node, 'value');
    if (value?.type === AttributeType.TENSOR && value.t) return [tensorShape(value.t)];
    return unsupported(node, 'a Constant without a tensor value');
  }
  if (SAME_SHAPE.has(op)) {
    const s = need(0);
    const itemBytes = op === 'Cast' ? (ITEM_BYTES[intAttr(node, 'to', DataType.FLOAT)] ?? 4) : BOOL_OUT.has(op) ? 1 : s.itemBytes;
    return [{ dims: [...s.dims], itemBytes, ...(op === 'Identity' || op === 'Cast' ? (s.values ? { values: s.values } : {}) : {}) }];
  }
  if (BROADCAST.has(op)) {
    const given = inputs.filter((s): s is ValueShape => s !== null);
    const dims = broadcast(node, given);
    const itemBytes = BOOL_OUT.has(op) ? 1 : op === 'Where' ? need(1).itemBytes : need(0).itemBytes;
    const out: ValueShape = { dims, itemBytes };
    const [a, b] = given;
    if (a?.values && b?.values && elements(dims) <= FOLD_LIMIT && op !== 'Where') {
      out.values = Array.from({ length: elements(dims) }, (_, i) =>
        elementwise(op, a.values![a.values!.length === 1 ? 0 : i]!, b.values![b.values!.length === 1 ? 0 : i]!),
      );
    }
    return [out];
  }
  switch (op) {
    case 'Shape': {
      const s = need(0);
      const rank = s.dims.length;
      const start = normAxis(intAttr(node, 'start', 0), rank);
      const end = normAxis(intAttr(node, 'end', rank), rank);
      const values = s.dims.slice(start, end);
      return [{ dims: [values.length], itemBytes: 8, values }];
    }
    case 'Reshape': {
      const s = need(0);
      const target = need(1).values ?? unsupported(node, 'the target shape is not a constant of the graph');
      const dims = target.map((d, i) => (d === 0 ? s.dims[i]! : d));
      const known = dims.filter((d) => d !== -1).reduce((p, d) => p * d, 1);
      const total = elements(s.dims);
      return [{ dims: dims.map((d) => (d === -1 ? total / known : d)), itemBytes: s.itemBytes, ...(s.values ? { values: s.values } : {}) }];
    }
    case 'Flatten': {
      const s = need(0);
      const axis = normAxis(intAttr(node, 'axis', 1), s.dims.length);
      return [{ dims: [elements(s.dims.slice(0, axis)), elements(s.dims.slice(axis))], itemBytes: s.itemBytes }];
    }
    case 'Transpose': {
      const s = need(0);
      const perm = intsAttr(node, 'perm') ?? s.dims.map((_, i) => s.dims.length - 1 - i);
      return [{ dims: perm.map((p) => s.dims[p]!), itemBytes: s.itemBytes }];
    }
    case 'Unsqueeze': {
      const s = need(0);
      const axes = need(1).values ?? unsupported(node, 'axes are not constant');
      const rank = s.dims.length + axes.length;
      const set = new Set(axes.map((a) => normAxis(a, rank)));
      const dims: number[] = [];
      let k = 0;
      for (let i = 0; i < rank; i++) dims.push(set.has(i) ? 1 : s.dims[k++]!);
      return [{ dims, itemBytes: s.itemBytes, ...(s.values ? { values: s.values } : {}) }];
    }
    case 'Squeeze': {
      const s = need(0);
      const axes = inputs[1]?.values;
      const set = new Set((axes ?? s.dims.flatMap((d, i) => (d === 1 ? [i] : []))).map((a) => normAxis(a, s.dims.length)));
      return [{ dims: s.dims.filter((_, i) => !set.has(i)), itemBytes: s.itemBytes, ...(s.values ? { values: s.values } : {}) }];
    }
    case 'Concat': {
      const given = inputs.filter((s): s is ValueShape => s !== null);
      const axis = normAxis(intAttr(node, 'axis', 0), given[0]!.dims.length);
      const dims = [...given[0]!.dims];
      dims[axis] = given.reduce((sum, s) => sum + s.dims[axis]!, 0);
      const out: ValueShape = { dims, itemBytes: given[0]!.itemBytes };
      if (given.every((s) => s.values) && dims.length === 1) out.values = given.flatMap((s) => s.values!);
      return [out];
    }
    case 'Gather': {
      const s = need(0);
      const idx = need(1);
      const axis = normAxis(intAttr(node, 'axis', 0), s.dims.length);
      const dims = [...s.dims.slice(0, axis), ...idx.dims, ...s.dims.slice(axis + 1)];
      const out: ValueShape = { dims, itemBytes: s.itemBytes };
      if (s.values && idx.values && s.dims.length === 1) out.values = idx.values.map((i) => s.values![i < 0 ? i + s.values!.length : i]!);
      return [out];
    }
    case 'Slice': {
      const s = need(0);
      const starts = need(1).values ?? unsupported(node, 'starts are not constant');
      const ends = need(2).values ?? unsupported(node, 'ends are not constant');
      const axes = inputs[3]?.values ?? starts.map((_, i) => i);
      const steps = inputs[4]?.values ?? starts.map(() => 1);
      const dims = [...s.dims];
      let values = s.values;
      axes.forEach((a, i) => {
        const axis = normAxis(a, dims.length);
        const n = dims[axis]!;
        const step = steps[i]!;
        const clampIndex = (v: number, lo: number, hi: number) => Math.min(Math.max(v < 0 ? v + n : v, lo), hi);
        const lo = step > 0 ? 0 : -1;
        const hi = step > 0 ? n : n - 1;
        const b = clampIndex(starts[i]!, lo, hi);
        const e = clampIndex(ends[i]!, lo, hi);
        dims[axis] = Math.max(0, Math.ceil((e - b) / step));
        if (values && s.dims.length === 1) values = Array.from({ length: dims[axis]! }, (_, k) => values![b + k * step]!);
      });
      return [{ dims, itemBytes: s.itemBytes, ...(values && dims.length === 1 && values.length === dims[0] ? { values } : {}) }];
    }
    case 'Split': {
      const s = need(0);
      const axis = normAxis(intAttr(node, 'axis', 0), s.dims.length);
      const sizes = inputs[1]?.values ?? Array.from({ length: node.output?.length ?? 1 }, () => s.dims[axis]! / (node.output?.length ?? 1));
      return sizes.map((size) => {
        const dims = [...s.dims];
        dims[axis] = size;
        return { dims, itemBytes: s.itemBytes };
      });
    }
    case 'Pad': {
      const s = need(0);
      const pads = need(1).values ?? unsupported(node, 'pads are not constant');
      const rank = s.dims.length;
      return [{ dims: s.dims.map((d, i) => d + pads[i]! + pads[i + rank]!), itemBytes: s.itemBytes }];
    }
    case 'ReduceMean':
    case 'ReduceL2':
    case 'ReduceSumSquare':
    case 'ReduceProd':
    case 'ReduceSum': {
      const s = need(0);
      const axes = (inputs[1]?.values ?? s.dims.map((_, i) => i)).map((a) => normAxis(a, s.dims.length));
      const keep = intAttr(node, 'keepdims', 1) === 1;
      const dims = keep ? s.dims.map((d, i) => (axes.includes(i) ? 1 : d)) : s.dims.filter((_, i) => !axes.includes(i));
      // The product of a shape's entries (a reshape target's size) is folded.
      const folded = op === 'ReduceProd' && s.values && s.dims.length === 1 ? { values: [s.values.reduce((a, b) => a * b, 1)] } : {};
      return [{ dims, itemBytes: s.itemBytes, ...folded }];
    }
    case 'ConstantOfShape': {
      const dims = need(0).values ?? unsupported(node, 'its shape is not constant');
      const value = attribute(node, 'value');
      return [{ dims: [...dims], itemBytes: value?.t ? (ITEM_BYTES[value.t.data_type ?? DataType.FLOAT] ?? 4) : 4 }];
    }
    case 'Range': {
      const [start, limit, delta] = [need(0).values?.[0], need(1).values?.[0], need(2).values?.[0]];
      if (start === undefined || limit === undefined || delta === undefined) unsupported(node, 'its bounds are not constant');
      const n = Math.max(0, Math.ceil((limit - start) / delta));
      return [
        {
          dims: [n],
          itemBytes: need(0).itemBytes,
          ...(n <= FOLD_LIMIT ? { values: Array.from({ length: n }, (_, i) => start + i * delta) } : {}),
        },
      ];
    }
    case 'MatMul': {
      const a = need(0);
      const b = need(1);
      const batch = broadcast(node, [
        { dims: a.dims.slice(0, -2), itemBytes: 4 },
        { dims: b.dims.slice(0, -2), itemBytes: 4 },
      ]);
      return [{ dims: [...batch, a.dims[a.dims.length - 2]!, b.dims[b.dims.length - 1]!], itemBytes: a.itemBytes }];
    }
    case 'Gemm': {
      const a = need(0);
      const b = need(1);
      const m = intAttr(node, 'transA', 0) ? a.dims[1]! : a.dims[0]!;
      const n = intAttr(node, 'transB', 0) ? b.dims[0]! : b.dims[1]!;
      return [{ dims: [m, n], itemBytes: a.itemBytes }];
    }
    case 'Conv':
    case 'ConvTranspose': {
      const s = need(0);
      const w = need(1);
      const spatial = s.dims.length - 2;
      const kernel = intsAttr(node, 'kernel_shape') ?? w.dims.slice(2);
      const strides = intsAttr(node, 'strides') ?? kernel.map(() => 1);
      const dilations = intsAttr(node, 'dilations') ?? kernel.map(() => 1);
      const pads = intsAttr(node, 'pads') ?? kernel.flatMap(() => [0, 0]);
      const group = intAttr(node, 'group', 1);
      const dims = [s.dims[0]!, op === 'Conv' ? w.dims[0]! : w.dims[1]! * group];
      for (let i = 0; i < spatial; i++) {
        const n = s.dims[2 + i]!;
        const k = dilations[i]! * (kernel[i]! - 1) + 1;
        const padded = pads[i]! + pads[i + spatial]!;
        if (op === 'Conv') dims.push(Math.floor((n + padded - k) / strides[i]!) + 1);
        else dims.push(strides[i]! * (n - 1) + (intsAttr(node, 'output_padding')?.[i] ?? 0) + k - padded);
      }
      return [{ dims, itemBytes: s.itemBytes }];
    }
    case 'DepthToSpace': {
      const s = need(0);
      const b = intAttr(node, 'blocksize', 1);
      const [n, c, h, w] = s.dims as [number, number, number, number];
      return [{ dims: [n, c / (b * b), h * b, w * b], itemBytes: s.itemBytes }];
    }
    case 'Resize': {
      const s = need(0);
      const sizes = inputs[3]?.values;
      if (sizes) return [{ dims: sizes, itemBytes: s.itemBytes }];
      const scales = inputs[2]?.values ?? unsupported(node, 'neither scales nor sizes are constant');
      return [{ dims: s.dims.map((d, i) => Math.floor(d * scales[i]!)), itemBytes: s.itemBytes }];
    }
    default:
      return unsupported(node, x ? 'an op the memory model does not know' : 'no input shape');
  }
}

/**
 * Shapes of every value for the given graph-input dims (initializers from their TensorProtos);
 * `inputValues` gives the elements of small inputs that later shapes are computed from (a band
 * model's crop bounds). Throws UNSUPPORTED naming the node for an op outside the builder's subset.
 */
export function inferShapes(
  model: ModelProto,
  inputDims: Readonly<Record<string, readonly number[]>>,
  inputValues: Readonly<Record<string, readonly number[]>> = {},
): Map<string, ValueShape> {
  const graph = model.graph!;
  const shapes = new Map(fixedShapes(model));
  for (const input of graph.input ?? []) {
    const dims = inputDims[input.name!];
    if (dims === undefined) {
      const r = reason(
        'MEMORY_MODEL_INPUT',
        'input',
        input.name,
        `dims for every graph input (${(graph.input ?? []).map((i) => i.name).join(', ')})`,
      );
      throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
    }
    const values = inputValues[input.name!];
    shapes.set(input.name!, values ? { dims: [...dims], itemBytes: 4, values: [...values] } : { dims: [...dims], itemBytes: 4 });
  }
  for (const node of graph.node ?? []) {
    if (node.op_type === 'Constant') continue;
    const inputs = (node.input ?? []).map((name) => (name === '' ? null : (shapes.get(name) ?? null)));
    const outputs = inferNode(node, inputs);
    (node.output ?? []).forEach((name, i) => {
      if (outputs[i]) shapes.set(name, outputs[i]!);
    });
  }
  return shapes;
}

const fixed = new WeakMap<ModelProto, Map<string, ValueShape>>();

/** Shapes that do not depend on the inputs (initializers, Constant nodes), read once per model. */
function fixedShapes(model: ModelProto): Map<string, ValueShape> {
  let shapes = fixed.get(model);
  if (!shapes) {
    shapes = new Map();
    // Small initializers keep their elements (shape literals); weights are never read.
    for (const t of model.graph!.initializer ?? [])
      shapes.set(
        t.name!,
        elements((t.dims ?? []).map(Number)) <= FOLD_LIMIT && t.data_type !== DataType.FLOAT
          ? tensorShape(t)
          : { dims: (t.dims ?? []).map(Number), itemBytes: ITEM_BYTES[t.data_type ?? DataType.FLOAT] ?? 4 },
      );
    for (const node of model.graph!.node ?? []) if (node.op_type === 'Constant') shapes.set(node.output![0]!, inferNode(node, [])[0]!);
    fixed.set(model, shapes);
  }
  return shapes;
}
