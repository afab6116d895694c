// The graph-builder DSL: typed methods that append ONNX nodes and return value handles, named
// scopes so node and weight names read like module paths, and the finished ModelProto (bytes
// and text dump). It owns naming and validation of op arguments; the wire format is in
// onnx-proto.ts and the text form in dump.ts.
//
// Conventions that keep a built graph readable:
// - initializers are exactly the checkpoint weights, named by their checkpoint keys and kept at
//   their checkpoint shapes (a GroupNorm weight stays [C]; broadcasting is done by nodes);
// - every other literal (shapes, axes, scalars) is a Constant node, printed inline by the dump;
// - a node is named `<scope path>/<OpType>` (suffix `_1`, `_2`, … on repeats) and its single
//   output carries the node's name; multi-output nodes name outputs `<node>:<index>`;
// - ops that read every spatial position (groupNorm, attention) record themselves as sync
//   regions (sync.ts), which the model carries in its metadata_props.

import { DistVaeError, invalidArgument } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { dumpModel } from './dump.js';
import { DEFAULT_GROUP_NORM_FORM, groupNormNodes, type GroupNormForm } from './group-norm.js';
import { attr } from './attributes.js';
import {
  DataType,
  encodeModel,
  type AttributeProto,
  type DataTypeCode,
  type ModelProto,
  type NodeProto,
  type TensorProto,
  type ValueInfoProto,
} from './onnx-proto.js';
import { syncRegionsEntry, type AttentionRegion, type GroupNormRegion, type SyncRegion } from './sync.js';
import type { FileBytes } from '../bytes/file-bytes.js';
import { externalFloat32TensorProto, float32TensorProto, int64TensorProto } from './tensor-proto.js';

/** The ONNX opset every built graph imports (ai.onnx domain); ORT 1.30 runs all of it on CPU. */
export const OPSET_VERSION = 21;
/** IR version 10 is the one that introduced opset 21. */
export const IR_VERSION = 10;

/** A dimension of a graph input or output: a fixed size or a named dynamic axis. */
export type Dim = number | string;

/** A handle to a value (graph input, initializer or node output) of one builder. */
export interface Value {
  readonly name: string;
}

/** A second operand: a value, or a number that becomes a float32 scalar Constant. */
export type Operand = Value | number;

/**
 * A rewrite of attention scores before the softmax (Scope.attention), with the kind of mask it
 * computes when it is one the sharded run models (graph/sync.ts AttentionRegion.mask).
 */
export type ScoreMask = ((scores: Value) => Value) & { kind?: 'frame-causal' };

export interface ConvOptions {
  /** One number for every side, or 2·n numbers in ONNX order (all begins, then all ends). */
  pads?: number | readonly number[];
  strides?: number | readonly number[];
  dilations?: number | readonly number[];
  group?: number;
  /**
   * The kernel's spatial size; needed only when the weight is computed in the graph (e.g.
   * derived from a checkpoint weight, which onnxruntime then folds into a constant) rather than
   * an initializer, whose shape gives it.
   */
  kernelShape?: readonly number[];
}

export interface ConvTransposeOptions extends ConvOptions {
  outputPadding?: number | readonly number[];
}

export interface GroupNormOptions {
  groups: number;
  epsilon: number;
  /** How the normalisation is expressed in ONNX (default: the fastest on CPU); see group-norm.ts. */
  form?: GroupNormForm;
  /** The channel count when `scale` is computed (a slice of a checkpoint weight) rather than an initializer. */
  channels?: number;
}

export interface SliceOptions {
  starts: readonly number[];
  ends: readonly number[];
  axes?: readonly number[];
  steps?: readonly number[];
}

export interface PadOptions {
  mode?: 'constant' | 'reflect' | 'edge';
  /** Fill value for mode 'constant'. */
  value?: number;
}

export interface GemmOptions {
  alpha?: number;
  beta?: number;
  transA?: boolean;
  transB?: boolean;
}

function checkInts(field: string, values: readonly number[], min: number): void {
  values.forEach((v, i) => {
    if (!Number.isSafeInteger(v) || v < min) invalidArgument(`${field}[${i}]`, v, `an integer ≥ ${min}`);
  });
}

