// The layers of diffusers' Wan VAE decoder (AutoencoderKLWan 2.1 / 2.2 and AutoencoderKLQwenImage,
// which shares the 2.1 layers), each as a `…Params` list beside the graph function that reads
// the same checkpoint keys, built to decode ONE FRAME per call (docs/design.md §3 'frame-steps').
//
// Layout: an activation holds its frames on the batch axis, (frames, C, H, W) — one frame,
// except for the two a temporal upsampler makes of one. Every per-frame op (RMS norm, the
// mid-block attention, the spatial resample, 1×1×1 convs) is a plain 4-D op, and a causal
// 3×3×3 conv is ONE 2-D conv over the three input frames it reads, stacked on the channel axis
// (oldest first) with the kernel rearranged to match — ORT runs that on its fast 2-D path.
//
// Time: output frame t of a causal conv reads input frames t−2, t−1, t. When the frame is the
// first of its sequence ('only' / 'first' graphs) the two earlier frames are zeros, so only the
// kernel's last temporal slice is applied (a third of the work); otherwise ('next') they are the
// graph inputs `past0:<conv key>` and `past1:<conv key>`. A graph with a successor emits
// `present:<conv key>`, the conv's input frame, which the runner shifts into its history. This
// is exactly diffusers' feat_cache protocol, which equals one causal pass over all frames
// (wan.md §5).

import { attr } from '../../graph/attributes.js';
import type { GraphBuilder, Scope, Value } from '../../graph/builder.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import { conv2d, GAIN_AFTER_SILU, GAIN_RESIDUAL_BRANCH_END, type Module } from '../blocks/blocks.js';

/** A causal conv's temporal kernel: it reads diffusers' CACHE_T = 2 earlier input frames. */
const TEMPORAL_KERNEL = 3;

/** `F.normalize`'s eps: a floor on the L2 norm, not a term under a square root. */
const RMS_NORM_EPSILON = 1e-12;

/**
 * Which frame of its sequence a graph decodes: `first` starts a sequence that continues, `next`
 * continues one, `only` is a one-frame sequence (a Qwen-Image image): it starts like `first` but
 * emits no history, which would be large and never read.
 */
export type WanStep = 'only' | 'first' | 'next';

/** The two history frames a causal conv reads, oldest first. */
export const pastInputName = (key: string, age: 0 | 1): string => `past${age}:${key}`;
export const PRESENT_PREFIX = 'present:';
export const presentOutputName = (key: string): string => `${PRESENT_PREFIX}${key}`;

/**
 * An activation: `count` consecutive frames on the batch axis, (count, C, H, W), at `scale` ×
 * the latent tile's height and width.
 */
export interface Frames {
  readonly value: Value;
  readonly count: number;
  readonly scale: number;
}

/** Documented dims of `count` frames at `scale` × the latent tile's named height and width. */
export const frameDims = (count: number, channels: number, scale: number): (number | string)[] => [
  count,
  channels,
  scale === 1 ? 'height' : `height*${scale}`,
  scale === 1 ? 'width' : `width*${scale}`,
];

/** The step a graph is built for, and the history inputs and outputs it declares. */
export class StepContext {
  constructor(
    readonly graph: GraphBuilder,
    readonly step: WanStep,
  ) {}

  /** The frame is the first of its sequence: every causal history is still zeros. */
  get startsSequence(): boolean {
    return this.step !== 'next';
  }

  /** Another frame follows, so the graph emits its history. */
  get emitsHistory(): boolean {
    return this.step !== 'only';
  }

  /** Input frames t−2 and t−1 of the conv `key`: (1, C, H, W) each. */
  past(key: string, channels: number, scale: number): [Value, Value] {
    return [
      this.graph.input(pastInputName(key, 0), frameDims(1, channels, scale)),
      this.graph.input(pastInputName(key, 1), frameDims(1, channels, scale)),
    ];
  }

  /** The conv's input frame t, which becomes frame t−1 of its next call. */
  present(key: string, value: Value, channels: number, scale: number): void {
    this.graph.output(presentOutputName(key), value, frameDims(1, channels, scale));
  }
}

