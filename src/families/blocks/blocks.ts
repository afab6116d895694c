// Shared decoder building blocks (diffusers' ResnetBlock2D, single-head mid-block Attention,
// UpDecoderBlock2D with Upsample2D, UNetMidBlock2D). Each is one description: a graph function
// that appends the block's nodes and, where it reads a parameter, declares it (checkpoint key,
// shape, synthetic init). A decoder's parameter list is what building its graph asks for
// (`recordParams`: the graph built once over placeholders), so the list and the graph cannot
// drift apart.
//
// Video families reuse the pattern: convolutions go through a `ConvFlavour` (2-D here; a causal
// 3-D flavour has its own keys, e.g. `conv1.conv.weight`, and padding), and GroupNorm and the
// attention block read the rank from the tensor at run time, so they serve 5-D inputs as they are.

import { DistVaeError } from '../../errors.js';
import type { GraphBuilder, Scope, ScoreMask, Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamInit, ParamSpec } from '../../weights/synthetic.js';
import type { ResolvedConfig } from '../types.js';

/** diffusers' hard-coded epsilon of every decoder GroupNorm (resnets, attention, conv_norm_out). */
export const DECODER_NORM_EPSILON = 1e-6;

/**
 * Synthetic-init gains (weights draw N(0, (gain/√fanIn)²)): a conv fed by SiLU compensates
 * SiLU's second moment (E[silu(z)²] ≈ 0.356 for z ~ N(0, 1), so gain 1/√0.356 ≈ 1.68); the last
 * layer of a residual branch is damped so the residual stream grows slowly with depth.
 */
export const GAIN_AFTER_SILU = 1.68;
export const GAIN_RESIDUAL_BRANCH_END = 0.5;

/** Where a graph's parameters come from, each asked for by its full spec where the graph reads it. */
export interface ParamSource {
  take(spec: ParamSpec): Tensor;
  /**
   * The graph is built only to list its parameters: pieces whose usual spelling allocates
   * per-channel constants take a spelling that allocates none (the parameters are the same), so
   * listing an absurdly wide config costs what its layer count does.
   */
  readonly listing?: boolean;
}

/**
 * The bound checkpoint tensors as a graph reads them: each key is taken at most once, with the
 * shape the graph declares, and a finished graph must have taken every key it was given.
 */
export class WeightTable implements ParamSource {
  private readonly unused: Set<string>;

  constructor(private readonly weights: ReadonlyMap<string, Tensor>) {
    this.unused = new Set(weights.keys());
  }

  take(spec: ParamSpec): Tensor {
    const t = this.weights.get(spec.name);
    if (!t) throw new DistVaeError('WEIGHTS_MISMATCH', `the decoder graph needs ${spec.name}, which the bound weights lack`);
    if (t.dims.length !== spec.dims.length || t.dims.some((d, i) => d !== spec.dims[i]))
      throw new DistVaeError(
        'WEIGHTS_MISMATCH',
        `the decoder graph reads ${spec.name} as [${spec.dims.join(', ')}], bound as [${t.dims.join(', ')}]`,
      );
    if (!this.unused.delete(spec.name)) throw new DistVaeError('WEIGHTS_MISMATCH', `the decoder graph read ${spec.name} twice`);
    return t;
  }

  /** Throws when a given key was never read: the weights are not this graph's. */
  assertAllTaken(graph: string): void {
    if (this.unused.size > 0) {
      throw new DistVaeError(
        'WEIGHTS_MISMATCH',
        `the ${graph} graph did not use ${this.unused.size} bound weight(s): ${[...this.unused].slice(0, 8).join(', ')}`,
      );
    }
  }
}

/** Placeholder data of a recorded parameter: the graph reads only shapes while it is recorded. */
const NO_DATA = new Float32Array(0);

/**
 * The parameters `build` asks for, in the order it asks: a decoder's parameter list, from its
 * graph built once over placeholders (no weight-sized buffer is allocated, so budgets can be
 * sized from it before any weight is read).
 */