/** Expands a number to `count` copies, or checks an array has exactly `count` integers. */
function perAxis(field: string, value: number | readonly number[], count: number, min: number): number[] {
  const values = typeof value === 'number' ? new Array<number>(count).fill(value) : [...value];
  if (values.length !== count) invalidArgument(field, value, `one number or ${count} numbers`);
  checkInts(field, values, min);
  return values;
}

/** Mutable state shared by a builder and all its scopes. */
class GraphState {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  readonly inputs: ValueInfoProto[] = [];
  readonly outputs: ValueInfoProto[] = [];
  readonly initializerDims = new Map<string, readonly number[]>();
  readonly regions: SyncRegion[] = [];
  private readonly ownValues = new WeakSet<Value>();
  private readonly usedNames = new Set<string>();

  /** Reserves a name exactly as given (graph inputs, outputs, initializers). */
  claim(name: string, field: string): Value {
    if (name.length === 0) invalidArgument(field, name, 'a non-empty name');
    if (this.usedNames.has(name)) invalidArgument(field, name, 'a name not yet used in this graph');
    this.usedNames.add(name);
    return this.adopt(name);
  }

  /** A fresh name from a base: the base itself, else base_1, base_2, … */
  fresh(base: string): string {
    let name = base;
    for (let k = 1; this.usedNames.has(name); k++) name = `${base}_${k}`;
    this.usedNames.add(name);
    return name;
  }

  check(value: Value, field: string): string {
    if (!this.ownValues.has(value)) invalidArgument(field, value?.name, 'a value created by this graph builder');
    return value.name;
  }

  /** A handle for a name this graph defines (node outputs already named by fresh()). */
  adopt(name: string): Value {
    const value: Value = Object.freeze({ name });
    this.ownValues.add(value);
    return value;
  }
}

export class Scope {
  protected constructor(
    protected readonly state: GraphState,
    /** Dotted module path, e.g. `decoder.up_blocks.0`; empty at the root. */
    readonly path: string,
  ) {}

  /** A child scope: `decoder` → `decoder.up_blocks.0` (the name may itself contain dots). */
  scope(name: string): Scope {
    if (name.length === 0) invalidArgument('scope', name, 'a non-empty scope name');
    return new Scope(this.state, this.qualify(name));
  }

  /**
   * A float32 initializer named `<path>.<name>` (the checkpoint key), shape and data from `t`;
   * a tensor whose bytes lie in a file (`file`, as a lazily opened checkpoint's) stays there, as
   * external data, and its `data` is never read.
   */
  param(name: string, t: Tensor & { readonly file?: FileBytes }): Value {
    const key = this.qualify(name);
    const value = this.state.claim(key, 'initializer name');
    this.state.initializers.push(t.file ? externalFloat32TensorProto(key, t.dims, t.file) : float32TensorProto(key, t.dims, t.data));
    this.state.initializerDims.set(key, [...t.dims]);
    return value;
  }

  /** The checkpoint shape of an initializer, or undefined for computed values. */
  initializerDims(value: Value): readonly number[] | undefined {
    return this.state.initializerDims.get(this.state.check(value, 'value'));
  }

  // ---- convolution -------------------------------------------------------------------------

  conv(x: Value, weight: Value, bias: Value | undefined, options: ConvOptions = {}): Value {
    return this.convLike('Conv', x, weight, bias, options, []);
  }

  convTranspose(x: Value, weight: Value, bias: Value | undefined, options: ConvTransposeOptions = {}): Value {
    const spatial = this.kernelShape('ConvTranspose', weight, options).length;
    const extra =
      options.outputPadding === undefined ? [] : [attr.ints('output_padding', perAxis('outputPadding', options.outputPadding, spatial, 0))];
    return this.convLike('ConvTranspose', x, weight, bias, options, extra);
  }

  // ---- normalisation -----------------------------------------------------------------------

