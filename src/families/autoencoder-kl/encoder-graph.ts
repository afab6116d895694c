// The diffusers `Encoder` of AutoencoderKL and AutoencoderKLFlux2 (both build it from
// `block_out_channels`) as an ONNX graph built from the config: conv_in, the down blocks
// (DownEncoderBlock2D: `layers_per_block` resnets, then Downsample2D except on the last level),
// the mid block, GroupNorm + SiLU, conv_out to 2·latent channels (double_z), quant_conv when
// configured — then the mean half of the moments, which is `latent_dist.mode()` (or, built with
// `moments` for --sample, the moments whole). The same
// resnet, mid-block and attention pieces as the decoder (blocks/blocks.ts), so the two cannot
// spell an op differently. Also the encoder's parameter list (what building the graph reads).

import { GraphBuilder, type Dim, type Value } from '../../graph/builder.js';
import {
  conv2d,
  convWeights,
  DECODER_NORM_EPSILON,
  encoderGraphOf,
  midBlock,
  Module,
  normSiluConv,
  resnetBlock,
  type BlockSettings,
  type ParamSource,
} from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';

/** Graph input and output names of every encoder graph built here. */
export const ENCODER_GRAPH_IO = { input: 'image', output: 'latents' } as const;

/**
 * Outputs an encoder's posterior from `moments` (the diagonal Gaussian's mean and log-variance,
 * 2z channels on axis 1): all of them when `withMoments` (sampling needs both halves; tiles,
 * frames and chunks carry them as they carry the mean), else the first half, the mean
 * (DiagonalGaussianDistribution's `mode()`). `dims` names the output's axes for its channel count.
 */
export function outputPosterior(
  g: GraphBuilder,
  moments: Value,
  z: number,
  withMoments: boolean,
  dims: (channels: number) => readonly Dim[],
  name: string = ENCODER_GRAPH_IO.output,
): void {
  if (withMoments) g.output(name, moments, dims(2 * z));
  else g.output(name, g.slice(moments, { starts: [0], ends: [z], axes: [1] }), dims(z));
}

/** The encoder's architecture, read from a resolved AutoencoderKL / Flux.2 config. */
export interface KlEncoderArchitecture {
  /** Encoder widths, narrowest first: level i ends at blockOut[i]. */
  blockOut: readonly number[];
  layersPerBlock: number;
  inChannels: number;
  latentChannels: number;
  normGroups: number;
  midAttention: boolean;
  quantConv: boolean;
}

export function klEncoderArchitecture(config: ResolvedConfig): KlEncoderArchitecture {
  const f = config.fields;
  return {
    blockOut: f['block_out_channels'] as number[],
    layersPerBlock: f['layers_per_block'] as number,
    inChannels: (f['in_channels'] as number | undefined) ?? config.geometry.outChannels,
    latentChannels: config.geometry.latentChannels,
    normGroups: f['norm_num_groups'] as number,
    midAttention: f['mid_block_add_attention'] as boolean,
    quantConv: f['use_quant_conv'] as boolean,
  };
}

const klEncoder = encoderGraphOf(klEncoderGraph);

/** Every encoder parameter (encoder.* and quant_conv.*) with its checkpoint key, shape and synthetic init. */
export const klEncoderParams = klEncoder.params;

/**
 * The encoder graph: input `image` (batch, in_channels, height, width) in [−1, 1], output
 * `latents` (batch, latent_channels, height/r, width/r), the distribution's mean (with
 * `moments: true`, its moments: 2·latent_channels, mean then log-variance), with the bound
 * weights as initializers under their checkpoint keys. `attentionChunks` splits the mid-block
 * attention's queries (the runner's choice for large images).
 */
export const buildKlEncoderGraph = klEncoder.build;

/**
 * Downsample2D with `padding=0` (as the Encoder builds it): diffusers pads one zero row and
 * column at the bottom and right, then a 3×3 conv with stride 2 — here the conv's own
 * asymmetric pads [top, left, bottom, right] = [0, 0, 1, 1], the same arithmetic.
 */
export function downsampler2d(m: Module, x: Value, channels: number): Value {
  const [weight, bias] = convWeights(m.child('conv'), channels, channels, [3, 3]);
  return m.scope.conv(x, weight, bias, { kernelShape: [3, 3], pads: [0, 0, 1, 1], strides: 2 });
}

function klEncoderGraph(config: ResolvedConfig, source: ParamSource, attentionChunks: number, moments: boolean): GraphBuilder {
  const a = klEncoderArchitecture(config);
  const g = new GraphBuilder(config.className, { docString: `${config.className} encoder built by distvae` });
  const root = new Module(g, source);
  const s: BlockSettings = { norm: { groups: a.normGroups, epsilon: DECODER_NORM_EPSILON }, conv: conv2d };
  const z = a.latentChannels;
  const encoder = root.child('encoder');
  let x: Value = g.input(ENCODER_GRAPH_IO.input, ['batch', a.inChannels, 'height', 'width']);
  x = conv2d.apply(encoder.child('conv_in'), x, a.inChannels, a.blockOut[0]!, 3);
  let width = a.blockOut[0]!;
  for (const [i, cout] of a.blockOut.entries()) {
    const m = encoder.child(`down_blocks.${i}`);
    for (let j = 0; j < a.layersPerBlock; j++) x = resnetBlock(m.child(`resnets.${j}`), x, j === 0 ? width : cout, cout, s);
    width = cout;
    if (i < a.blockOut.length - 1) x = downsampler2d(m.child('downsamplers.0'), x, cout);
  }
  x = midBlock(encoder.child('mid_block'), x, width, a.midAttention, s, attentionChunks);
  x = normSiluConv(encoder.child('conv_norm_out'), encoder.child('conv_out'), x, width, 2 * z, s);
  if (a.quantConv) x = conv2d.apply(root.child('quant_conv'), x, 2 * z, 2 * z, 1);
  outputPosterior(g, x, z, moments, (c) => ['batch', c, 'latent_height', 'latent_width']);
  return g;
}
