// diffusers' LTX2VideoEncoder3d (AutoencoderKLLTX2Video's encoder) as an ONNX graph built from
// the config: the input patchified (p × p pixels, width offset first, into channels), a causal
// (or not, `encoder_causal`) conv_in to latent_channels, down blocks of the decoder's RMS-norm
// resnets each ending, where `spatio_temporal_scaling` says so, in a down-sampler — `conv` (the
// causal conv with stride 2 on every axis) or a space-to-channels one (`spatial`, `temporal`,
// `spatiotemporal`: the first st − 1 frames repeated in front, a conv to out / (st·sh·sw)
// channels packed with its strides, plus the packed input averaged over channel groups) — the
// mid block's resnets, RMS norm + SiLU and conv_out to latent_channels + 1. diffusers repeats the
// last channel into the log-variance, so the mean (`latent_dist.mode()`) is the first
// latent_channels channels. No attention, no quant_conv. One call encodes every frame it is
// given: F = 1 + rt·k frames → 1 + k latent frames. Also the encoder's parameter list (what
// building the graph reads); the encoder's fields are checked here, when an encoder is asked for.

import { DistVaeError } from '../../errors.js';
import { GraphBuilder, type Value } from '../../graph/builder.js';
import { ENCODER_GRAPH_IO, outputPosterior } from '../autoencoder-kl/encoder-graph.js';
import { encoderGraphOf, GAIN_AFTER_SILU, Module, type ConvFlavour, type ParamSource } from '../blocks/blocks.js';
import { channelGroupMean, ltx2Conv3d, spaceToChannels3d, type Factors3, type SpatialPadding } from '../blocks/blocks3d.js';
import type { ResolvedConfig } from '../types.js';
import { resnet, rmsNorm } from './graph.js';

const DOWNSAMPLE_STRIDES: Readonly<Record<string, Factors3>> = {
  conv: [2, 2, 2],
  spatial: [1, 2, 2],
  temporal: [2, 1, 1],
  spatiotemporal: [2, 2, 2],
};

/** One down block: `resnets` resnets at `channels`, then its down-sampler (null: none). */
export interface Ltx2DownBlock {
  channels: number;
  resnets: number;
  /** `conv` keeps the width (a strided conv); the others pack positions into channels and average the input to `to`. */
  downsample: { type: 'conv' | 'spatial' | 'temporal' | 'spatiotemporal'; stride: Factors3; to: number } | null;
}

/** The encoder's architecture, read from a resolved AutoencoderKLLTX2Video config. */
export interface Ltx2EncoderArchitecture {
  inChannels: number;
  latentChannels: number;
  patchSize: number;
  blocks: Ltx2DownBlock[];
  /** Width of the mid block and conv_out's input. */
  top: number;
  midResnets: number;
  causal: boolean;
  spatialPadding: SpatialPadding;
  layerNormEpsilon: number;
}

/**
 * Reads the encoder as diffusers builds it and refuses (CONFIG_INVALID, every reason in one
 * message) what the class cannot build or run, or what the config's ratios contradict.
 */