  /** GroupNorm as in PyTorch: statistics per (sample, group), affine per channel. */
  groupNorm(x: Value, scale: Value, bias: Value, options: GroupNormOptions): Value {
    const channels =
      options.channels !== undefined && this.initializerDims(scale) === undefined
        ? [options.channels]
        : this.weightDims('GroupNorm scale', scale);
    if (channels.length !== 1) invalidArgument('GroupNorm scale', channels, 'a 1-D [C] initializer');
    const c = channels[0]!;
    if (!Number.isSafeInteger(options.groups) || options.groups < 1 || c % options.groups !== 0) {
      invalidArgument('groups', options.groups, `a positive divisor of the channel count ${c}`);
    }
    this.checkEpsilon(options.epsilon);
    const first = this.state.nodes.length;
    const y = groupNormNodes(this, x, scale, bias, {
      channels: c,
      groups: options.groups,
      epsilon: options.epsilon,
      form: options.form ?? DEFAULT_GROUP_NORM_FORM,
    });
    this.recordRegion<GroupNormRegion>(first, 'GroupNorm', {
      kind: 'group-norm',
      input: x.name,
      output: y.name,
      scale: scale.name,
      bias: bias.name,
      groups: options.groups,
      epsilon: options.epsilon,
    });
    return y;
  }

  instanceNorm(x: Value, scale: Value, bias: Value, options: { epsilon: number }): Value {
    this.checkEpsilon(options.epsilon);
    return this.op('InstanceNormalization', [x, scale, bias], [attr.float('epsilon', options.epsilon)]);
  }

  layerNorm(x: Value, scale: Value, bias: Value | undefined, options: { epsilon: number; axis?: number }): Value {
    this.checkEpsilon(options.epsilon);
    return this.op('LayerNormalization', [x, scale, bias], [attr.int('axis', options.axis ?? -1), attr.float('epsilon', options.epsilon)]);
  }

  // ---- activations -------------------------------------------------------------------------

  relu(x: Value): Value {
    return this.op('Relu', [x]);
  }
  sigmoid(x: Value): Value {
    return this.op('Sigmoid', [x]);
  }
  tanh(x: Value): Value {
    return this.op('Tanh', [x]);
  }
  /** x·sigmoid(x); from the 'extended' level on, onnxruntime fuses the pair into one QuickGelu kernel. */
  silu(x: Value): Value {
    return this.mul(x, this.sigmoid(x));
  }

  // ---- elementwise arithmetic and reductions -----------------------------------------------

  add(a: Value, b: Operand): Value {
    return this.op('Add', [a, this.operand(b)]);
  }
  sub(a: Value, b: Operand): Value {
    return this.op('Sub', [a, this.operand(b)]);
  }
  mul(a: Value, b: Operand): Value {
    return this.op('Mul', [a, this.operand(b)]);
  }
  div(a: Value, b: Operand): Value {
    return this.op('Div', [a, this.operand(b)]);
  }
  pow(a: Value, b: Operand): Value {
    return this.op('Pow', [a, this.operand(b)]);
  }
  sqrt(x: Value): Value {
    return this.op('Sqrt', [x]);
  }

  reduceMean(x: Value, axes: readonly number[], keepDims = true): Value {
    return this.op('ReduceMean', [x, this.int64Constant(axes)], [attr.int('keepdims', keepDims ? 1 : 0)]);
  }

  clip(x: Value, min?: number, max?: number): Value {
    return this.op('Clip', [x, min === undefined ? undefined : this.scalar(min), max === undefined ? undefined : this.scalar(max)]);
  }

  // ---- resampling --------------------------------------------------------------------------

  /**
   * Nearest-neighbour resize by integer factors, one per axis (e.g. [1, 1, 2, 2]); equals
   * PyTorch `interpolate(scale_factor=s, mode='nearest')`, which reads source index floor(dst/s).
   */
  resizeNearest(x: Value, scales: readonly number[]): Value {
    checkInts('scales', scales, 1);
    const scalesTensor = this.constant({ dims: [scales.length], data: Float32Array.from(scales) });
    return this.op(
      'Resize',
      [x, undefined, scalesTensor],
      [attr.string('mode', 'nearest'), attr.string('coordinate_transformation_mode', 'asymmetric'), attr.string('nearest_mode', 'floor')],
    );
  }

  /** DCR matches ONNX's default; CRD is PyTorch's PixelShuffle. */
  depthToSpace(x: Value, blockSize: number, mode: 'DCR' | 'CRD'): Value {
    checkInts('blockSize', [blockSize], 1);
    return this.op('DepthToSpace', [x], [attr.int('blocksize', blockSize), attr.string('mode', mode)]);
  }

  // ---- linear algebra ----------------------------------------------------------------------

  matMul(a: Value, b: Value): Value {
    return this.op('MatMul', [a, b]);
  }