export function recordParams(build: (source: ParamSource) => unknown): ParamSpec[] {
  const params: ParamSpec[] = [];
  const names = new Set<string>();
  build({
    listing: true,
    take(spec) {
      if (names.has(spec.name)) throw new DistVaeError('WEIGHTS_MISMATCH', `the decoder graph read ${spec.name} twice`);
      names.add(spec.name);
      params.push(spec);
      return { dims: [...spec.dims], data: NO_DATA };
    },
  });
  return params;
}

/** A graph's two uses from its one description: its parameter list, and the graph over bound weights. */
export interface GraphOf {
  /** Every parameter the graph reads, with its checkpoint key, shape and synthetic init. */
  params(config: ResolvedConfig): ParamSpec[];
  /**
   * The graph with the bound weights as initializers under their checkpoint keys, refusing weights
   * it left unread; `attentionChunks` splits attention queries (the runner's choice for large inputs);
   * `moments` (only graphs that take it: the FamilyEncoder's `moments` says which) outputs the
   * distribution's moments (B, 2C, …) instead of its mean.
   */
  build(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, options?: GraphOptions): GraphBuilder;
}

/** What a `GraphOf` builds beyond the weights: attention chunking, and an encoder's moments instead of its mean. */
export interface GraphOptions {
  attentionChunks?: number;
  moments?: boolean;
}

/** `GraphOf` an encoder graph function (its refusals name the class's encoder). */
export function encoderGraphOf(
  graph: (config: ResolvedConfig, source: ParamSource, attentionChunks: number, moments: boolean) => GraphBuilder,
): GraphOf {
  return {
    params: (config) => recordParams((source) => graph(config, source, 1, false)),
    build: (config, weights, options = {}) => {
      const table = new WeightTable(weights);
      const g = graph(config, table, options.attentionChunks ?? 1, options.moments === true);
      table.assertAllTaken(`${config.className} encoder`);
      return g;
    },
  };
}

/** A module of the checkpoint and of the graph at once: its scope names nodes and keys alike. */
export class Module {
  constructor(
    readonly scope: Scope,
    readonly weights: ParamSource,
  ) {}

  child(name: string): Module {
    return new Module(this.scope.scope(name), this.weights);
  }

  /** The checkpoint key of a parameter of this module. */
  key(name: string): string {
    return this.scope.path ? `${this.scope.path}.${name}` : name;
  }

  /** The parameter's spec: `gain` scales a conv's or linear's synthetic init (other inits carry none). */
  spec(name: string, dims: readonly number[], init: ParamInit, gain?: number): ParamSpec {
    return gain === undefined ? { name: this.key(name), dims, init } : { name: this.key(name), dims, init, gain };
  }

  /** The parameter, declared by its shape and init, as a graph initializer named by its checkpoint key. */
  param(name: string, dims: readonly number[], init: ParamInit, gain?: number): Value {
    return this.scope.param(name, this.weights.take(this.spec(name, dims, init, gain)));
  }

  /** Declares a parameter the module owns that this graph does not read (it stays in the parameter list). */
  skip(name: string, dims: readonly number[], init: ParamInit, gain?: number): void {
    this.weights.take(this.spec(name, dims, init, gain));
  }
}

/** A conv's `weight` [cout, cin, ...kernel] (init scaled by `gain`) and `bias` [cout]. */
export function convWeights(m: Module, cin: number, cout: number, kernel: readonly number[], gain = 1): [Value, Value] {
  return [m.param('weight', [cout, cin, ...kernel], 'conv', gain), m.param('bias', [cout], 'bias')];
}

/** A norm's affine `weight` and `bias` [channels]. */
export function normWeights(m: Module, channels: number): [Value, Value] {
  return [m.param('weight', [channels], 'norm-weight'), m.param('bias', [channels], 'norm-bias')];
}

