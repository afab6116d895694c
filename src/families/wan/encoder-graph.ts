// The Wan VAE encoder (diffusers' WanEncoder3d then quant_conv; Wan 2.1, Wan 2.2 with residual
// down blocks and AvgDown3D shortcuts, and Qwen-Image, whose encoder is Wan 2.1's) as ONNX graphs
// that each encode ONE CHUNK of diffusers' `_encode` loop: the first frame alone (`first`, or
// `only` when it is the whole video), then chunks of 4 frames (`next`), threading every causal
// conv's feature cache between calls. Also the encoder's parameter list under the checkpoint's
// keys (what building the graphs reads).
//
// Layout, as the decoder's (blocks.ts): a chunk's frames sit on the batch axis, (n, C, H, W), so
// per-frame ops (RMS norm, the mid-block attention, spatial resamples) are plain 4-D ops and a
// causal 3×3×3 conv over n frames is ONE 2-D conv over the three frames each output reads,
// stacked on the channel axis (oldest first) with the kernel rearranged to match.
//
// The cache is diffusers' feat_cache: a causal conv keeps the last two frames it read
// (`present:<key>`, (2, C, h, w); zeros before the first frame), the next chunk prepends them
// (`past:<key>`); a temporal downsampler's `time_conv` (kernel 3, stride 2, no padding) keeps the
// last frame (1, C, h, w). The first chunk runs no time_conv (diffusers caches its frame
// instead) and its causal convs see only zeros before it, so only the last temporal kernel slice
// applies. AvgDown3D pads a lone first frame with a zero frame in front and has no cache.