  gemm(a: Value, b: Value, c: Value | undefined, options: GemmOptions = {}): Value {
    return this.op(
      'Gemm',
      [a, b, c],
      [
        attr.float('alpha', options.alpha ?? 1),
        attr.float('beta', options.beta ?? 1),
        attr.int('transA', options.transA ? 1 : 0),
        attr.int('transB', options.transB ? 1 : 0),
      ],
    );
  }

  softmax(x: Value, axis = -1): Value {
    return this.op('Softmax', [x], [attr.int('axis', axis)]);
  }

  /**
   * Single-head attention core, channel-major: q (B, Nq, C) already scaled by 1/√C, k and v
   * (B, C, Nk) → (B, C, Nq) = v · softmax(q·k)ᵀ; `maskScores` may rewrite the (B, Nq, Nk)
   * scores before the softmax. Recorded as a sync region: every query reads every key, so a
   * sharded run gathers k and v from all bands. With `queryChunks` > 1 (no mask) the queries are
   * cut into that many row chunks (`queryRowChunks`), each a chain of its own, so only one
   * chunk's scores and probabilities are live at a time: the N × N matrices of a whole large
   * image would not fit (2048² px in SD: 32 GiB).
   */
  attention(q: Value, k: Value, v: Value, maskScores?: ScoreMask, queryChunks = 1): Value {
    checkInts('queryChunks', [queryChunks], 1);
    if (maskScores && queryChunks > 1) invalidArgument('queryChunks', queryChunks, '1 when the scores are masked');
    const first = this.state.nodes.length;
    let vt: Value | undefined;
    let mask: AttentionRegion['mask'];
    const core = (qs: Value): Value => {
      const scores = this.matMul(qs, k);
      let masked = scores;
      if (maskScores) {
        masked = maskScores(scores);
        mask = { kind: maskScores.kind ?? 'custom', scores: scores.name, masked: masked.name };
      }
      const probabilities = this.softmax(masked, -1);
      vt ??= this.transpose(v, [0, 2, 1]);
      return this.matMul(probabilities, vt);
    };
    // (probabilities · vᵀ)ᵀ: only the N × C product changes layout, never the N × N matrix.
    const product = queryChunks === 1 ? core(q) : this.concat(this.queryRowChunks(q, queryChunks).map(core), 1);
    const out = this.transpose(product, [0, 2, 1]);
    this.recordRegion<AttentionRegion>(first, 'attention', {
      kind: 'attention',
      ...(mask ? { mask } : {}),
      query: q.name,
      key: k.name,
      value: v.name,
      output: out.name,
    });
    return out;
  }

  /**
   * The rows (axis 1) of q (B, N, C) as `chunks` Slices, chunk i holding rows ⌊i·N/chunks⌋ up to
   * ⌊(i+1)·N/chunks⌋, with N read from q's shape when the graph runs (the runner's axes are
   * dynamic): every chunk non-empty for N ≥ chunks, at most ⌈N/chunks⌉ rows. Not one Split with
   * `num_outputs`: onnxruntime's WebGPU Split binds every output in one shader, over WebGPU's
   * per-shader storage-buffer count past 15 chunks ("Too many storage buffers in shader" on
   * lavapipe's 16), and Split-18 sizes chunks ⌈N/k⌉ and fails where fewer rows than that are left
   * for a later chunk (N ≤ k·(k−1), e.g. 15 chunks of 64 rows). A Slice binds one input and one
   * output; the Concat that joins the chunks is batched by onnxruntime itself (docs/design.md §13).
   */
  private queryRowChunks(q: Value, chunks: number): Value[] {
    const rows = this.op('Shape', [q], [attr.int('start', 1), attr.int('end', 2)]);
    // One small node pair per bound, not one vector of them: the shape inference folds only small tensors (FOLD_LIMIT).
    const divisor = this.int64Constant([chunks]);
    const bound = Array.from({ length: chunks + 1 }, (_, i) =>
      i === 0 ? this.int64Constant([0]) : i === chunks ? rows : this.op('Div', [this.op('Mul', [rows, this.int64Constant([i])]), divisor]),
    );
    const axis = this.int64Constant([1]);
    return Array.from({ length: chunks }, (_, i) => this.op('Slice', [q, bound[i]!, bound[i + 1]!, axis]));
  }

