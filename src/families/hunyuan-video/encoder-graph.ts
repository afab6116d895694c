// diffusers' HunyuanVideoEncoder3D (plus AutoencoderKLHunyuanVideo's quant_conv) as an ONNX
// graph built from the config: a causal conv_in, down blocks of causal resnets each ending in a
// causal conv with stride (time, height, width) where the block down-samples, the mid block
// (resnet, single-head attention whose mask lets a token see only its own and earlier frames,
// resnet), GroupNorm + SiLU, conv_out to 2·latent channels, quant_conv — then the mean half of
// the moments (`latent_dist.mode()`). The same resnet, attention and causal-conv pieces as the
// decoder (blocks.ts, blocks3d.ts). One call encodes every frame it is given: F = 1 + 4k frames
// become 1 + k latent frames (the causal strided convs keep frame 0 on its own). Also the
// encoder's parameter list (what building the graph reads).

import { GraphBuilder, type Value } from '../../graph/builder.js';
import { ENCODER_GRAPH_IO, outputPosterior } from '../autoencoder-kl/encoder-graph.js';
import {
  attentionBlock,
  convWeights,
  DECODER_NORM_EPSILON,
  encoderGraphOf,
  Module,
  normSiluConv,
  resnetBlock,
  type BlockSettings,
  type ParamSource,
} from '../blocks/blocks.js';
import { conv3d, frameCausalMask, hunyuanCausalConv3d, type Factors3 } from '../blocks/blocks3d.js';
import type { ResolvedConfig } from '../types.js';

/** One down block of the encoder: its width and the strides of its down-sampler (null: none). */
export interface HunyuanVideoDownBlock {
  cin: number;
  cout: number;
  /** (frames, height, width) strides of the block's down-sampler, or null when it has none. */
  downsample: Factors3 | null;
}

/**
 * Down block i halves space while i < log2(spatial ratio) and time in the blocks
 * n−1−log2(4) ≤ i < n−1 — diffusers' rule for a temporal ratio of 4, the only one the family
 * accepts (spec.ts), the decoder's up blocks mirrored.
 */
export function hunyuanVideoDownBlocks(config: ResolvedConfig): HunyuanVideoDownBlock[] {
  const blockOut = config.fields['block_out_channels'] as number[];
  const n = blockOut.length;
  const spatialLevels = Math.log2(config.geometry.spatialRatio);
  const temporalLevels = Math.log2(config.geometry.temporalRatio);
  return blockOut.map((cout, i) => {
    const space = i < spatialLevels;
    const time = i >= n - 1 - temporalLevels && i !== n - 1;
    const downsample: Factors3 | null = space || time ? [time ? 2 : 1, space ? 2 : 1, space ? 2 : 1] : null;
    return { cin: blockOut[Math.max(i - 1, 0)]!, cout, downsample };
  });
}

const hunyuanVideoEncoder = encoderGraphOf(encoderGraph);

/** Every encoder parameter (encoder.* and quant_conv.*) with its checkpoint key, shape and synthetic init. */
export const hunyuanVideoEncoderParams = hunyuanVideoEncoder.params;

/**
 * The encoder graph: input `image` (batch, in_channels, frames, height, width) in [−1, 1], output
 * `latents` (batch, latent_channels, 1 + (frames − 1)/4, height/r, width/r), the mean (with
 * `moments: true`, the moments: 2·latent_channels, mean then log-variance).
 */
export const buildHunyuanVideoEncoderGraph = hunyuanVideoEncoder.build;

/**
 * HunyuanVideoDownsampleCausal3D: the causal conv (replicate padding: 2 frames in front, 1 on
 * each side of space) with stride (st, sh, sw), at `.conv.conv`.
 */
function downsampleCausal(m: Module, x: Value, channels: number, strides: Factors3): Value {
  const sc = m.scope;
  const [weight, bias] = convWeights(m.child('conv').child('conv'), channels, channels, [3, 3, 3]);
  const padded = sc.pad(x, [0, 0, 2, 1, 1, 0, 0, 0, 1, 1], { mode: 'edge' });
  return sc.conv(padded, weight, bias, { strides: [...strides] });
}

function encoderGraph(config: ResolvedConfig, source: ParamSource, _attentionChunks: number, moments: boolean): GraphBuilder {
  const f = config.fields;
  const blocks = hunyuanVideoDownBlocks(config);
  const layers = f['layers_per_block'] as number;
  const g = new GraphBuilder(config.className, { docString: `${config.className} encoder built by distvae` });
  const root = new Module(g, source);
  const encoder = root.child('encoder');
  const s: BlockSettings = { norm: { groups: f['norm_num_groups'] as number, epsilon: DECODER_NORM_EPSILON }, conv: hunyuanCausalConv3d };
  const z = config.geometry.latentChannels;
  const inChannels = f['in_channels'] as number;
  const first = blocks[0]!.cin;
  const top = blocks[blocks.length - 1]!.cout;
  let x: Value = g.input(ENCODER_GRAPH_IO.input, ['batch', inChannels, 'frames', 'height', 'width']);
  x = hunyuanCausalConv3d.apply(encoder.child('conv_in'), x, inChannels, first, 3);
  for (const [i, block] of blocks.entries()) {
    const m = encoder.child(`down_blocks.${i}`);
    for (let j = 0; j < layers; j++) x = resnetBlock(m.child(`resnets.${j}`), x, j === 0 ? block.cin : block.cout, block.cout, s);
    if (block.downsample) x = downsampleCausal(m.child('downsamplers.0'), x, block.cout, block.downsample);
  }
  const mid = encoder.child('mid_block');
  x = resnetBlock(mid.child('resnets.0'), x, top, top, s);
  if (f['mid_block_add_attention'] as boolean) {
    const attention = mid.child('attentions.0');
    x = attentionBlock(attention, x, top, s.norm, frameCausalMask(attention.scope, x));
  }
  x = resnetBlock(mid.child('resnets.1'), x, top, top, s);
  x = normSiluConv(encoder.child('conv_norm_out'), encoder.child('conv_out'), x, top, 2 * z, s);
  x = conv3d.apply(root.child('quant_conv'), x, 2 * z, 2 * z, 1);
  outputPosterior(g, x, z, moments, (c) => ['batch', c, 'latent_frames', 'latent_height', 'latent_width']);
  return g;
}
