// AutoencoderKLMiniMaxH3's encoder: diffusers' MiniMaxH3VideoEncoder3d (a causal 3-D CNN) and
// quant_conv as one ONNX graph over a clip — conv_in, per level `layers_per_block` resnets and,
// where the level's factors multiply past 1, a strided down-sampler; GroupNorm + SiLU; conv_out
// to 2·latent channels; quant_conv; the mean half of the moments (`latent_dist.mode()`; the moments whole
// when asked, which `--sample` draws from) — and a
// runner that runs the class's `_encode` time loop around it: one frame alone; otherwise the
// frames padded by repeating the last to a whole number of `clip_length` clips, each clip through
// the graph, the latents concatenated and the last `token_drop` dropped (⌈F/17⌉·⌈17/4⌉ − 3 latent
// frames published). diffusers tiles space inside each clip (`_encode_clip`); the engine tiles
// space over all frames and the runner cuts clips inside each tile — equal, since the clips'
// latents are concatenated, never blended, and the spatial stitch is per latent frame.
//
// MiniMaxH3VideoCausalConv3d pads space first (`spatial_padding_mode`, reflect as released),
// then prepends k − 1 zero frames (the conv's own temporal pads here); its GroupNorm takes
// statistics per frame (frames folded into the batch); the down-sampler pads one row and column
// at the bottom and right in the same mode before its stride-2 conv, so sizes halve exactly.

import { DistVaeError, throwIfAborted } from '../../errors.js';
import { GraphBuilder, type Value } from '../../graph/builder.js';
import { createSession } from '../../runtime/session.js';
import type { Session, SessionOptions } from '../../runtime/session-types.js';
import type { ModelProto } from '../../graph/onnx-proto.js';
import type { Tensor } from '../../tensor.js';
import { bindWeights } from '../../weights/bind.js';
import { ENCODER_GRAPH_IO, outputPosterior } from '../autoencoder-kl/encoder-graph.js';
import { convWeights, encoderGraphOf, GAIN_AFTER_SILU, groupNorm, Module, type NormSettings, type ParamSource } from '../blocks/blocks.js';
import type { FamilyEncoder, TileRunner } from '../runtime-types.js';
import type { ResolvedConfig } from '../types.js';
import { concatFrames, framesOf, padFrames } from './frames.js';

/** torch `F.pad` modes the class may name, as ONNX Pad modes ('constant' is the conv's own zero pads). */
const PAD_MODES: Readonly<Record<string, 'reflect' | 'edge' | 'constant'>> = {
  reflect: 'reflect',
  replicate: 'edge',
  constant: 'constant',
};

interface EncoderFields {
  inChannels: number;
  widths: number[];
  layers: number;
  spatial: number[];
  temporal: number[];
  norm: NormSettings;
  pad: 'reflect' | 'edge' | 'constant';
}

function encoderFields(config: ResolvedConfig): EncoderFields {
  const f = config.fields;
  const refuse = (message: string): never => {
    throw new DistVaeError('CONFIG_INVALID', `AutoencoderKLMiniMaxH3 encoder: ${message}`);
  };
  const widths = f['block_out_channels'] as number[];
  const spatial = f['spatial_downsample_factors'] as number[];
  const temporal = f['temporal_downsample_factors'] as number[];
  const mode = f['spatial_padding_mode'] as string;
  const pad =
    PAD_MODES[mode] ?? refuse(`spatial_padding_mode = ${JSON.stringify(mode)}: expected one of ${Object.keys(PAD_MODES).join(', ')}`);
  if (spatial.length !== widths.length || temporal.length !== widths.length)
    refuse(
      `spatial_downsample_factors (${spatial.length}) and temporal_downsample_factors (${temporal.length}) must have one entry per level of block_out_channels (${widths.length})`,
    );
  for (const [i, s] of spatial.entries()) {
    if (s !== 1 && s !== 2)
      refuse(
        `spatial_downsample_factors[${i}] = ${s}: the class pads for a spatial stride of 2 only (1 or 2 here), so other strides do not divide sizes`,
      );
    if (s === 1 && temporal[i]! > 1)
      refuse(
        `level ${i} downsamples time (${temporal[i]}) but not space: the class's down-sampler then convolves space without padding and shrinks it by 2, which no spatial ratio describes`,
      );
  }
  const eps = f['norm_eps'];
  if (typeof eps !== 'number' || !(eps > 0)) refuse(`norm_eps = ${JSON.stringify(eps)}: expected a positive number`);
  return {
    inChannels: f['in_channels'] as number,
    widths,
    layers: f['layers_per_block'] as number,
    spatial,
    temporal,
    norm: { groups: f['norm_num_groups'] as number, epsilon: eps as number },
    pad,
  };
}