export function ltx2EncoderArchitecture(config: ResolvedConfig): Ltx2EncoderArchitecture {
  const f = config.fields;
  const blockOut = f['block_out_channels'] as number[];
  const scaling = f['spatio_temporal_scaling'] as boolean[];
  const layers = f['layers_per_block'];
  const blockTypes = f['down_block_types'];
  const types = f['downsample_type'];
  const causal = f['encoder_causal'];
  const padding = f['encoder_spatial_padding_mode'];
  const patchSize = f['patch_size'] as number;
  const patchSizeT = f['patch_size_t'] as number;
  const z = config.geometry.latentChannels;
  const problems: string[] = [];
  const isIntList = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => Number.isInteger(x) && x >= 0);
  const n = blockOut.length;
  if (!isIntList(layers) || layers.length < n)
    problems.push(
      `layers_per_block ${JSON.stringify(layers)} must list at least ${n} resnet counts (one per block, the last also the mid block's)`,
    );
  if (!Array.isArray(blockTypes) || blockTypes.length < n || blockTypes.slice(0, n).some((t) => t !== 'LTX2VideoDownBlock3D'))
    problems.push(`down_block_types ${JSON.stringify(blockTypes)} must be ${n} × "LTX2VideoDownBlock3D"`);
  if (typeof causal !== 'boolean') problems.push(`encoder_causal ${JSON.stringify(causal)} must be a boolean`);
  if (padding !== 'zeros' && padding !== 'reflect')
    problems.push(`encoder_spatial_padding_mode ${JSON.stringify(padding)} must be "zeros" or "reflect"`);
  if (patchSizeT !== 1)
    problems.push(`patch_size_t = ${patchSizeT}: the encoder's conv_in takes in_channels × patch_size² channels, so only 1 runs`);
  const blocks: Ltx2DownBlock[] = [];
  let channels = z;
  let space = patchSize;
  let time = patchSizeT;
  for (let i = 0; i < n; i++) {
    // diffusers builds block i for the previous block's declared width, whatever its down-sampler made.
    const declared = i === 0 ? z : blockOut[i - 1]!;
    if (channels !== declared)
      problems.push(
        `encoder block ${i} is built for ${declared} channels but receives ${channels} (block ${i - 1}'s down-sampler keeps its width)`,
      );
    let downsample: Ltx2DownBlock['downsample'] = null;
    if (scaling[i]) {
      const type = Array.isArray(types) ? types[i] : undefined;
      const stride = typeof type === 'string' ? DOWNSAMPLE_STRIDES[type] : undefined;
      if (!stride) {
        problems.push(`downsample_type[${i}] = ${JSON.stringify(type)} must be conv, spatial, temporal or spatiotemporal`);
      } else {
        const product = stride[0] * stride[1] * stride[2];
        const to = type === 'conv' ? declared : blockOut[i]!;
        if (type !== 'conv' && (to % product !== 0 || (declared * product) % to !== 0))
          problems.push(
            `the ${type} down-sampler of encoder block ${i} (${declared} → ${to} channels) packs ${product} positions: ${to} must be a multiple of ${product} and divide ${declared * product}`,
          );
        downsample = { type: type as NonNullable<Ltx2DownBlock['downsample']>['type'], stride, to };
        space *= stride[1];
        time *= stride[0];
      }
    }
    blocks.push({ channels: declared, resnets: isIntList(layers) ? (layers[i] ?? 0) : 0, downsample });
    channels = downsample?.to ?? declared;
  }
  const top = blockOut[n - 1]!;
  if (channels !== top) problems.push(`the mid block is built for ${top} channels but receives ${channels}`);
  const { spatialRatio: r, temporalRatio: rt } = config.geometry;
  if (space !== r || time !== rt)
    problems.push(
      `the encoder compresses ${space}× in space and ${time}× in time, but the config says spatial_compression_ratio ${r} and temporal_compression_ratio ${rt}`,
    );
  if (problems.length > 0) throw new DistVaeError('CONFIG_INVALID', `the ltx2 encoder cannot be built: ${problems.join('; ')}`);
  return {
    inChannels: f['in_channels'] as number,
    latentChannels: z,
    patchSize,
    blocks,
    top,
    midResnets: (layers as number[])[(layers as number[]).length - 1]!,
    causal: causal as boolean,
    spatialPadding: padding as SpatialPadding,
    layerNormEpsilon: f['resnet_norm_eps'] as number,
  };
}

const ltx2Encoder = encoderGraphOf(encoderGraph);

/** Every encoder parameter (encoder.*) with its checkpoint key, shape and synthetic init. */
export const ltx2EncoderParams = ltx2Encoder.params;