import { DistVaeError } from '../../errors.js';
import { attr } from '../../graph/attributes.js';
import { GraphBuilder, type Scope, type Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import {
  convWeights,
  GAIN_AFTER_SILU,
  GAIN_RESIDUAL_BRANCH_END,
  Module,
  recordParams,
  WeightTable,
  type ParamSource,
} from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';
import { outputPosterior } from '../autoencoder-kl/encoder-graph.js';
import { attentionBlock, pointwiseConv, rmsNorm, type WanStep } from './blocks.js';

export const ENCODER_CHUNK_INPUT = 'x';
export const ENCODER_CHUNK_OUTPUT = 'y';
/** A cached conv's frames from the chunk before: `past:<conv key>`; the frames it leaves for the next: `present:<conv key>`. */
export const ENCODER_PAST_PREFIX = 'past:';
export const ENCODER_PRESENT_PREFIX = 'present:';

/** Input frames per chunk after the first (diffusers' `_encode`: `1 + 4·(i − 1) : 1 + 4·i`). */
export const WAN_ENCODE_CHUNK = 4;

/** One entry of the encoder's down path. */
type DownEntry =
  | { kind: 'resnet'; key: string; cin: number; cout: number }
  | { kind: 'attention'; key: string; channels: number }
  | { kind: 'resample'; key: string; channels: number; temporal: boolean }
  /** Wan 2.2's WanResidualDownBlock: resnets, an optional downsampler, plus the AvgDown3D shortcut of its input. */
  | { kind: 'residual-block'; key: string; cin: number; cout: number; resnets: number; spatial: boolean; temporal: boolean };

export interface WanEncoderArchitecture {
  /** conv_in's input channels: the image's channels × patch_size² (patchified first). */
  inChannels: number;
  /** dims = base_dim × [1, ...dim_mult]. */
  dims: number[];
  down: DownEntry[];
  top: number;
  latentChannels: number;
}

/** WanEncoder3d's layout (wan.md §2), for AutoencoderKLWan and AutoencoderKLQwenImage configs. */
export function wanEncoderArchitecture(config: ResolvedConfig): WanEncoderArchitecture {
  const f = config.fields;
  const base = f['base_dim'] as number;
  const mult = f['dim_mult'] as number[];
  const resBlocks = f['num_res_blocks'] as number;
  const temporalDown = f['temperal_downsample'] as boolean[];
  const attnScales = (f['attn_scales'] as number[] | undefined) ?? [];
  const residual = (f['is_residual'] as boolean | undefined) ?? false;
  const { patchSize: p, outChannels, temporalRatio } = config.geometry;
  if (WAN_ENCODE_CHUNK % temporalRatio !== 0)
    throw new DistVaeError(
      'CONFIG_INVALID',
      `temperal_downsample ${JSON.stringify(temporalDown)} gives a temporal ratio of ${temporalRatio}: diffusers' Wan encoder feeds chunks of ${WAN_ENCODE_CHUNK} frames, which a ratio above ${WAN_ENCODE_CHUNK} cannot divide`,
    );
  const dims = [1, ...mult].map((m) => base * m);
  const down: DownEntry[] = [];
  let scale = 1;
  for (let i = 0; i < mult.length; i++) {
    const last = i === mult.length - 1;
    if (residual) {
      down.push({
        kind: 'residual-block',
        key: `encoder.down_blocks.${i}`,
        cin: dims[i]!,
        cout: dims[i + 1]!,
        resnets: resBlocks,
        spatial: !last,
        temporal: !last && temporalDown[i]!,
      });
      continue;
    }
    let cin = dims[i]!;
    for (let j = 0; j < resBlocks; j++) {
      down.push({ kind: 'resnet', key: `encoder.down_blocks.${down.length}`, cin, cout: dims[i + 1]! });
      if (attnScales.includes(scale)) down.push({ kind: 'attention', key: `encoder.down_blocks.${down.length}`, channels: dims[i + 1]! });
      cin = dims[i + 1]!;
    }
    if (!last) {
      down.push({ kind: 'resample', key: `encoder.down_blocks.${down.length}`, channels: dims[i + 1]!, temporal: temporalDown[i]! });
      scale /= 2;
    }
  }
  const inChannels = (f['in_channels'] as number | undefined) ?? (f['input_channels'] as number | undefined) ?? outChannels * p * p;
  if (inChannels !== outChannels * p * p)
    throw new DistVaeError(
      'CONFIG_INVALID',
      `in_channels = ${inChannels}, but the encoder's conv_in reads the patchified image: ${outChannels} channels × patch_size² = ${outChannels * p * p} (diffusers would fail on the first conv)`,
    );
  return { inChannels, dims, down, top: dims[dims.length - 1]!, latentChannels: config.geometry.latentChannels };
}

/** The chunk a graph encodes and the cache inputs and outputs it declares. */
class ChunkContext {
  constructor(
    readonly graph: GraphBuilder,
    readonly step: WanStep,
  ) {}

  /** The first chunk: every cache is still empty (zeros). */
  get first(): boolean {
    return this.step !== 'next';
  }

  /** The cache `key` left by the chunk before: `frames` frames of (C, h, w). */
  past(key: string, frames: number, channels: number, level: number): Value {
    return this.graph.input(`${ENCODER_PAST_PREFIX}${key}`, [frames, channels, levelDim('height', level), levelDim('width', level)]);
  }

  /** Leaves `value` as the cache `key` for the next chunk (not when none follows). */
  present(key: string, value: Value, frames: number, channels: number, level: number): void {
    if (this.step === 'only') return;
    this.graph.output(`${ENCODER_PRESENT_PREFIX}${key}`, value, [frames, channels, levelDim('height', level), levelDim('width', level)]);
  }
}

/** The documented size of an axis after `level` spatial halvings (of the patchified input). */
const levelDim = (axis: string, level: number): string => (level === 0 ? axis : `${axis}/${2 ** level}`);

/** An activation: the chunk's frames on the batch axis, at `level` spatial halvings. */
interface Chunk {
  value: Value;
  level: number;
}

/** Slice of axis 0 [start, end) with a step (negative ends count from the end). */
const frameSlice = (sc: Scope, x: Value, start: number, end: number, step = 1): Value =>
  sc.slice(x, { starts: [start], ends: [end], axes: [0], ...(step === 1 ? {} : { steps: [step] }) });

const END = Number.MAX_SAFE_INTEGER;

/**
 * WanCausalConv3d with a 3×3×3 kernel (temporal front pad 2, spatial pad 1) over a chunk,
 * threading its two-frame cache.
 */
function causalConv(m: Module, x: Chunk, cin: number, cout: number, ctx: ChunkContext, gain = 1): Chunk {
  const sc = m.scope;
  const [weight, bias] = convWeights(m, cin, cout, [3, 3, 3], gain);
  const key = sc.path;
  const conv = (input: Value, w: Value, channels: number) =>
    sc.op('Conv', [input, sc.reshape(w, [cout, channels, 3, 3]), bias], [attr.ints('pads', [1, 1, 1, 1])]);
  if (ctx.first) {
    // Zeros before the frame: only the last temporal slice of the kernel reads anything.
    ctx.present(key, sc.concat([sc.op('ConstantOfShape', [sc.shape(x.value)]), x.value], 0), 2, cin, x.level);
    return { ...x, value: conv(x.value, sc.slice(weight, { starts: [2], ends: [3], axes: [2] }), cin) };
  }
  const full = sc.concat([ctx.past(key, 2, cin, x.level), x.value], 0); // (n + 2, C, h, w)
  ctx.present(key, frameSlice(sc, full, -2, END), 2, cin, x.level);
  const stacked = sc.concat([frameSlice(sc, full, 0, -2), frameSlice(sc, full, 1, -1), frameSlice(sc, full, 2, END)], 1);
  // W [O, C, 3, kh, kw] → [O, 3·C, kh, kw], channel t·C + c: the order of `stacked`.
  return { ...x, value: conv(stacked, sc.transpose(weight, [0, 2, 1, 3, 4]), 3 * cin) };
}

/** WanResidualBlock (cin → cout) over a chunk: shortcut(x) + conv2(SiLU(RMS(conv1(SiLU(RMS(x)))))). */
function residualBlock(m: Module, x: Chunk, cin: number, cout: number, ctx: ChunkContext): Chunk {
  const sc = m.scope;
  const shortcut = cin === cout ? x.value : pointwiseConv(m.child('conv_shortcut'), x.value, cin, cout);
  let h = causalConv(
    m.child('conv1'),
    { ...x, value: sc.silu(rmsNorm(m.child('norm1'), x.value, cin, 'video')) },
    cin,
    cout,
    ctx,
    GAIN_AFTER_SILU,
  );
  h = causalConv(
    m.child('conv2'),
    { ...h, value: sc.silu(rmsNorm(m.child('norm2'), h.value, cout, 'video')) },
    cout,
    cout,
    ctx,
    GAIN_AFTER_SILU * GAIN_RESIDUAL_BRANCH_END,
  );
  return { ...x, value: sc.add(h.value, shortcut) };
}

/**
 * WanResample, downsample modes: per frame ZeroPad2d((0, 1, 0, 1)) + Conv2d 3×3 stride 2
 * (`resample.1`); downsample3d then runs `time_conv` ((3, 1, 1), stride 2 in time) over the
 * chunk behind the cached last frame — except on the first chunk, which it passes through.
 */
function downsample(m: Module, x: Chunk, c: number, temporal: boolean, ctx: ChunkContext): Chunk {
  const sc = m.scope;
  const [weight, bias] = convWeights(m.child('resample.1'), c, c, [3, 3]);
  const y: Chunk = { value: sc.conv(x.value, weight, bias, { kernelShape: [3, 3], pads: [0, 0, 1, 1], strides: 2 }), level: x.level + 1 };
  if (!temporal) return y;
  const timeConv = m.child('time_conv');
  const key = timeConv.scope.path;
  if (ctx.first) {
    timeConv.skip('weight', [c, c, 3, 1, 1], 'conv', 1);
    timeConv.skip('bias', [c], 'bias');
    ctx.present(key, y.value, 1, c, y.level);
    return y;
  }
  const [tw, tb] = convWeights(timeConv, c, c, [3, 1, 1]);
  const full = sc.concat([ctx.past(key, 1, c, y.level), y.value], 0); // (n + 1, C, h, w), n even
  ctx.present(key, frameSlice(sc, y.value, -1, END), 1, c, y.level);
  const stacked = sc.concat([frameSlice(sc, full, 0, -1, 2), frameSlice(sc, full, 1, END, 2), frameSlice(sc, full, 2, END, 2)], 1);
  const kernel = sc.reshape(sc.transpose(tw, [0, 2, 1, 3, 4]), [c, 3 * c, 1, 1]);
  return { ...y, value: sc.op('Conv', [stacked, kernel, tb], []) };
}

/**
 * AvgDown3D (Wan 2.2's parameter-free shortcut, cin → cout): a lone frame padded with a zero
 * frame in front when time is halved, frames paired on the channel axis (time offset a), then one
 * constant conv of kernel and stride fs: output channel o is the mean of the group
 * [o·g, (o + 1)·g) of the flattened index c·factor + a·fs² + p·fs + q (diffusers' view/permute).
 */
function avgDown(sc: Scope, x: Chunk, cin: number, cout: number, temporal: boolean, spatial: boolean, ctx: ChunkContext): Chunk {
  const ft = temporal ? 2 : 1;
  const fs = spatial ? 2 : 1;
  const factor = ft * fs * fs;
  const g = (cin * factor) / cout;
  let paired = x.value;
  if (temporal)
    paired = ctx.first
      ? sc.concat([sc.op('ConstantOfShape', [sc.shape(x.value)]), x.value], 1)
      : sc.concat([frameSlice(sc, x.value, 0, END, 2), frameSlice(sc, x.value, 1, END, 2)], 1);
  const data = new Float32Array(cout * ft * cin * fs * fs);
  for (let o = 0; o < cout; o++)
    for (let a = 0; a < ft; a++)
      for (let c = 0; c < cin; c++)
        for (let p = 0; p < fs; p++)
          for (let q = 0; q < fs; q++)
            if (Math.floor((c * factor + a * fs * fs + p * fs + q) / g) === o) data[(((o * ft + a) * cin + c) * fs + p) * fs + q] = 1 / g;
  const weight = sc.constant({ dims: [cout, ft * cin, fs, fs], data });
  return { value: sc.conv(paired, weight, undefined, { kernelShape: [fs, fs], strides: fs }), level: x.level + (spatial ? 1 : 0) };
}

function downPath(root: Module, x: Chunk, a: WanEncoderArchitecture, ctx: ChunkContext): Chunk {
  for (const e of a.down) {
    const m = root.child(e.key);
    if (e.kind === 'resnet') x = residualBlock(m, x, e.cin, e.cout, ctx);
    else if (e.kind === 'attention') x = { ...x, value: attentionBlock(m, x.value, e.channels) };
    else if (e.kind === 'resample') x = downsample(m, x, e.channels, e.temporal, ctx);
    else {
      const input = x;
      for (let j = 0; j < e.resnets; j++) x = residualBlock(m.child(`resnets.${j}`), x, j === 0 ? e.cin : e.cout, e.cout, ctx);
      if (e.spatial) x = downsample(m.child('downsampler'), x, e.cout, e.temporal, ctx);
      // The shortcut's constant grows with the widths and owns no parameter: a listing skips it.
      if (!m.weights.listing)
        x = { ...x, value: m.scope.add(x.value, avgDown(m.scope, input, e.cin, e.cout, e.temporal, e.spatial, ctx).value) };
    }
  }
  return x;
}

function encoderChunkGraph(config: ResolvedConfig, source: ParamSource, step: WanStep, moments = false): GraphBuilder {
  const a = wanEncoderArchitecture(config);
  const g = new GraphBuilder(`${config.className}.encoder.${step}`, {
    docString: `${config.className} encoder for the ${step} chunk of diffusers' _encode loop, built by distvae`,
  });
  const root = new Module(g, source);
  const ctx = new ChunkContext(g, step);
  const encoder = root.child('encoder');
  const z = a.latentChannels;
  let x: Chunk = { value: g.input(ENCODER_CHUNK_INPUT, ['frames', a.inChannels, 'height', 'width']), level: 0 };
  x = causalConv(encoder.child('conv_in'), x, a.inChannels, a.dims[0]!, ctx);
  x = downPath(root, x, a, ctx);
  const mid = encoder.child('mid_block');
  x = residualBlock(mid.child('resnets.0'), x, a.top, a.top, ctx);
  x = { ...x, value: attentionBlock(mid.child('attentions.0'), x.value, a.top) };
  x = residualBlock(mid.child('resnets.1'), x, a.top, a.top, ctx);
  const normed = g.silu(rmsNorm(encoder.child('norm_out'), x.value, a.top, 'video'));
  x = causalConv(encoder.child('conv_out'), { ...x, value: normed }, a.top, 2 * z, ctx, GAIN_AFTER_SILU);
  const both = pointwiseConv(root.child('quant_conv'), x.value, 2 * z, 2 * z);
  outputPosterior(
    g,
    both,
    z,
    moments,
    (c) => ['latent_frames', c, levelDim('height', x.level), levelDim('width', x.level)],
    ENCODER_CHUNK_OUTPUT,
  );
  return g;
}

/** Every encoder parameter (encoder.* and quant_conv.*) with its checkpoint key, shape and synthetic init. */
export function wanEncoderParams(config: ResolvedConfig): ParamSpec[] {
  // A `next` chunk reads every parameter (the first skips the time convs but declares them).
  return recordParams((source) => encoderChunkGraph(config, source, 'next'));
}

/**
 * The graph encoding one chunk with the bound encoder weights as initializers under their
 * checkpoint keys: input `x` (n, C·p², H/p, W/p) — the chunk's patchified frames on the batch
 * axis — and, for `next`, the caches `past:<key>`; output `y` (n/rt·…, z, h, w), the latent
 * frames' means (with `moments`, their moments: 2z channels, mean then log-variance), and,
 * unless `only`, the caches `present:<key>`.
 */
export function buildWanEncoderGraph(
  config: ResolvedConfig,
  weights: ReadonlyMap<string, Tensor>,
  step: WanStep,
  options: { moments?: boolean } = {},
): GraphBuilder {
  const table = new WeightTable(weights);
  const g = encoderChunkGraph(config, table, step, options.moments === true);
  if (step === 'next') table.assertAllTaken(`${config.className} encoder`);
  return g;
}