/** MiniMaxH3VideoCausalConv3d (keys `<key>.weight|bias`): space padded by `space` in the mode, k − 1 zero frames in front (k > 1), then the conv. */
function causalConv(m: Module, x: Value, cin: number, cout: number, kernel: number, f: EncoderFields, gain = 1): Value {
  const [weight, bias] = convWeights(m, cin, cout, [kernel, kernel, kernel], gain);
  const s = Math.floor(kernel / 2);
  const t = kernel - 1;
  if (f.pad === 'constant') return m.scope.conv(x, weight, bias, { pads: [t, s, s, 0, s, s] });
  const padded = s > 0 ? m.scope.pad(x, [0, 0, 0, s, s, 0, 0, 0, s, s], { mode: f.pad }) : x;
  return m.scope.conv(padded, weight, bias, { pads: [t, 0, 0, 0, 0, 0] });
}

/** MiniMaxH3VideoGroupNorm: GroupNorm of each frame alone, (B, C, F, H, W) viewed as (B·F, C, H, W). */
function frameGroupNorm(m: Module, x: Value, channels: number, norm: NormSettings): Value {
  const sc = m.scope;
  const perFrame = sc.transpose(x, [0, 2, 1, 3, 4]);
  const shape = sc.shape(perFrame);
  const flat = sc.reshape(perFrame, sc.concat([sc.int64Constant([-1, channels]), sc.slice(shape, { starts: [3], ends: [5] })], 0));
  return sc.transpose(sc.reshape(groupNorm(m, flat, channels, norm), shape), [0, 2, 1, 3, 4]);
}

/** MiniMaxH3VideoResnetBlock3d: x (or its 1×1×1 conv_shortcut) + conv2(silu(norm2(conv1(silu(norm1(x)))))). */
function resnet(m: Module, x: Value, cin: number, cout: number, f: EncoderFields): Value {
  const sc = m.scope;
  let h = causalConv(m.child('conv1'), sc.silu(frameGroupNorm(m.child('norm1'), x, cin, f.norm)), cin, cout, 3, f, GAIN_AFTER_SILU);
  h = causalConv(m.child('conv2'), sc.silu(frameGroupNorm(m.child('norm2'), h, cout, f.norm)), cout, cout, 3, f, GAIN_AFTER_SILU * 0.5);
  const shortcut = cin === cout ? x : causalConv(m.child('conv_shortcut'), x, cin, cout, 1, f);
  return sc.add(shortcut, h);
}

/** MiniMaxH3VideoDownsample3d: (spatial stride 2) one row and column padded bottom / right, then the causal conv with stride (t, s, s), no spatial padding. */
function downsample(m: Module, x: Value, c: number, t: number, s: number, f: EncoderFields): Value {
  const sc = m.scope;
  const [weight, bias] = convWeights(m.child('conv'), c, c, [3, 3, 3]);
  let h = x;
  const after = s === 2 ? 1 : 0;
  if (after > 0 && f.pad !== 'constant') h = sc.pad(h, [0, 0, 0, 0, 0, 0, 0, 0, after, after], { mode: f.pad });
  const spatialEnd = f.pad === 'constant' ? after : 0;
  return sc.conv(h, weight, bias, { pads: [2, 0, 0, 0, spatialEnd, spatialEnd], strides: [t, s, s] });
}

function encoderGraph(config: ResolvedConfig, source: ParamSource, _attentionChunks: number, moments: boolean): GraphBuilder {
  const f = encoderFields(config);
  const z = config.geometry.latentChannels;
  const g = new GraphBuilder(config.className, { docString: `${config.className} encoder built by distvae` });
  const root = new Module(g, source);
  const encoder = root.child('encoder');
  let x: Value = g.input(ENCODER_GRAPH_IO.input, ['batch', f.inChannels, 'frames', 'height', 'width']);
  x = causalConv(encoder.child('conv_in'), x, f.inChannels, f.widths[0]!, 3, f);
  const downs = encoder.child('down_blocks');
  let width = f.widths[0]!;
  for (const [i, out] of f.widths.entries()) {
    const block = downs.child(`${i}`);
    for (let j = 0; j < f.layers; j++) {
      x = resnet(block.child(`resnets.${j}`), x, width, out, f);
      width = out;
    }
    if (f.temporal[i]! * f.spatial[i]! > 1) x = downsample(block.child('downsamplers.0'), x, out, f.temporal[i]!, f.spatial[i]!, f);
  }
  x = g.silu(frameGroupNorm(encoder.child('norm_out'), x, width, f.norm));
  x = causalConv(encoder.child('conv_out'), x, width, 2 * z, 3, f, GAIN_AFTER_SILU);
  const [weight, bias] = convWeights(root.child('quant_conv'), 2 * z, 2 * z, [1, 1, 1]);
  // With moments (--sample) both halves: the clip loop concatenates and drops frames of the moments, as `_encode` does.
  outputPosterior(g, g.conv(x, weight, bias), z, moments, (c) => ['batch', c, 'latent_frames', 'latent_height', 'latent_width']);
  return g;
}