/**
 * The encoder graph: input `image` (batch, in_channels, frames, height, width) in [−1, 1], output
 * `latents` (batch, latent_channels, 1 + (frames − 1)/rt, height/r, width/r), the mean (with
 * `moments: true`, the moments: 2·latent_channels, the log-variance half conv_out's last channel repeated).
 */
export const buildLtx2EncoderGraph = ltx2Encoder.build;

/**
 * LTX2VideoDownsampler3d (cin → cout, strides (st, sh, sw)): the first st − 1 frames repeated in
 * front; the conv to cout / (st·sh·sw) channels and the input itself packed into channels (c
 * slowest), the input averaged over groups of cin·st·sh·sw / cout, summed.
 */
function packingDownsampler(m: Module, x: Value, cin: number, cout: number, stride: Factors3, conv: ConvFlavour): Value {
  const sc = m.scope;
  const product = stride[0] * stride[1] * stride[2];
  const padded = stride[0] > 1 ? sc.concat([sc.slice(x, { starts: [0], ends: [stride[0] - 1], axes: [2] }), x], 2) : x;
  const residual = channelGroupMean(sc, spaceToChannels3d(sc, padded, cin, stride, false), cout, (cin * product) / cout);
  const h = spaceToChannels3d(sc, conv.apply(m.child('conv'), padded, cin, cout / product, 3), cout / product, stride, false);
  return sc.add(h, residual);
}

function encoderGraph(config: ResolvedConfig, source: ParamSource, _attentionChunks: number, moments: boolean): GraphBuilder {
  const a = ltx2EncoderArchitecture(config);
  const conv = ltx2Conv3d({ causal: a.causal, spatialPadding: a.spatialPadding });
  const g = new GraphBuilder(config.className, { docString: `${config.className} encoder built by distvae` });
  const encoder = new Module(g, source).child('encoder');
  const z = a.latentChannels;
  const p = a.patchSize;
  let x: Value = g.input(ENCODER_GRAPH_IO.input, ['batch', a.inChannels, 'frames', 'height', 'width']);
  x = spaceToChannels3d(g, x, a.inChannels, [1, p, p], true);
  x = conv.apply(encoder.child('conv_in'), x, a.inChannels * p * p, z, 3);
  for (const [i, block] of a.blocks.entries()) {
    const m = encoder.child(`down_blocks.${i}`);
    const c = block.channels;
    for (let j = 0; j < block.resnets; j++) x = resnet(m.child(`resnets.${j}`), x, c, c, conv, null, a.layerNormEpsilon);
    const down = block.downsample;
    if (!down) continue;
    const sampler = m.child('downsamplers.0');
    x =
      down.type === 'conv'
        ? ltx2Conv3d({ causal: a.causal, spatialPadding: a.spatialPadding, strides: down.stride }).apply(sampler, x, c, c, 3)
        : packingDownsampler(sampler, x, c, down.to, down.stride, conv);
  }
  const mid = encoder.child('mid_block');
  for (let j = 0; j < a.midResnets; j++) x = resnet(mid.child(`resnets.${j}`), x, a.top, a.top, conv, null, a.layerNormEpsilon);
  x = conv.apply(encoder.child('conv_out'), g.silu(rmsNorm(g, x)), a.top, z + 1, 3, GAIN_AFTER_SILU);
  // The moments are conv_out's z + 1 channels with the last repeated z − 1 times (diffusers'
  // torch.cat([h, h[:, -1:].repeat(1, z − 1, 1, 1, 1)], 1)): the mean is the first z channels,
  // every log-variance channel is conv_out's last.
  const posterior = moments ? g.concat([x, ...Array<Value>(z - 1).fill(g.slice(x, { starts: [z], ends: [z + 1], axes: [1] }))], 1) : x;
  outputPosterior(g, posterior, z, moments, (c) => ['batch', c, 'latent_frames', 'latent_height', 'latent_width']);
  return g;
}