  /**
   * ReLU linear attention core (SANA's multi-scale linear attention), channel-major like
   * `attention`: q (B, Nq, H·d) and k (B, H·d, Nk), both already through ReLU, v (B, H·d, Nk) →
   * (B, H·d, Nq), head h reading channels [h·d, (h+1)·d) of each, with
   * out[:, n] = Σₘ v[:, m]·(k[:, m]·q[n]) / (Σₘ k[:, m]·q[n] + ε) per head. The heads are batched
   * inside the region ((B·H, d, N)), so every value outside it keeps the batch on axis 0. As
   * diffusers does, v gets a row of ones so one product k·[v; 1]ᵀ (d × (d + 1) per head) carries
   * both the numerator's K·Vᵀ and the denominator's key sums: no N × N matrix exists. diffusers'
   * softmax-free "quadratic" form for H·W ≤ d is the same function (only the order of the float32
   * sums differs), so this one core serves both. Recorded as an attention sync region whose
   * `summary` is that d × (d + 1) sum: a sharded run computes it per band and all-reduces it.
   */
  linearAttention(q: Value, k: Value, v: Value, options: { heads: number; headDim: number; epsilon: number }): Value {
    const { heads, headDim, epsilon } = options;
    checkInts('heads', [heads, headDim], 1);
    if (!(epsilon > 0 && epsilon < 1)) invalidArgument('epsilon', epsilon, 'a number in (0, 1)');
    const first = this.state.nodes.length;
    const perHead = (x: Value) => this.reshape(x, [-1, headDim, 0]);
    // The keys and values enter only through this sum over positions (a shard all-reduces it).
    const padded = this.pad(perHead(v), [0, 0, 0, 0, 1, 0], { value: 1 });
    const summary = this.matMul(perHead(k), this.transpose(padded, [0, 2, 1]));
    const qh = this.transpose(perHead(this.transpose(q, [0, 2, 1])), [0, 2, 1]);
    const product = this.matMul(qh, summary);
    const numerator = this.slice(product, { starts: [0], ends: [-1], axes: [2] });
    const denominator = this.slice(product, { starts: [-1], ends: [2 ** 31 - 1], axes: [2] });
    const perHeadOut = this.transpose(this.div(numerator, this.add(denominator, epsilon)), [0, 2, 1]);
    const out = this.reshape(perHeadOut, [-1, heads * headDim, 0]);
    this.recordRegion<AttentionRegion>(first, 'attention', {
      kind: 'attention',
      form: 'relu-linear',
      summary: { value: summary.name, heads, headDim },
      query: q.name,
      key: k.name,
      value: v.name,
      output: out.name,
    });
    return out;
  }

  // ---- shape manipulation ------------------------------------------------------------------

  transpose(x: Value, perm: readonly number[]): Value {
    checkInts('perm', perm, 0);
    return this.op('Transpose', [x], [attr.ints('perm', perm)]);
  }

  /** ONNX Reshape: 0 copies the input's dimension, -1 is inferred. A Value gives a computed shape. */
  reshape(x: Value, shape: readonly number[] | Value): Value {
    const target = Array.isArray(shape) ? this.int64Constant(shape as readonly number[]) : (shape as Value);
    return this.op('Reshape', [x, target]);
  }

  flatten(x: Value, axis = 1): Value {
    return this.op('Flatten', [x], [attr.int('axis', axis)]);
  }

  unsqueeze(x: Value, axes: readonly number[]): Value {
    return this.op('Unsqueeze', [x, this.int64Constant(axes)]);
  }

  /** The shape of x as an int64 vector. */
  shape(x: Value): Value {
    return this.op('Shape', [x]);
  }

  /** Pads in ONNX order: begins of every axis, then ends (length 2·rank). */
  pad(x: Value, pads: readonly number[], options: PadOptions = {}): Value {
    const mode = options.mode ?? 'constant';
    const value = mode === 'constant' ? this.scalar(options.value ?? 0) : undefined;
    return this.op('Pad', [x, this.int64Constant(pads), value], [attr.string('mode', mode)]);
  }

  slice(x: Value, options: SliceOptions): Value {
    const { starts, ends } = options;
    if (ends.length !== starts.length) invalidArgument('ends', ends, `${starts.length} numbers, one per start`);
    const axes = options.axes === undefined ? undefined : this.int64Constant(options.axes);
    const steps = options.steps === undefined ? undefined : this.int64Constant(options.steps);
    return this.op('Slice', [x, this.int64Constant(starts), this.int64Constant(ends), axes, steps]);
  }