const withValue = (x: Frames, value: Value): Frames => ({ ...x, value });

/** A 2-D Conv node on any weight value (the builder's `conv` needs an initializer; these are rearranged ones). */
function conv2dNode(sc: Scope, x: Value, weight: Value, bias: Value, pad: number): Value {
  return sc.op('Conv', [x, weight, bias], [attr.ints('pads', [pad, pad, pad, pad])]);
}

// ---- parameter lists ----------------------------------------------------------------------

/** WanCausalConv3d (an nn.Conv3d): `<key>.weight` [cout, cin, kt, kh, kw] and `<key>.bias`. */
export function causalConvParams(key: string, cin: number, cout: number, kernel: readonly [number, number, number], gain = 1): ParamSpec[] {
  return [
    { name: `${key}.weight`, dims: [cout, cin, ...kernel], init: 'conv', gain },
    { name: `${key}.bias`, dims: [cout], init: 'bias' },
  ];
}

/** WanRMS_norm: only `<key>.gamma`, [C, 1, 1, 1] on 5-D inputs, [C, 1, 1] in the attention (images=True). */
export function rmsNormParams(key: string, channels: number, form: 'video' | 'image'): ParamSpec[] {
  return [{ name: `${key}.gamma`, dims: form === 'video' ? [channels, 1, 1, 1] : [channels, 1, 1], init: 'norm-weight' }];
}

export function residualBlockParams(key: string, cin: number, cout: number): ParamSpec[] {
  return [
    ...rmsNormParams(`${key}.norm1`, cin, 'video'),
    ...causalConvParams(`${key}.conv1`, cin, cout, [3, 3, 3], GAIN_AFTER_SILU),
    ...rmsNormParams(`${key}.norm2`, cout, 'video'),
    ...causalConvParams(`${key}.conv2`, cout, cout, [3, 3, 3], GAIN_AFTER_SILU * GAIN_RESIDUAL_BRANCH_END),
    ...(cin === cout ? [] : causalConvParams(`${key}.conv_shortcut`, cin, cout, [1, 1, 1])),
  ];
}

/** WanAttentionBlock: norm (image form), to_qkv and proj, both nn.Conv2d 1×1. */
export function attentionParams(key: string, channels: number): ParamSpec[] {
  return [
    ...rmsNormParams(`${key}.norm`, channels, 'image'),
    ...conv2d.params(`${key}.to_qkv`, channels, 3 * channels, 1),
    ...conv2d.params(`${key}.proj`, channels, channels, 1, GAIN_RESIDUAL_BRANCH_END),
  ];
}

export function midBlockParams(key: string, channels: number): ParamSpec[] {
  return [
    ...residualBlockParams(`${key}.resnets.0`, channels, channels),
    ...attentionParams(`${key}.attentions.0`, channels),
    ...residualBlockParams(`${key}.resnets.1`, channels, channels),
  ];
}

/** WanResample in an upsample mode: `resample.1` (Conv2d 3×3) and, when temporal, `time_conv` (3,1,1) doubling channels. */
export function upsamplerParams(key: string, channels: number, outChannels: number, temporal: boolean): ParamSpec[] {
  return [
    ...conv2d.params(`${key}.resample.1`, channels, outChannels, 3),
    ...(temporal ? causalConvParams(`${key}.time_conv`, channels, 2 * channels, [3, 1, 1]) : []),
  ];
}

// ---- layers -------------------------------------------------------------------------------