/** A Linear's `weight` [out, in] (init scaled by `gain`) and `bias` [out]. */
export function linearWeights(m: Module, inFeatures: number, outFeatures: number, gain = 1): [Value, Value] {
  return [m.param('weight', [outFeatures, inFeatures], 'linear', gain), m.param('bias', [outFeatures], 'bias')];
}

// ---- convolutions -------------------------------------------------------------------------

/**
 * How a family spells a same-size convolution module (cin → cout, kernel k on every axis, `gain`
 * for the synthetic init): its keys and shapes, and its nodes, padded so the size is kept.
 */
export interface ConvFlavour {
  apply(m: Module, x: Value, cin: number, cout: number, kernel: number, gain?: number): Value;
}

/** nn.Conv2d(cin, cout, k, padding=k//2) with bias: keys `<key>.weight` [cout, cin, k, k], `<key>.bias`. */
export const conv2d: ConvFlavour = {
  apply(m, x, cin, cout, kernel, gain = 1) {
    const [weight, bias] = convWeights(m, cin, cout, [kernel, kernel], gain);
    return m.scope.conv(x, weight, bias, { pads: Math.floor(kernel / 2) });
  },
};

// ---- space-to-depth down-samplers ---------------------------------------------------------
//
// Encoders that move 2×2 pixels to channels (HunyuanImage's down blocks, DC-AE's DCDownBlock2d)
// are spelled as stride-2 convolutions, ops the locality analysis and the row-sharding
// machinery already model (a Slice with steps on a spatial axis they do not).

/** Channel order of a 2× space-to-depth: 'DCR' (r1·2 + r2)·C + c (ONNX SpaceToDepth), 'CRD' c·4 + r1·2 + r2 (PyTorch's pixel_unshuffle). */
export type SpaceToDepthOrder = 'DCR' | 'CRD';

/**
 * A 3×3 conv (stride 1, padding 1; weight [C, cin, 3, 3], bias [C]) followed by a 2× space-to-depth
 * in `order`, as one 4×4 stride-2 conv: sub-pixel (r1, r2) of conv channel c is the 3×3 kernel at
 * offset (r1, r2) of a 4×4 one (built in the graph from the checkpoint weight, which onnxruntime
 * folds into a constant).
 */
export function convSpaceToDepth(
  m: Module,
  x: Value,
  weight: Value,
  bias: Value,
  cin: number,
  channels: number,
  order: SpaceToDepthOrder,
): Value {
  const sc = m.scope;
  const kernels = [0, 1].flatMap((r1) => [0, 1].map((r2) => sc.pad(weight, [0, 0, r1, r2, 0, 0, 1 - r1, 1 - r2])));
  const biases = [bias, bias, bias, bias];
  const [w, b] =
    order === 'DCR'
      ? [sc.concat(kernels, 0), sc.concat(biases, 0)]
      : [
          sc.reshape(
            sc.concat(
              kernels.map((k) => sc.unsqueeze(k, [1])),
              1,
            ),
            [4 * channels, cin, 4, 4],
          ),
          sc.reshape(
            sc.concat(
              biases.map((v) => sc.unsqueeze(v, [1])),
              1,
            ),
            [4 * channels],
          ),
        ];
  return sc.conv(x, w, b, { kernelShape: [4, 4], pads: 1, strides: 2 });
}

/**
 * A `kernel`-sized conv with stride `kernel` and constant weights `weight(o, c, r1, r2)` (cout ×
 * cin × kernel²): the channel-group means of a space-to-depth (kernel 2) or of the channels
 * themselves (kernel 1) that these encoders add as shortcuts.
 */