  concat(xs: readonly Value[], axis: number): Value {
    if (xs.length === 0) invalidArgument('concat inputs', xs.length, 'at least one value');
    return this.op('Concat', xs, [attr.int('axis', axis)]);
  }

  split(x: Value, sizes: readonly number[], axis: number): Value[] {
    checkInts('split sizes', sizes, 0);
    return this.node('Split', [x, this.int64Constant(sizes)], [attr.int('axis', axis)], sizes.length);
  }

  cast(x: Value, to: DataTypeCode): Value {
    return this.op('Cast', [x], [attr.int('to', to)]);
  }

  identity(x: Value): Value {
    return this.op('Identity', [x]);
  }

  // ---- literals ----------------------------------------------------------------------------

  /** A float32 Constant node holding `t` (for literals; weights belong in `param`). */
  constant(t: Tensor): Value {
    return this.constantNode(float32TensorProto('', t.dims, t.data));
  }

  /** A float32 scalar (0-d) Constant. */
  scalar(v: number): Value {
    return this.constant({ dims: [], data: Float32Array.of(v) });
  }

  /** A 1-D int64 Constant (shapes, axes, pads). */
  int64Constant(values: readonly number[]): Value {
    return this.constantNode(int64TensorProto('', [values.length], values));
  }

  /** A Constant node whose output is `value`. */
  private constantNode(value: TensorProto): Value {
    const name = this.state.fresh(this.qualifyNode('Constant'));
    this.state.nodes.push({ name, op_type: 'Constant', input: [], output: [name], attribute: [attr.tensor('value', value)] });
    return this.state.adopt(name);
  }

  // ---- generic node ------------------------------------------------------------------------

  /**
   * Appends a node of any ai.onnx op; `undefined` inputs become ONNX's empty "absent" input.
   * Typed methods above are preferred; this exists for ops they do not cover.
   */
  node(opType: string, inputs: readonly (Value | undefined)[], attributes: readonly AttributeProto[] = [], outputCount = 1): Value[] {
    const inputNames = inputs.map((v, i) => (v === undefined ? '' : this.state.check(v, `${opType} input ${i}`)));
    while (inputNames.length > 0 && inputNames[inputNames.length - 1] === '') inputNames.pop();
    const name = this.state.fresh(this.qualifyNode(opType));
    const outputs = outputCount === 1 ? [name] : Array.from({ length: outputCount }, (_, i) => `${name}:${i}`);
    this.state.nodes.push({ name, op_type: opType, input: inputNames, output: outputs, attribute: [...attributes] });
    return outputs.map((o) => this.state.adopt(o));
  }

  /** A single-output node. */
  op(opType: string, inputs: readonly (Value | undefined)[], attributes: readonly AttributeProto[] = []): Value {
    return this.node(opType, inputs, attributes, 1)[0]!;
  }

  private convLike(opType: string, x: Value, weight: Value, bias: Value | undefined, options: ConvOptions, extra: AttributeProto[]): Value {
    const kernel = this.kernelShape(opType, weight, options);
    const spatial = kernel.length;
    const group = options.group ?? 1;
    checkInts('group', [group], 1);
    return this.op(
      opType,
      [x, weight, bias],
      [
        attr.ints('kernel_shape', kernel),
        attr.ints('pads', perAxis('pads', options.pads ?? 0, 2 * spatial, 0)),
        attr.ints('strides', perAxis('strides', options.strides ?? 1, spatial, 1)),
        attr.ints('dilations', perAxis('dilations', options.dilations ?? 1, spatial, 1)),
        attr.int('group', group),
        ...extra,
      ],
    );
  }

  private kernelShape(opType: string, weight: Value, options: ConvOptions): readonly number[] {
    if (options.kernelShape !== undefined) {
      checkInts('kernelShape', options.kernelShape, 1);
      if (options.kernelShape.length < 1) invalidArgument('kernelShape', options.kernelShape, 'one size per spatial axis');
      return [...options.kernelShape];
    }
    const w = this.weightDims(`${opType} weight`, weight);
    if (w.length < 3) invalidArgument(`${opType} weight dims`, w, 'rank ≥ 3 ([out, in/group, k1, …])');
    return w.slice(2);
  }

