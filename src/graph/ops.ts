// The op table: every ONNX op a built graph holds (the builder's methods, the families' and band
// models' own nodes), each with its shape rule and its locality rule, so that adding an op is
// one entry here (plus its float64 reference in testing/op-references.ts). The shape rule gives
// a node's output shapes from its inputs' — small integer tensors (shapes, axes, scales) carry
// their elements, so a Reshape to a computed shape is sized; shapes.ts runs the rules over a
// graph. The locality rule names how the op treats positions; locality.ts interprets each kind.
// An op outside the table is refused by name rather than guessed.

import { DataType, type NodeProto, type TensorProto } from './onnx-proto.js';
import { intAttribute, intsAttribute, tensorAttribute } from './attributes.js';
import { tensorProtoValues } from './tensor-proto.js';

/** A value's shape, element size and (for small tensors whose elements are known) its elements. */
export interface ValueShape {
  dims: number[];
  /** Bytes per element. */
  itemBytes: number;
  /** Elements of a small constant-foldable tensor (shapes, axes, scales); absent otherwise. */
  values?: number[];
}

/** What a shape rule reads: the node, its inputs' shapes (null: an optional input left out or unknown). */
export interface ShapeContext {
  readonly node: NodeProto;
  readonly inputs: readonly (ValueShape | null)[];
  /** Input i's shape; refuses when it is unknown. */
  need(i: number): ValueShape;
  /** Input i's elements; refuses (naming `what`) when they are not known. */
  values(i: number, what: string): number[];
  /** Refuses the node: the rule cannot give its shapes. */
  refuse(why: string): never;
}

export type ShapeRule = (c: ShapeContext) => ValueShape[];

/**
 * How an op treats positions, for the locality analysis (locality.ts interprets each kind):
 * `pointwise` reads one position of one position-dependent input; `elementwise` combines
 * broadcast operands position by position; `statistics` normalises over every position;
 * `reduction` reduces over its axes; the op-named kinds have rules of their own; `unmodelled`
 * rules exactness out for its stage.
 */
export type LocalityRule =
  | 'literal'
  | 'shape'
  | 'pointwise'
  | 'elementwise'
  | 'statistics'
  | 'reduction'
  | 'conv'
  | 'resize'
  | 'depth-to-space'
  | 'batch-norm'
  | 'reshape'
  | 'transpose'
  | 'matmul'
  | 'softmax'
  | 'layer-norm'
  | 'concat'
  | 'split'
  | 'slice'
  | 'pad'
  | 'unsqueeze'
  | 'unmodelled';

/**
 * How an op runs in a float16 graph (precision.ts): `follow` (the default) computes in the
 * graph's precision; `float32` computes in float32 between Casts even in a float16 graph — the
 * normalisations, softmax and reductions, whose sums and squares overflow float16's 65504 at the
 * activations a real VAE decoder reaches.
 */
export type OpPrecision = 'follow' | 'float32';

export interface OpRule {
  shape: ShapeRule;
  locality: LocalityRule;
  /** How the op runs in a float16 graph; absent: `follow`. */
  precision?: OpPrecision;
  /** Float inputs whose type is fixed by the op rather than tied to its data type T (Resize's roi and scales): never cast. */
  fixedInputs?: readonly number[];
}