/** WanCausalConv3d with temporal kernel 3 (zero front pad 2 in time, kernel//2 in space) on one frame, threading its history. */
export function causalConv(m: Module, x: Frames, steps: StepContext): Frames {
  const sc = m.scope;
  const shape = m.dims('weight') as [number, number, number, number, number];
  const [cout, cin, kt, kh, kw] = shape;
  if (kt !== TEMPORAL_KERNEL || kh !== kw || kh % 2 !== 1 || x.count !== 1)
    throw new Error(`unreachable: ${m.key('weight')} has kernel ${shape.slice(2)}, input of ${x.count} frames`);
  const pad = (kh - 1) / 2;
  const weight = m.param('weight');
  const bias = m.param('bias');
  const key = sc.path;
  if (steps.emitsHistory) steps.present(key, x.value, cin, x.scale);
  if (steps.startsSequence) {
    // History is zeros: the earlier taps add nothing, so apply only W[:, :, 2].
    const lastSlice = sc.reshape(sc.slice(weight, { starts: [kt - 1], ends: [kt], axes: [2] }), [cout, cin, kh, kw]);
    return withValue(x, conv2dNode(sc, x.value, lastSlice, bias, pad));
  }
  const stacked = sc.concat([...steps.past(key, cin, x.scale), x.value], 1); // (1, 3C, H, W), oldest first
  // W [O, C, kt, kh, kw] → [O, kt·C, kh, kw] with channel kt·C + c, the order of `stacked`.
  const stackedKernel = sc.reshape(sc.transpose(weight, [0, 2, 1, 3, 4]), [cout, kt * cin, kh, kw]);
  return withValue(x, conv2dNode(sc, stacked, stackedKernel, bias, pad));
}

/** A 1×1×1 WanCausalConv3d (conv_shortcut, post_quant_conv): per voxel, never cached. */
export function pointwiseConv(m: Module, x: Value): Value {
  const [cout, cin] = m.dims('weight') as [number, number];
  return conv2dNode(m.scope, x, m.scope.reshape(m.param('weight'), [cout, cin, 1, 1]), m.param('bias'), 0);
}

/** WanRMS_norm per voxel over channels: x / max(‖x‖₂, 1e-12) · √C · gamma. */
export function rmsNorm(m: Module, x: Value): Value {
  const sc = m.scope;
  const c = m.dims('gamma')[0]!;
  const norm = sc.op('Max', [sc.op('ReduceL2', [x, sc.int64Constant([1])], [attr.int('keepdims', 1)]), sc.scalar(RMS_NORM_EPSILON)]);
  const gain = sc.mul(sc.reshape(m.param('gamma'), [c, 1, 1]), Math.sqrt(c));
  return sc.mul(sc.div(x, norm), gain);
}

/** WanResidualBlock: shortcut(x) + conv2(SiLU(RMS(conv1(SiLU(RMS(x)))))); dropout is the identity. */
export function residualBlock(m: Module, x: Frames, steps: StepContext): Frames {
  const sc = m.scope;
  const cin = m.dims('norm1.gamma')[0];
  const cout = m.dims('norm2.gamma')[0];
  const shortcut = cin === cout ? x.value : pointwiseConv(m.child('conv_shortcut'), x.value);
  let h = causalConv(m.child('conv1'), withValue(x, sc.silu(rmsNorm(m.child('norm1'), x.value))), steps);
  h = causalConv(m.child('conv2'), withValue(h, sc.silu(rmsNorm(m.child('norm2'), h.value))), steps);
  return withValue(x, sc.add(h.value, shortcut));
}

/**
 * WanAttentionBlock: single-head self-attention within each frame (the batch axis here), no mask.
 * Channel-major like blocks/blocks.ts: tokens are the columns of (C, N), only q and the probabilities
 * are transposed, and the 1/√C scale is applied to q.
 */
export function attentionBlock(m: Module, x: Value): Value {
  const sc = m.scope;
  const c = m.dims('proj.weight')[0]!;
  const qkvConv = m.child('to_qkv');
  const qkv = conv2dNode(sc, rmsNorm(m.child('norm'), x), qkvConv.param('weight'), qkvConv.param('bias'), 0);
  const [q, k, v] = sc.split(sc.reshape(qkv, [0, 3 * c, -1]), [c, c, c], 1) as [Value, Value, Value];
  const probabilities = sc.softmax(sc.matMul(sc.transpose(sc.mul(q, 1 / Math.sqrt(c)), [0, 2, 1]), k), -1);
  const attended = sc.matMul(v, sc.transpose(probabilities, [0, 2, 1]));
  const proj = m.child('proj');
  return sc.add(conv2dNode(sc, sc.reshape(attended, sc.shape(x)), proj.param('weight'), proj.param('bias'), 0), x);
}

