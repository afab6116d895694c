// diffusers' HunyuanVideo15Encoder3D as an ONNX graph built from an AutoencoderKLHunyuanVideo15
// config: a causal conv_in, down blocks of RMS-norm resnets each ending, while the block
// down-samples space, in a channel-packing down-sampler (2× in space, and in time from level
// log2(r / rt) on), the mid block (resnet, frame-causal single-head attention, resnet), RMS norm +
// SiLU, conv_out to 2·latent channels plus the channel-averaging shortcut of its input (the mean
// over groups of block_out_channels[-1] / (2·latent_channels) channels) — then the mean half of
// the moments (the class has no quant_conv). The resnet, attention and norm are the decoder's
// (graph.ts). One call encodes every frame it is given: F = 1 + 4k frames → 1 + k latent frames.
//
// HunyuanVideo15Downsample packs (r1, r2, r3, C) into channels, C fastest (`_dcae_downsample_rearrange`)
// and in time keeps frame 0 apart: its packed conv output is duplicated to the full width and its
// shortcut averaged over half-size groups. A frame-0 copy put in front of the tensor makes the
// time packing start with (frame 0, frame 0) — exactly the duplicated conv output — so the conv
// branch needs no frame split; the shortcut's frame 0 is computed apart and its packed tail sliced
// from the same padded tensor, so no tensor that is reshaped ever has zero frames (a 1-frame call).

import { DistVaeError } from '../../errors.js';
import { GraphBuilder, type Scope, type Value } from '../../graph/builder.js';
import { ENCODER_GRAPH_IO, outputPosterior } from '../autoencoder-kl/encoder-graph.js';
import { encoderGraphOf, Module, GAIN_AFTER_SILU, type ParamSource } from '../blocks/blocks.js';
import { channelGroupMean, hunyuanCausalConv3d } from '../blocks/blocks3d.js';
import type { ResolvedConfig } from '../types.js';
import { attention, frames, resnet, rmsNorm } from './graph.js';

/** One down block of HunyuanVideo15Encoder3D. */
export interface HunyuanVideo15DownLevel {
  /** Width the block is entered at (its first resnet maps cin → cout). */
  cin: number;
  cout: number;
  /** The down-sampler after the resnets (2× in space; also 2× in time when `temporal`), or null. */
  downsample: { to: number; temporal: boolean } | null;
}

/**
 * The encoder's down blocks as diffusers builds them: block i down-samples while
 * i < log2(spatial ratio), in time too from i ≥ log2(spatial / temporal ratio), to the next width
 * with `downsample_match_channel` (else its own). Refuses (CONFIG_INVALID) what the class cannot
 * build or run: a width past the last, packed widths that do not divide, ratios the blocks do not make.
 */
export function hunyuanVideo15DownLevels(config: ResolvedConfig): HunyuanVideo15DownLevel[] {
  const f = config.fields;
  const blockOut = f['block_out_channels'] as number[];
  const match = f['downsample_match_channel'] as boolean;
  const { spatialRatio: r, temporalRatio: rt } = config.geometry;
  const invalid = (message: string) => new DistVaeError('CONFIG_INVALID', message);
  const levels: HunyuanVideo15DownLevel[] = [];
  let cin = blockOut[0]!;
  let space = 1;
  let time = 1;
  for (const [i, cout] of blockOut.entries()) {
    if (!(i < Math.log2(r))) {
      levels.push({ cin, cout, downsample: null });
      cin = cout;
      continue;
    }
    const temporal = i >= Math.log2(r / rt);
    const to = match ? blockOut[i + 1] : cout;
    if (to === undefined)
      throw invalid(
        `encoder level ${i} down-samples to the next width, but block_out_channels has only ${blockOut.length} entries (diffusers indexes past them)`,
      );
    const factor = temporal ? 8 : 4;
    if (to % factor !== 0 || (4 * cout) % to !== 0)
      throw invalid(
        `the down-sampler of encoder level ${i} (width ${cout} → ${to}${temporal ? ', in time too' : ''}) packs ${factor} positions into channels: ${to} must be a multiple of ${factor} and divide 4 × ${cout}`,
      );
    levels.push({ cin, cout, downsample: { to, temporal } });
    space *= 2;
    if (temporal) time *= 2;
    cin = to;
  }
  if (space !== r || time !== rt)
    throw invalid(
      `the encoder's down-samplers make ${space}× in space and ${time}× in time, but the config says spatial_compression_ratio ${r} and temporal_compression_ratio ${rt}`,
    );
  return levels;
}

const hunyuanVideo15Encoder = encoderGraphOf(encoderGraph);

/** Every encoder parameter (encoder.*) with its checkpoint key, shape and synthetic init. */
export const hunyuanVideo15EncoderParams = hunyuanVideo15Encoder.params;

/**
 * The encoder graph: input `image` (batch, in_channels, frames, height, width) in [−1, 1], output
 * `latents` (batch, latent_channels, 1 + (frames − 1)/rt, height/r, width/r), the mean (with
 * `moments: true`, the moments: 2·latent_channels, mean then log-variance).
 */