export function groupMeanConv(
  m: Module,
  x: Value,
  cout: number,
  weight: (o: number, c: number, r1: number, r2: number) => number,
  cin: number,
  kernel: number,
): Value {
  const data = new Float32Array(cout * cin * kernel * kernel);
  for (let o = 0; o < cout; o++)
    for (let c = 0; c < cin; c++)
      for (let r1 = 0; r1 < kernel; r1++)
        for (let r2 = 0; r2 < kernel; r2++) data[((o * cin + c) * kernel + r1) * kernel + r2] = weight(o, c, r1, r2);
  const w = m.scope.constant({ dims: [cout, cin, kernel, kernel], data });
  return m.scope.conv(x, w, undefined, { kernelShape: [kernel, kernel], strides: kernel });
}

// ---- normalisation ------------------------------------------------------------------------

export interface NormSettings {
  groups: number;
  epsilon: number;
}

/** GroupNorm of the module `m` (keys `weight`, `bias`) over `channels`, any rank. */
export function groupNorm(m: Module, x: Value, channels: number, norm: NormSettings): Value {
  const [weight, bias] = normWeights(m, channels);
  // The native form holds no [C] constants (group-norm.ts).
  return m.scope.groupNorm(x, weight, bias, m.weights.listing ? { ...norm, form: 'native' } : norm);
}

/** GroupNorm then SiLU: the pre-activation every resnet conv and the decoder's conv_out see. */
export function groupNormSilu(m: Module, x: Value, channels: number, norm: NormSettings): Value {
  return m.scope.silu(groupNorm(m, x, channels, norm));
}

// ---- resnet block -------------------------------------------------------------------------

export interface BlockSettings {
  norm: NormSettings;
  conv: ConvFlavour;
}

/** GroupNorm, SiLU, then a 3×3 conv of the settings' flavour: the unit resnets and decoders' output heads repeat. */
export function normSiluConv(
  norm: Module,
  conv: Module,
  x: Value,
  cin: number,
  cout: number,
  s: BlockSettings,
  gain = GAIN_AFTER_SILU,
): Value {
  return s.conv.apply(conv, groupNormSilu(norm, x, cin, s.norm), cin, cout, 3, gain);
}

/**
 * ResnetBlock2D without time embedding (norm1, conv1, norm2, conv2, conv_shortcut 1×1 when
 * cin ≠ cout): out = shortcut(x) + conv2(silu(norm2(conv1(silu(norm1(x)))))); dropout is the identity at inference.
 */
export function resnetBlock(m: Module, x: Value, cin: number, cout: number, s: BlockSettings): Value {
  let h = normSiluConv(m.child('norm1'), m.child('conv1'), x, cin, cout, s);
  h = normSiluConv(m.child('norm2'), m.child('conv2'), h, cout, cout, s, GAIN_AFTER_SILU * GAIN_RESIDUAL_BRANCH_END);
  // Other conv flavours (causal 3-D) keep their own 1×1 conv and weight names.
  const shortcut =
    cin === cout
      ? x
      : s.conv === conv2d
        ? pointwise(m.child('conv_shortcut'), x, h, cin, cout)
        : s.conv.apply(m.child('conv_shortcut'), x, cin, cout, 1);
  return m.scope.add(shortcut, h);
}

/**
 * A 1×1 conv of x as one MatMul over its channels, x viewed as (B, C, H·W) and the result given
 * the shape of `like`: onnxruntime runs a 1×1 Conv in its blocked (NCHWc) layout, which first
 * copies x — a resnet's widest input — into that layout, while a MatMul reads it in place.
 */
function pointwise(m: Module, x: Value, like: Value, cin: number, cout: number): Value {
  const sc = m.scope;
  const [kernel, bias] = convWeights(m, cin, cout, [1, 1]);
  const weight = sc.reshape(kernel, [cout, cin]);
  const y = sc.add(sc.matMul(weight, sc.reshape(x, [0, cin, -1])), sc.reshape(bias, [cout, 1]));
  return sc.reshape(y, sc.shape(like));
}

// ---- attention ----------------------------------------------------------------------------