const miniMaxEncoder = encoderGraphOf(encoderGraph);

/** Every encoder parameter (encoder.* and quant_conv.*) with its checkpoint key, shape and synthetic init. */
export const miniMaxEncoderParams = miniMaxEncoder.params;

/**
 * The graph over one clip: input `image` (batch, in_channels, frames, height, width) in the
 * family's sample range, output `latents` (batch, latent_channels, latent_frames, height/r,
 * width/r), the distribution's mean (with `moments: true`, the moments: 2·latent_channels, mean
 * then log-variance).
 */
export const buildMiniMaxEncoderGraph = miniMaxEncoder.build;

/**
 * The class's `_encode` time loop for a video (B, C, F, H, W), given an encoder of clips: F = 1
 * alone, else clips of `clip_length` (the last padded by repeating its last frame), their latents
 * concatenated and the last `token_drop` dropped. Exported for tests of the loop alone.
 */
export async function encodeClips(
  config: ResolvedConfig,
  x: Tensor,
  encodeClip: (clip: Tensor) => Promise<Tensor>,
  signal?: AbortSignal,
): Promise<Tensor> {
  const frames = x.dims[2]!;
  if (frames === 1) return encodeClip(x);
  const { clipLength, tokenDrop } = config.geometry.clips!;
  const padded = padFrames(x, (clipLength - (frames % clipLength)) % clipLength);
  const parts: Tensor[] = [];
  for (let start = 0; start < padded.dims[2]!; start += clipLength) {
    throwIfAborted(signal);
    parts.push(await encodeClip(framesOf(padded, start, clipLength)));
  }
  const latents = concatFrames(parts);
  return tokenDrop > 0 ? framesOf(latents, 0, latents.dims[2]! - tokenDrop) : latents;
}

/**
 * The runner: the clip graph (dynamic frames and size: one session, opened by the first clip)
 * under the `_encode` loop; `moments` makes the graph return the moments, which the loop
 * concatenates and drops frames of as it does the mean. `open` makes the session (onnxruntime-node's
 * here, onnxruntime-web's in a page through the browser map; tests pass the web one in Node).
 */
export function clipEncoderRunner(
  config: ResolvedConfig,
  weights: ReadonlyMap<string, Tensor>,
  options: SessionOptions,
  runner: { moments?: boolean } = {},
  open: (model: ModelProto, options: SessionOptions) => Promise<Session> = createSession,
): TileRunner {
  const bound = bindWeights(miniMaxEncoderParams(config), weights, { source: 'the weights given to the encoder' });
  const graphOptions = { moments: runner.moments === true };
  let session: Promise<Session> | null = null;
  const opened = () => (session ??= open(buildMiniMaxEncoderGraph(config, bound, graphOptions).toModel(), options));
  return {
    async decode(video, signal) {
      return encodeClips(
        config,
        video,
        async (clip) => (await (await opened()).run({ [ENCODER_GRAPH_IO.input]: clip }))[ENCODER_GRAPH_IO.output]!,
        signal,
      );
    },
    async dispose() {
      const s = session;
      session = null;
      await s?.then(
        (x) => x.dispose(),
        () => undefined,
      );
    },
  };
}

/** MiniMax-H3's encoder: the clip graph under the `_encode` loop (`clipEncoderRunner`). */
export const miniMaxH3Encoder: FamilyEncoder = {
  params: miniMaxEncoderParams,
  graph: (config, weights, options = {}) => buildMiniMaxEncoderGraph(config, weights, { moments: options.moments === true }),
  io: ENCODER_GRAPH_IO,
  // The graph is one clip; the runner loops clips (and drops tokens) in JS, so sharding the graph
  // would encode the video as one clip — refused rather than silently wrong.
  graphWithheld:
    'its graph encodes one clip of clip_length frames; the runner loops over clips in JS and drops the last token_drop latent frames, so the graph alone is not the encode',
  ignoredKeyPrefixes: ['decoder.', 'post_quant_conv.'],
  framesFor: (config) => {
    const { clipLength, tokenDrop } = config.geometry.clips!;
    return { kind: 'clips', clipLength, tokenDrop };
  },
  moments: true,
  createRunner: (config, weights, options, runner = {}) => Promise.resolve(clipEncoderRunner(config, weights, options, runner)),
};