export const buildHunyuanVideo15EncoderGraph = hunyuanVideo15Encoder.build;

/**
 * `_dcae_downsample_rearrange`: (B, C, F·r1, H·r2, W·r3) → (B, r1·r2·r3·C, F, H, W), out channel
 * ((k·r2 + a)·r3 + b)·C + c holding in[c, f·r1 + k, h·r2 + a, w·r3 + b].
 */
function spaceToPacked(sc: Scope, x: Value, channels: number, factors: readonly [number, number, number]): Value {
  const shape = sc.shape(x);
  const batch = sc.slice(shape, { starts: [0], ends: [1] });
  const fhw = sc.div(sc.slice(shape, { starts: [2], ends: [5] }), sc.int64Constant([...factors]));
  const [f, h, w] = [0, 1, 2].map((i) => sc.slice(fhw, { starts: [i], ends: [i + 1] })) as [Value, Value, Value];
  const r = factors.map((v) => sc.int64Constant([v])) as [Value, Value, Value];
  const split = sc.reshape(x, sc.concat([batch, sc.int64Constant([channels]), f, r[0], h, r[1], w, r[2]], 0));
  const packed = sc.transpose(split, [0, 3, 5, 7, 1, 2, 4, 6]);
  return sc.reshape(packed, sc.concat([batch, sc.int64Constant([factors[0] * factors[1] * factors[2] * channels]), fhw], 0));
}

/** HunyuanVideo15Downsample (cin → cout), frame 0 apart in time (header). */
function downsample(m: Module, x: Value, cin: number, cout: number, temporal: boolean): Value {
  const sc = m.scope;
  const factor = temporal ? 8 : 4;
  const group = (factor * cin) / cout;
  const h = hunyuanCausalConv3d.apply(m.child('conv'), x, cin, cout / factor, 3);
  if (!temporal)
    return sc.add(spaceToPacked(sc, h, cout / 4, [1, 2, 2]), channelGroupMean(sc, spaceToPacked(sc, x, cin, [1, 2, 2]), cout, group));
  const withFirst = (v: Value) => sc.concat([frames(sc, v, 0, 1), v], 2);
  const packed = spaceToPacked(sc, withFirst(h), cout / 8, [2, 2, 2]);
  const first = channelGroupMean(sc, spaceToPacked(sc, frames(sc, x, 0, 1), cin, [1, 2, 2]), cout, group / 2);
  const rest = frames(sc, channelGroupMean(sc, spaceToPacked(sc, withFirst(x), cin, [2, 2, 2]), cout, group), 1);
  return sc.add(packed, sc.concat([first, rest], 2));
}

function encoderGraph(config: ResolvedConfig, source: ParamSource, _attentionChunks: number, moments: boolean): GraphBuilder {
  const levels = hunyuanVideo15DownLevels(config);
  const layers = config.fields['layers_per_block'] as number;
  const g = new GraphBuilder(config.className, { docString: `${config.className} encoder built by distvae` });
  const encoder = new Module(g, source).child('encoder');
  const z = config.geometry.latentChannels;
  const inChannels = config.fields['in_channels'] as number;
  const top = levels[levels.length - 1]!.cout;
  if (top % (2 * z) !== 0)
    throw new DistVaeError(
      'CONFIG_INVALID',
      `block_out_channels[-1] = ${top} is not a multiple of 2 × latent_channels = ${2 * z}: HunyuanVideo15Encoder3D's conv_out shortcut averages groups of block_out_channels[-1] / (2 × latent_channels) channels`,
    );
  let x: Value = g.input(ENCODER_GRAPH_IO.input, ['batch', inChannels, 'frames', 'height', 'width']);
  x = hunyuanCausalConv3d.apply(encoder.child('conv_in'), x, inChannels, levels[0]!.cin, 3);
  for (const [i, level] of levels.entries()) {
    const block = encoder.child(`down_blocks.${i}`);
    for (let j = 0; j < layers; j++) x = resnet(block.child(`resnets.${j}`), x, j === 0 ? level.cin : level.cout, level.cout);
    if (level.downsample) x = downsample(block.child('downsamplers.0'), x, level.cout, level.downsample.to, level.downsample.temporal);
  }
  const mid = encoder.child('mid_block');
  x = resnet(mid.child('resnets.0'), x, top, top);
  x = attention(mid.child('attentions.0'), x, top);
  x = resnet(mid.child('resnets.1'), x, top, top);
  const shortcut = channelGroupMean(g, x, 2 * z, top / (2 * z));
  x = encoder.scope.silu(rmsNorm(encoder.child('norm_out'), x, top));
  x = g.add(hunyuanCausalConv3d.apply(encoder.child('conv_out'), x, top, 2 * z, 3, GAIN_AFTER_SILU), shortcut);
  outputPosterior(g, x, z, moments, (c) => ['batch', c, 'latent_frames', 'latent_height', 'latent_width']);
  return g;
}