/**
 * The VAE mid-block Attention (one head of width C: group_norm, to_q, to_k, to_v, to_out.0).
 * Single-head self-attention over every position of x (B, C, …), GroupNorm first and the
 * residual added after to_out. The N × N probabilities are never transposed (at a whole-image
 * decode they are the largest tensor of the graph): q and k are projected channel-major
 * (W·t on t = (B, C, N)), and only N × C tensors change layout. The 1/√C scale is applied to
 * q rather than to the N × N scores. `maskScores`, when given, rewrites the (B, N query,
 * N key) scores before the softmax (HunyuanVideo's frame-causal mask). `keys` says how the
 * checkpoint names its modules and shapes its projections (diffusers' Attention by default).
 */
export function attentionBlock(
  m: Module,
  x: Value,
  c: number,
  norm: NormSettings,
  maskScores?: ScoreMask,
  queryChunks = 1,
  keys: AttentionKeys = DIFFUSERS_ATTENTION_KEYS,
): Value {
  const sc = m.scope;
  const t = sc.reshape(groupNorm(m.child(keys.norm), x, c, norm), [0, c, -1]);
  const project = (name: string, input: Value, gain?: number): Value => {
    const p = m.child(name);
    // A 1×1 conv's [C, C, 1, 1] kernel is the same matrix as a Linear's [C, C] (onnxruntime folds the reshape).
    const [weight, bias] = keys.projections === 'linear' ? linearWeights(p, c, c, gain) : convWeights(p, c, c, [1, 1], gain);
    const matrix = keys.projections === 'linear' ? weight : sc.reshape(weight, [c, c]);
    return sc.add(sc.matMul(matrix, input), sc.reshape(bias, [c, 1]));
  };
  const q = sc.transpose(sc.mul(project(keys.q, t), 1 / Math.sqrt(c)), [0, 2, 1]);
  const k = project(keys.k, t);
  const v = project(keys.v, t);
  const out = project(keys.out, sc.attention(q, k, v, maskScores, queryChunks), GAIN_RESIDUAL_BRANCH_END);
  return sc.add(sc.reshape(out, sc.shape(x)), x);
}

/** How a checkpoint names a single-head mid-block attention's modules, and whether its projections are Linears or 1×1 convs. */
export interface AttentionKeys {
  norm: string;
  q: string;
  k: string;
  v: string;
  out: string;
  projections: 'linear' | 'conv1x1';
}

/** diffusers' `Attention` (AutoencoderKL, HunyuanVideo): `group_norm`, Linear `to_q`/`to_k`/`to_v`/`to_out.0`. */
export const DIFFUSERS_ATTENTION_KEYS: AttentionKeys = {
  norm: 'group_norm',
  q: 'to_q',
  k: 'to_k',
  v: 'to_v',
  out: 'to_out.0',
  projections: 'linear',
};

// ---- up block and mid block ----------------------------------------------------------------

/**
 * How Upsample2D's (nearest 2×, then a 3×3 conv at `conv`) nearest-2× upsample + 3×3 conv is spelled. Same function, different work:
 * - 'resize-conv': diffusers' literal form (Resize, then the conv on 4× the pixels);
 * - 'polyphase': output pixel (2i+a, 2j+b) only ever sees input rows {i−1, i} (a = 0) or
 *   {i, i+1} (a = 1), and likewise columns, with the 3×3 taps that land on the same input pixel
 *   summed. So four 2×2 convs on the low-resolution input (4/9 of the MACs), one per phase
 *   (a, b) with its padding on the side it reads, then DepthToSpace interleaves them. The
 *   phase kernels are computed in the graph from the checkpoint weight (onnxruntime folds them
 *   into constants when the session is created), so initializers stay the checkpoint's tensors.
 * bench/sd-decoder.md has the measurements (and the spellings that lost: one conv with 4·C
 * outputs plus slices, and ConvTranspose 4×4 stride 2).
 */