/** WanMidBlock: resnets.0, attentions.0, resnets.1. */
export function midBlock(m: Module, x: Frames, steps: StepContext): Frames {
  x = residualBlock(m.child('resnets.0'), x, steps);
  x = withValue(x, attentionBlock(m.child('attentions.0'), x.value));
  return residualBlock(m.child('resnets.1'), x, steps);
}

/**
 * WanResample, upsample modes: the temporal part (upsample3d) then, per frame, nearest-exact 2×
 * (equal to nearest for a factor of 2) and `resample.1`.
 */
export function upsampler(m: Module, x: Frames, temporal: boolean, steps: StepContext): Frames {
  if (temporal) x = timeUpsample(m, x, steps);
  const resample = m.child('resample.1');
  const value = conv2dNode(m.scope, m.scope.resizeNearest(x.value, [1, 1, 2, 2]), resample.param('weight'), resample.param('bias'), 1);
  return { value, count: x.count, scale: x.scale * 2 };
}

/**
 * The temporal half of upsample3d. The sequence's first frame is passed through unchanged
 * (diffusers stores "Rep" in the first chunk): the time conv only ever sees frames 1, 2, …, with
 * zeros before frame 1 — so its first history frame is zeros too. Its 2C output channels are two
 * frames (channel block s → frame 2t + s), which on the frames-on-batch layout is a reshape.
 */
function timeUpsample(m: Module, x: Frames, steps: StepContext): Frames {
  const sc = m.scope;
  const timeConv = m.child('time_conv');
  const channels = timeConv.dims('weight')[1]!;
  if (steps.startsSequence) {
    m.weights.take(timeConv.key('weight'));
    m.weights.take(timeConv.key('bias'));
    if (steps.emitsHistory) {
      const zeros = sc.op('ConstantOfShape', [sc.shape(x.value)]);
      steps.present(timeConv.scope.path, zeros, channels, x.scale);
    }
    return x;
  }
  const doubled = causalConv(timeConv, x, steps);
  return { value: sc.reshape(doubled.value, [2, channels, 0, 0]), count: 2, scale: x.scale };
}

/**
 * DupUp3D, Wan 2.2's parameter-free shortcut of an up block: every input channel repeated
 * (repeat_interleave) to cout·F channels, read as (o, a, p, q) and moved to
 * out[o, t·ft + a, h·2 + p, w·2 + q]; the sequence's first step keeps only a = ft − 1
 * (diffusers drops the first ft − 1 frames in the first chunk). One Gather puts the channels in
 * (a, o, p, q) order, DepthToSpace(CRD) moves (p, q) to space and a reshape moves a to frames.
 */
export function dupUp3d(sc: Scope, x: Frames, cin: number, cout: number, temporal: boolean, steps: StepContext): Frames {
  const ft = temporal ? 2 : 1;
  const fs = 2;
  const factor = ft * fs * fs;
  const repeats = (cout * factor) / cin;
  const firstKept = steps.startsSequence ? ft - 1 : 0;
  const kept = ft - firstKept;
  const source: number[] = [];
  for (let a = firstKept; a < ft; a++) {
    for (let o = 0; o < cout; o++) {
      for (let pq = 0; pq < fs * fs; pq++) source.push(Math.floor((o * factor + a * fs * fs + pq) / repeats));
    }
  }
  const gathered = sc.op('Gather', [x.value, sc.int64Constant(source)], [attr.int('axis', 1)]);
  const spread = sc.depthToSpace(gathered, fs, 'CRD'); // (count, kept·cout, 2H, 2W), channel a·cout + o
  return { value: sc.reshape(spread, [x.count * kept, cout, 0, 0]), count: x.count * kept, scale: x.scale * fs };
}