  private weightDims(field: string, value: Value): readonly number[] {
    const dims = this.initializerDims(value);
    if (dims === undefined) invalidArgument(field, value.name, 'an initializer created with param()');
    return dims;
  }

  /**
   * Records the nodes appended since `first` as a sync region, named by the module path (`fallback`
   * at the root), so locality analysis and staging find it in the model alone.
   */
  private recordRegion<R extends SyncRegion>(first: number, fallback: string, region: Omit<R, 'name' | 'nodes'>): void {
    const nodes = this.state.nodes.slice(first).map((n) => n.name!);
    this.state.regions.push({ ...region, name: this.path || fallback, nodes } as R);
  }

  private checkEpsilon(epsilon: number): void {
    if (!(epsilon > 0 && epsilon < 1)) invalidArgument('epsilon', epsilon, 'a number in (0, 1)');
  }

  private operand(v: Operand): Value {
    return typeof v === 'number' ? this.scalar(v) : v;
  }

  private qualify(name: string): string {
    return this.path ? `${this.path}.${name}` : name;
  }

  private qualifyNode(opType: string): string {
    return this.path ? `${this.path}/${opType}` : opType;
  }
}

export interface GraphBuilderOptions {
  /** Free text stored in the model's doc_string. */
  docString?: string;
}

/** The root scope of a graph: declares inputs and outputs and emits the model. */
export class GraphBuilder extends Scope {
  private readonly options: GraphBuilderOptions;

  constructor(
    readonly name: string,
    options: GraphBuilderOptions = {},
  ) {
    super(new GraphState(), '');
    this.options = options;
  }

  /** A float32 graph input; string dims are named dynamic axes (e.g. 'batch', 'height'). */
  input(name: string, dims: readonly Dim[]): Value {
    const info = valueInfo(name, dims);
    const value = this.state.claim(name, 'input name');
    this.state.inputs.push(info);
    return value;
  }

  /**
   * Declares `value` a graph output called `name` (an Identity node renames it when needed).
   * A graph may have several outputs; `dims` documents the expected shape when known.
   */
  output(name: string, value: Value, dims?: readonly Dim[]): void {
    const source = this.state.check(value, `output ${name}`);
    if (source !== name) {
      this.state.claim(name, 'output name');
      this.state.nodes.push({ name, op_type: 'Identity', input: [source], output: [name], attribute: [] });
    } else if (this.state.outputs.some((o) => o.name === name)) {
      invalidArgument('output name', name, 'a name not yet declared as an output');
    }
    this.state.outputs.push(valueInfo(name, dims));
  }

  toModel(): ModelProto {
    if (this.state.outputs.length === 0) throw new DistVaeError('INVALID_ARGUMENT', `graph ${this.name} declares no outputs`);
    return {
      ir_version: IR_VERSION,
      opset_import: [{ domain: '', version: OPSET_VERSION }],
      producer_name: 'distvae',
      ...(this.options.docString ? { doc_string: this.options.docString } : {}),
      ...(this.state.regions.length > 0 ? { metadata_props: [syncRegionsEntry(this.state.regions)] } : {}),
      graph: {
        name: this.name,
        node: [...this.state.nodes],
        initializer: [...this.state.initializers],
        input: [...this.state.inputs],
        output: [...this.state.outputs],
      },
    };
  }

  toModelBytes(): Uint8Array {
    return encodeModel(this.toModel());
  }

  dump(): string {
    return dumpModel(this.toModel());
  }
}

function valueInfo(name: string, dims: readonly Dim[] | undefined): ValueInfoProto {
  const tensorType: NonNullable<ValueInfoProto['type']>['tensor_type'] = { elem_type: DataType.FLOAT };
  if (dims !== undefined) {
    tensorType.shape = {
      dim: dims.map((d, i) => {
        if (typeof d === 'string') {
          if (d.length === 0) invalidArgument(`${name} dims[${i}]`, d, 'a non-empty axis name or a non-negative integer');
          return { dim_param: d };
        }
        if (!Number.isSafeInteger(d) || d < 0) invalidArgument(`${name} dims[${i}]`, d, 'a non-empty axis name or a non-negative integer');
        return { dim_value: d };
      }),
    };
  }
  return { name, type: { tensor_type: tensorType } };
}