export type UpsamplerForm = 'resize-conv' | 'polyphase';

export const UPSAMPLER_FORMS: readonly UpsamplerForm[] = ['resize-conv', 'polyphase'];

/** The faster spelling on onnxruntime's CPU provider (bench/sd-decoder.md). */
export const DEFAULT_UPSAMPLER_FORM: UpsamplerForm = 'polyphase';

/** Row taps of phase a: which of the 3×3 kernel's rows act on input rows (i−1+a, i+a). */
const PHASE_TAPS: readonly (readonly number[])[] = [
  [1, 0, 0, 0, 1, 1],
  [1, 1, 0, 0, 0, 1],
];

/** The 2×2 kernel of phase (a, b): rows·W·colsᵀ per (out, in) channel pair. */
function phaseKernel(sc: Scope, weight: Value, a: number, b: number): Value {
  const rows = sc.constant({ dims: [2, 3], data: Float32Array.from(PHASE_TAPS[a]!) });
  const colsT = sc.transpose(sc.constant({ dims: [2, 3], data: Float32Array.from(PHASE_TAPS[b]!) }), [1, 0]);
  return sc.matMul(sc.matMul(rows, weight), colsT);
}

export function upsampler2d(m: Module, x: Value, channels: number, form: UpsamplerForm = DEFAULT_UPSAMPLER_FORM): Value {
  const c = m.child('conv');
  const sc = m.scope;
  if (form === 'resize-conv') return conv2d.apply(c, sc.resizeNearest(x, [1, 1, 2, 2]), channels, channels, 3);
  const [weight, bias] = convWeights(c, channels, channels, [3, 3]);
  const phases = [0, 1].flatMap((a) =>
    [0, 1].map((b) => sc.conv(x, phaseKernel(sc, weight, a, b), bias, { kernelShape: [2, 2], pads: [1 - a, 1 - b, a, b] })),
  );
  return sc.depthToSpace(sc.concat(phases, 1), 2, 'DCR');
}

// ---- channel parts -------------------------------------------------------------------------
//
// Where an up block widens the image but narrows the channels (SD: 256 channels upsampled to
// the full resolution, then a resnet down to 128), the upsampler's output and the first
// GroupNorm chain after it are the largest tensors of the decode, and onnxruntime holds that
// input (kept for the 1×1 shortcut, which it runs last) next to two out-of-place copies of it
// (InstanceNormalization, the affine, SiLU, the NCHWc reorder). Emitted as `parts` slices of
// cout channels instead, no full-resolution tensor is wider than cout: the upsampler computes
// each slice from its own output channels, GroupNorm runs per slice (a group never straddles
// two: cout is a multiple of the channels per group), and conv1 and the shortcut sum one conv
// per slice of their input channels. Same function; only the summation order of the two convs
// changes. bench/memory.md has what it saves.

/** A slice of `count` channels at `index` along `axis` of a checkpoint weight (onnxruntime folds it into a constant). */
function channelSlice(sc: Scope, w: Value, axis: number, index: number, count: number): Value {
  return sc.slice(w, { starts: [index * count], ends: [(index + 1) * count], axes: [axis] });
}

/**
 * How many cout-channel parts the input of a cin → cout resnet can be split into, GroupNorm
 * groups intact: cin / cout when cout divides cin and is a multiple of cin's channels per group, else 1.
 */
export function channelParts(cin: number, cout: number, groups: number): number {
  const perGroup = cin / groups;
  return cin > cout && cin % cout === 0 && Number.isInteger(perGroup) && cout % perGroup === 0 ? cin / cout : 1;
}