export const ITEM_BYTES: Readonly<Record<number, number>> = {
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
export const FOLD_LIMIT = 64;

export function elements(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

/** Bytes of a value. */
export function bytesOf(shape: ValueShape): number {
  return elements(shape.dims) * shape.itemBytes;
}

export function normaliseAxis(axis: number, rank: number): number {
  return axis < 0 ? axis + rank : axis;
}

/**
 * The shape of a tensor literal; its elements when it is small (a float32 initializer is a
 * checkpoint weight, never a shape, so its elements are not read: `literal` false).
 */
export function tensorShape(t: TensorProto, literal = true): ValueShape {
  const dims = (t.dims ?? []).map(Number);
  const type = t.data_type ?? DataType.FLOAT;
  const shape: ValueShape = { dims, itemBytes: ITEM_BYTES[type] ?? 4 };
  if (elements(dims) <= FOLD_LIMIT && type !== DataType.FLOAT16 && (literal || type !== DataType.FLOAT))
    shape.values = tensorProtoValues(t);
  return shape;
}

/** Numpy broadcasting of `shapes`; refuses shapes that do not broadcast. */
export function broadcastDims(c: Pick<ShapeContext, 'refuse'>, shapes: readonly (readonly number[])[]): number[] {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    let d = 1;
    for (const s of shapes) {
      const v = s[s.length - rank + i] ?? 1;
      if (v !== 1) {
        if (d !== 1 && d !== v) c.refuse(`cannot broadcast [${shapes.map((x) => x.join('x')).join('], [')}]`);
        d = v;
      }
    }
    out.push(d);
  }
  return out;
}

const keepValues = (s: ValueShape) => (s.values ? { values: s.values } : {});

/** The same shape and element type as input 0; `passValues` for ops that leave the elements as they are. */
const sameShape =
  (passValues = false): ShapeRule =>
  (c) => {
    const s = c.need(0);
    return [{ dims: [...s.dims], itemBytes: s.itemBytes, ...(passValues ? keepValues(s) : {}) }];
  };

/** Broadcasting ops; Add/Sub/Mul/Div of small known operands are folded (shape arithmetic). */
const broadcasting =
  (itemBytesOf: (c: ShapeContext) => number, fold?: (a: number, b: number) => number): ShapeRule =>
  (c) => {
    const given = c.inputs.filter((s): s is ValueShape => s !== null);
    const dims = broadcastDims(
      c,
      given.map((s) => s.dims),
    );
    const out: ValueShape = { dims, itemBytes: itemBytesOf(c) };
    const [a, b] = given;
    if (fold && a?.values && b?.values && elements(dims) <= FOLD_LIMIT) {
      out.values = Array.from({ length: elements(dims) }, (_, i) =>
        fold(a.values![a.values!.length === 1 ? 0 : i]!, b.values![b.values!.length === 1 ? 0 : i]!),
      );
    }
    return [out];
  };

const firstItemBytes = (c: ShapeContext) => c.need(0).itemBytes;

/** Reductions over the axes input (or attribute; all axes when neither); ReduceProd of a shape is folded. */
const reduction: ShapeRule = (c) => {
  const s = c.need(0);
  const axes = (c.inputs[1]?.values ?? intsAttribute(c.node, 'axes') ?? s.dims.map((_, i) => i)).map((a) =>
    normaliseAxis(a, s.dims.length),
  );
  const keep = intAttribute(c.node, 'keepdims', 1) === 1;
  const dims = keep ? s.dims.map((d, i) => (axes.includes(i) ? 1 : d)) : s.dims.filter((_, i) => !axes.includes(i));
  // The product of a shape's entries (a reshape target's size) is folded.
  const folded =
    c.node.op_type === 'ReduceProd' && s.values && s.dims.length === 1 ? { values: [s.values.reduce((a, b) => a * b, 1)] } : {};
  return [{ dims, itemBytes: s.itemBytes, ...folded }];
};

const convolution: ShapeRule = (c) => {
  const transposed = c.node.op_type === 'ConvTranspose';
  const s = c.need(0);
  const w = c.need(1);
  const spatial = s.dims.length - 2;
  const kernel = intsAttribute(c.node, 'kernel_shape') ?? w.dims.slice(2);
  const strides = intsAttribute(c.node, 'strides') ?? kernel.map(() => 1);
  const dilations = intsAttribute(c.node, 'dilations') ?? kernel.map(() => 1);
  const pads = intsAttribute(c.node, 'pads') ?? kernel.flatMap(() => [0, 0]);
  const group = intAttribute(c.node, 'group', 1);
  const dims = [s.dims[0]!, transposed ? w.dims[1]! * group : w.dims[0]!];
  for (let i = 0; i < spatial; i++) {
    const n = s.dims[2 + i]!;
    const k = dilations[i]! * (kernel[i]! - 1) + 1;
    const padded = pads[i]! + pads[i + spatial]!;
    if (!transposed) dims.push(Math.floor((n + padded - k) / strides[i]!) + 1);
    else dims.push(strides[i]! * (n - 1) + (intsAttribute(c.node, 'output_padding')?.[i] ?? 0) + k - padded);
  }
  return [{ dims, itemBytes: s.itemBytes }];
};

/** Every op a built graph holds. */
export const OPS = {
  Constant: {
    locality: 'literal',
    shape: (c) => [tensorShape(tensorAttribute(c.node, 'value') ?? c.refuse('a Constant without a tensor value'))],
  },
  Identity: { locality: 'pointwise', shape: sameShape(true) },
  Cast: {
    locality: 'pointwise',
    shape: (c) => {
      const s = c.need(0);
      return [{ dims: [...s.dims], itemBytes: ITEM_BYTES[intAttribute(c.node, 'to', DataType.FLOAT)] ?? 4, ...keepValues(s) }];
    },
  },
  Relu: { locality: 'pointwise', shape: sameShape() },
  Sigmoid: { locality: 'pointwise', shape: sameShape() },
  Tanh: { locality: 'pointwise', shape: sameShape() },
  Sqrt: { locality: 'pointwise', shape: sameShape() },
  Sin: { locality: 'pointwise', shape: sameShape() },
  Cos: { locality: 'pointwise', shape: sameShape() },
  Clip: { locality: 'pointwise', shape: sameShape() },
  Add: { locality: 'elementwise', shape: broadcasting(firstItemBytes, (a, b) => a + b) },
  Sub: { locality: 'elementwise', shape: broadcasting(firstItemBytes, (a, b) => a - b) },
  Mul: { locality: 'elementwise', shape: broadcasting(firstItemBytes, (a, b) => a * b) },
  Div: { locality: 'elementwise', shape: broadcasting(firstItemBytes, (a, b) => Math.trunc(a / b)) },
  Pow: { locality: 'elementwise', shape: broadcasting(firstItemBytes) },
  Max: { locality: 'elementwise', shape: broadcasting(firstItemBytes) },
  Greater: { locality: 'elementwise', shape: broadcasting(() => 1) },
  Where: { locality: 'elementwise', shape: broadcasting((c) => c.need(1).itemBytes) },
  Softmax: { locality: 'softmax', shape: sameShape(), precision: 'float32' },
  LayerNormalization: { locality: 'layer-norm', shape: sameShape(), precision: 'float32' },
  InstanceNormalization: { locality: 'statistics', shape: sameShape(), precision: 'float32' },
  GroupNormalization: { locality: 'statistics', shape: sameShape(), precision: 'float32' },
  BatchNormalization: { locality: 'batch-norm', shape: sameShape() },
  ReduceMean: { locality: 'reduction', shape: reduction, precision: 'float32' },
  ReduceL2: { locality: 'reduction', shape: reduction, precision: 'float32' },
  ReduceSumSquare: { locality: 'reduction', shape: reduction, precision: 'float32' },
  ReduceProd: { locality: 'reduction', shape: reduction },
  Shape: {
    locality: 'shape',
    shape: (c) => {
      const rank = c.need(0).dims.length;
      const start = normaliseAxis(intAttribute(c.node, 'start', 0), rank);
      const end = normaliseAxis(intAttribute(c.node, 'end', rank), rank);
      const values = c.need(0).dims.slice(start, end);
      return [{ dims: [values.length], itemBytes: 8, values }];
    },
  },
  Reshape: {
    locality: 'reshape',
    shape: (c) => {
      const s = c.need(0);
      const target = c.values(1, 'target shape');
      const dims = target.map((d, i) => (d === 0 ? s.dims[i]! : d));
      const known = dims.filter((d) => d !== -1).reduce((p, d) => p * d, 1);
      return [{ dims: dims.map((d) => (d === -1 ? elements(s.dims) / known : d)), itemBytes: s.itemBytes, ...keepValues(s) }];
    },
  },
  Flatten: {
    locality: 'unmodelled',
    shape: (c) => {
      const s = c.need(0);
      const axis = normaliseAxis(intAttribute(c.node, 'axis', 1), s.dims.length);
      return [{ dims: [elements(s.dims.slice(0, axis)), elements(s.dims.slice(axis))], itemBytes: s.itemBytes }];
    },
  },
  Transpose: {
    locality: 'transpose',
    shape: (c) => {
      const s = c.need(0);
      const perm = intsAttribute(c.node, 'perm') ?? s.dims.map((_, i) => s.dims.length - 1 - i);
      return [{ dims: perm.map((p) => s.dims[p]!), itemBytes: s.itemBytes }];
    },
  },
  Unsqueeze: {
    locality: 'unsqueeze',
    shape: (c) => {
      const s = c.need(0);
      const axes = c.values(1, 'axes');
      const rank = s.dims.length + axes.length;
      const inserted = new Set(axes.map((a) => normaliseAxis(a, rank)));
      const dims: number[] = [];
      for (let i = 0, k = 0; i < rank; i++) dims.push(inserted.has(i) ? 1 : s.dims[k++]!);
      return [{ dims, itemBytes: s.itemBytes, ...keepValues(s) }];
    },
  },
  Concat: {
    locality: 'concat',
    shape: (c) => {
      const given = c.inputs.filter((s): s is ValueShape => s !== null);
      if (given.length === 0) return c.refuse('no input has a known shape');
      const axis = normaliseAxis(intAttribute(c.node, 'axis', 0), given[0]!.dims.length);
      const dims = [...given[0]!.dims];
      dims[axis] = given.reduce((sum, s) => sum + s.dims[axis]!, 0);
      const out: ValueShape = { dims, itemBytes: given[0]!.itemBytes };
      if (given.every((s) => s.values) && dims.length === 1) out.values = given.flatMap((s) => s.values!);
      return [out];
    },
  },
  Gather: {
    locality: 'unmodelled',
    shape: (c) => {
      const s = c.need(0);
      const idx = c.need(1);
      const axis = normaliseAxis(intAttribute(c.node, 'axis', 0), s.dims.length);
      const out: ValueShape = { dims: [...s.dims.slice(0, axis), ...idx.dims, ...s.dims.slice(axis + 1)], itemBytes: s.itemBytes };
      if (s.values && idx.values && s.dims.length === 1) out.values = idx.values.map((i) => s.values![i < 0 ? i + s.values!.length : i]!);
      return [out];
    },
  },
  Slice: {
    locality: 'slice',
    shape: (c) => {
      const s = c.need(0);
      const starts = c.values(1, 'starts');
      const ends = c.values(2, 'ends');
      const axes = c.inputs[3]?.values ?? starts.map((_, i) => i);
      const steps = c.inputs[4]?.values ?? starts.map(() => 1);
      const dims = [...s.dims];
      let values = s.values;
      axes.forEach((a, i) => {
        const axis = normaliseAxis(a, dims.length);
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
    },
  },
  Split: {
    locality: 'split',
    shape: (c) => {
      const s = c.need(0);
      const axis = normaliseAxis(intAttribute(c.node, 'axis', 0), s.dims.length);
      const parts = c.node.output?.length ?? 1;
      const sizes = c.inputs[1]?.values ?? Array.from({ length: parts }, () => s.dims[axis]! / parts);
      return sizes.map((size) => {
        const dims = [...s.dims];
        dims[axis] = size;
        return { dims, itemBytes: s.itemBytes };
      });
    },
  },
  Pad: {
    locality: 'pad',
    shape: (c) => {
      const s = c.need(0);
      const pads = c.values(1, 'pads');
      const rank = s.dims.length;
      return [{ dims: s.dims.map((d, i) => d + pads[i]! + pads[i + rank]!), itemBytes: s.itemBytes }];
    },
  },
  Tile: {
    locality: 'unmodelled',
    shape: (c) => {
      const s = c.need(0);
      const repeats = c.values(1, 'repeats');
      return [{ dims: s.dims.map((d, i) => d * repeats[i]!), itemBytes: s.itemBytes }];
    },
  },
  ConstantOfShape: {
    locality: 'unmodelled',
    shape: (c) => {
      const t = tensorAttribute(c.node, 'value');
      return [{ dims: [...c.values(0, 'shape')], itemBytes: t ? (ITEM_BYTES[t.data_type ?? DataType.FLOAT] ?? 4) : 4 }];
    },
  },
  Range: {
    locality: 'unmodelled',
    precision: 'float32',
    shape: (c) => {
      const [start, limit, delta] = [c.need(0).values?.[0], c.need(1).values?.[0], c.need(2).values?.[0]];
      if (start === undefined || limit === undefined || delta === undefined) return c.refuse('its bounds are not constant');
      const n = Math.max(0, Math.ceil((limit - start) / delta));
      const values = n <= FOLD_LIMIT ? { values: Array.from({ length: n }, (_, i) => start + i * delta) } : {};
      return [{ dims: [n], itemBytes: c.need(0).itemBytes, ...values }];
    },
  },
  MatMul: {
    locality: 'matmul',
    shape: (c) => {
      const a = c.need(0).dims;
      const b = c.need(1).dims;
      const batch = broadcastDims(c, [a.slice(0, -2), b.slice(0, -2)]);
      return [{ dims: [...batch, a[a.length - 2]!, b[b.length - 1]!], itemBytes: c.need(0).itemBytes }];
    },
  },
  Gemm: {
    locality: 'unmodelled',
    shape: (c) => {
      const a = c.need(0).dims;
      const b = c.need(1).dims;
      const m = intAttribute(c.node, 'transA', 0) ? a[1]! : a[0]!;
      const n = intAttribute(c.node, 'transB', 0) ? b[0]! : b[1]!;
      return [{ dims: [m, n], itemBytes: c.need(0).itemBytes }];
    },
  },
  Conv: { locality: 'conv', shape: convolution },
  ConvTranspose: { locality: 'unmodelled', shape: convolution },
  DepthToSpace: {
    locality: 'depth-to-space',
    shape: (c) => {
      const s = c.need(0);
      const b = intAttribute(c.node, 'blocksize', 1);
      const [n, ch, h, w] = s.dims as [number, number, number, number];
      return [{ dims: [n, ch / (b * b), h * b, w * b], itemBytes: s.itemBytes }];
    },
  },
  Resize: {
    locality: 'resize',
    fixedInputs: [1, 2],
    shape: (c) => {
      const s = c.need(0);
      const sizes = c.inputs[3]?.values;
      if (sizes) return [{ dims: [...sizes], itemBytes: s.itemBytes }];
      const scales = c.inputs[2]?.values ?? c.refuse('neither scales nor sizes are constant');
      return [{ dims: s.dims.map((d, i) => Math.floor(d * scales[i]!)), itemBytes: s.itemBytes }];
    },
  },
} satisfies Record<string, OpRule>;

/** The name of an op in the table. */
export type OpName = keyof typeof OPS;

/** The table's rule for an op, or undefined for an op a built graph does not hold. */
export function opRule(op: string | undefined): OpRule | undefined {
  return op !== undefined && Object.hasOwn(OPS, op) ? OPS[op as OpName] : undefined;
}
