// The layers of diffusers' Wan VAE decoder (AutoencoderKLWan 2.1 / 2.2 and AutoencoderKLQwenImage,
// which shares the 2.1 layers), each a graph function that declares the checkpoint keys it reads
// (shape and synthetic init, as blocks/blocks.ts' Module does), built to decode ONE FRAME per call
// (docs/design.md §3 'frame-steps').
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
import { convWeights, GAIN_AFTER_SILU, GAIN_RESIDUAL_BRANCH_END, type Module } from '../blocks/blocks.js';

/** A causal conv's temporal kernel: it reads diffusers' CACHE_T = 2 earlier input frames. */
const TEMPORAL_KERNEL = 3;

/** The upsampler's time conv: temporal only. */
const TIME_CONV_KERNEL = [TEMPORAL_KERNEL, 1, 1] as const;

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

// ---- layers -------------------------------------------------------------------------------

/** A WanCausalConv3d's kernel: (time, height, width). */
export type CausalKernel = readonly [number, number, number];

/**
 * WanCausalConv3d (an nn.Conv3d: `weight` [cout, cin, kt, kh, kw], `bias`) with temporal kernel 3
 * (zero front pad 2 in time, kernel//2 in space) on one frame, threading its history.
 */
export function causalConv(m: Module, x: Frames, cin: number, cout: number, kernel: CausalKernel, steps: StepContext, gain = 1): Frames {
  const sc = m.scope;
  const [kt, kh, kw] = kernel;
  if (kt !== TEMPORAL_KERNEL || kh !== kw || kh % 2 !== 1 || x.count !== 1)
    throw new Error(`unreachable: ${m.key('weight')} has kernel ${kernel}, input of ${x.count} frames`);
  const pad = (kh - 1) / 2;
  const [weight, bias] = convWeights(m, cin, cout, kernel, gain);
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
export function pointwiseConv(m: Module, x: Value, cin: number, cout: number): Value {
  const [weight, bias] = convWeights(m, cin, cout, [1, 1, 1]);
  return conv2dNode(m.scope, x, m.scope.reshape(weight, [cout, cin, 1, 1]), bias, 0);
}

/**
 * WanRMS_norm per voxel over channels: x / max(‖x‖₂, 1e-12) · √C · gamma. Its only key, `gamma`,
 * is [C, 1, 1, 1] on 5-D inputs and [C, 1, 1] in the attention (images=True).
 */
export function rmsNorm(m: Module, x: Value, c: number, form: 'video' | 'image'): Value {
  const sc = m.scope;
  const gamma = m.param('gamma', form === 'video' ? [c, 1, 1, 1] : [c, 1, 1], 'norm-weight');
  const norm = sc.op('Max', [sc.op('ReduceL2', [x, sc.int64Constant([1])], [attr.int('keepdims', 1)]), sc.scalar(RMS_NORM_EPSILON)]);
  const gain = sc.mul(sc.reshape(gamma, [c, 1, 1]), Math.sqrt(c));
  return sc.mul(sc.div(x, norm), gain);
}

/** WanResidualBlock (cin → cout): shortcut(x) + conv2(SiLU(RMS(conv1(SiLU(RMS(x)))))); dropout is the identity. */
export function residualBlock(m: Module, x: Frames, cin: number, cout: number, steps: StepContext): Frames {
  const sc = m.scope;
  const shortcut = cin === cout ? x.value : pointwiseConv(m.child('conv_shortcut'), x.value, cin, cout);
  let h = causalConv(
    m.child('conv1'),
    withValue(x, sc.silu(rmsNorm(m.child('norm1'), x.value, cin, 'video'))),
    cin,
    cout,
    [3, 3, 3],
    steps,
    GAIN_AFTER_SILU,
  );
  h = causalConv(
    m.child('conv2'),
    withValue(h, sc.silu(rmsNorm(m.child('norm2'), h.value, cout, 'video'))),
    cout,
    cout,
    [3, 3, 3],
    steps,
    GAIN_AFTER_SILU * GAIN_RESIDUAL_BRANCH_END,
  );
  return withValue(x, sc.add(h.value, shortcut));
}

/**
 * WanAttentionBlock (norm in the image form, to_qkv and proj, both nn.Conv2d 1×1): single-head
 * self-attention within each frame (the batch axis here), no mask.
 * Channel-major like blocks/blocks.ts: tokens are the columns of (C, N), only q and the probabilities
 * are transposed, and the 1/√C scale is applied to q.
 */
export function attentionBlock(m: Module, x: Value, c: number): Value {
  const sc = m.scope;
  const normed = rmsNorm(m.child('norm'), x, c, 'image');
  const qkv = conv2dNode(sc, normed, ...convWeights(m.child('to_qkv'), c, 3 * c, [1, 1]), 0);
  const [q, k, v] = sc.split(sc.reshape(qkv, [0, 3 * c, -1]), [c, c, c], 1) as [Value, Value, Value];
  const probabilities = sc.softmax(sc.matMul(sc.transpose(sc.mul(q, 1 / Math.sqrt(c)), [0, 2, 1]), k), -1);
  const attended = sc.matMul(v, sc.transpose(probabilities, [0, 2, 1]));
  const proj = convWeights(m.child('proj'), c, c, [1, 1], GAIN_RESIDUAL_BRANCH_END);
  return sc.add(conv2dNode(sc, sc.reshape(attended, sc.shape(x)), ...proj, 0), x);
}

/** WanMidBlock: resnets.0, attentions.0, resnets.1, all at `c` channels. */
export function midBlock(m: Module, x: Frames, c: number, steps: StepContext): Frames {
  x = residualBlock(m.child('resnets.0'), x, c, c, steps);
  x = withValue(x, attentionBlock(m.child('attentions.0'), x.value, c));
  return residualBlock(m.child('resnets.1'), x, c, c, steps);
}

/**
 * WanResample, upsample modes: the temporal part (upsample3d, `time_conv` (3, 1, 1) doubling the
 * channels) then, per frame, nearest-exact 2× (equal to nearest for a factor of 2) and
 * `resample.1` (Conv2d 3×3, channels → outChannels).
 */
export function upsampler(m: Module, x: Frames, channels: number, outChannels: number, temporal: boolean, steps: StepContext): Frames {
  // Declared first, as the checkpoint lists them (the time conv's nodes come first).
  const resample = convWeights(m.child('resample.1'), channels, outChannels, [3, 3]);
  if (temporal) x = timeUpsample(m, x, channels, steps);
  const value = conv2dNode(m.scope, m.scope.resizeNearest(x.value, [1, 1, 2, 2]), ...resample, 1);
  return { value, count: x.count, scale: x.scale * 2 };
}

/**
 * The temporal half of upsample3d. The sequence's first frame is passed through unchanged
 * (diffusers stores "Rep" in the first chunk): the time conv only ever sees frames 1, 2, …, with
 * zeros before frame 1 — so its first history frame is zeros too. Its 2C output channels are two
 * frames (channel block s → frame 2t + s), which on the frames-on-batch layout is a reshape.
 */
function timeUpsample(m: Module, x: Frames, channels: number, steps: StepContext): Frames {
  const sc = m.scope;
  const timeConv = m.child('time_conv');
  if (steps.startsSequence) {
    // The module's parameters, though this graph never reads them.
    timeConv.skip('weight', [2 * channels, channels, ...TIME_CONV_KERNEL], 'conv', 1);
    timeConv.skip('bias', [2 * channels], 'bias');
    if (steps.emitsHistory) {
      const zeros = sc.op('ConstantOfShape', [sc.shape(x.value)]);
      steps.present(timeConv.scope.path, zeros, channels, x.scale);
    }
    return x;
  }
  const doubled = causalConv(timeConv, x, channels, 2 * channels, TIME_CONV_KERNEL, steps);
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