/** Upsample2D whose output arrives as `parts` equal channel slices (in channel order). */
export function upsampler2dParts(m: Module, x: Value, channels: number, form: UpsamplerForm, parts: number): Value[] {
  const c = m.child('conv');
  const sc = m.scope;
  const count = channels / parts;
  const [weight, bias] = convWeights(c, channels, channels, [3, 3]);
  const resized = form === 'resize-conv' ? sc.resizeNearest(x, [1, 1, 2, 2]) : undefined;
  return Array.from({ length: parts }, (_, p) => {
    const w = channelSlice(sc, weight, 0, p, count);
    const b = channelSlice(sc, bias, 0, p, count);
    if (resized) return sc.conv(resized, w, b, { kernelShape: [3, 3], pads: 1 });
    const phases = [0, 1].flatMap((a) =>
      [0, 1].map((q) => sc.conv(x, phaseKernel(sc, w, a, q), b, { kernelShape: [2, 2], pads: [1 - a, 1 - q, a, q] })),
    );
    return sc.depthToSpace(sc.concat(phases, 1), 2, 'DCR');
  });
}

/** resnetBlock (cin → cout with a conv_shortcut, 2-D convs) on an input given as equal channel slices. */
export function resnetBlockFromParts(m: Module, parts: readonly Value[], cin: number, cout: number, s: BlockSettings): Value {
  const sc = m.scope;
  const count = cin / parts.length;
  const norm1 = m.child('norm1');
  const [gamma, beta] = normWeights(norm1, cin);
  const partNorm = { groups: (s.norm.groups * count) / cin, epsilon: s.norm.epsilon, channels: count };
  /** Σ over the parts of a conv on each (its weight's input-channel slice), the bias added once. */
  const summed = (conv: Module, inputs: readonly Value[], k: number, gain?: number): Value => {
    const [w, b] = convWeights(conv, cin, cout, [k, k], gain);
    const terms = inputs.map((h, p) =>
      sc.conv(h, channelSlice(sc, w, 1, p, count), p === 0 ? b : undefined, { kernelShape: [k, k], pads: Math.floor(k / 2) }),
    );
    return terms.reduce((acc, t) => sc.add(acc, t));
  };
  const activated = parts.map((x, p) => {
    const scope = norm1.scope.scope(`part${p}`);
    return scope.silu(scope.groupNorm(x, channelSlice(scope, gamma, 0, p, count), channelSlice(scope, beta, 0, p, count), partNorm));
  });
  let h = summed(m.child('conv1'), activated, 3, GAIN_AFTER_SILU);
  h = normSiluConv(m.child('norm2'), m.child('conv2'), h, cout, cout, s, GAIN_AFTER_SILU * GAIN_RESIDUAL_BRANCH_END);
  return sc.add(summed(m.child('conv_shortcut'), parts, 1), h);
}

/**
 * UpDecoderBlock2D: `resnets.0…` (the first maps cin → cout), then `upsamplers.0` at cout when
 * asked; `first` skips resnets already applied (a resnet read from channel parts).
 */
export function upBlock(
  m: Module,
  x: Value,
  channels: { cin: number; cout: number },
  resnets: number,
  upsample: boolean,
  s: BlockSettings,
  upsampler: (m: Module, x: Value, channels: number) => Value = upsampler2d,
  first = 0,
): Value {
  const { cin, cout } = channels;
  for (let j = first; j < resnets; j++) x = resnetBlock(m.child(`resnets.${j}`), x, j === 0 ? cin : cout, cout, s);
  return upsample ? upsampler(m.child('upsamplers.0'), x, cout) : x;
}

/** UNetMidBlock2D with one layer: resnets.0, attentions.0 (optional), resnets.1, all at `channels`; `attentionChunks` splits its attention's queries (Scope.attention). */
export function midBlock(m: Module, x: Value, channels: number, attention: boolean, s: BlockSettings, attentionChunks = 1): Value {
  x = resnetBlock(m.child('resnets.0'), x, channels, channels, s);
  if (attention) x = attentionBlock(m.child('attentions.0'), x, channels, s.norm, undefined, attentionChunks);
  return resnetBlock(m.child('resnets.1'), x, channels, channels, s);
}
