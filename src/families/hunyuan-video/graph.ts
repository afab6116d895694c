// The diffusers `HunyuanVideoDecoder3D` (plus AutoencoderKLHunyuanVideo's post_quant_conv) as
// an ONNX graph built from the config: causal 3-D convolutions with replicate padding,
// GroupNorm over all frames of the call, a mid-block attention whose mask lets a token see
// only tokens of its own and earlier frames, and up-samplers that repeat frames after the
// first. One call decodes every frame it is given (a whole latent, a tile or a temporal
// chunk); the engine's temporal loop decides what a call receives. Also the parameter list
// under diffusers' keys (what building the graph reads).

import { GraphBuilder, type Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import {
  attentionBlock,
  DECODER_NORM_EPSILON,
  normSiluConv,
  Module,
  recordParams,
  resnetBlock,
  upBlock,
  WeightTable,
  type BlockSettings,
  type ParamSource,
} from '../blocks/blocks.js';
import { conv3d, dropLeadingFrames, frameCausalMask, hunyuanCausalConv3d, type Factors3 } from '../blocks/blocks3d.js';
import type { ResolvedConfig } from '../types.js';

export interface HunyuanVideoUpBlock {
  cin: number;
  cout: number;
  /** Up-sampling factors (frames, height, width), or null when the block has no up-sampler. */
  upsample: Factors3 | null;
}

/** The decoder's architecture, read from a resolved AutoencoderKLHunyuanVideo config. */
export interface HunyuanVideoArchitecture {
  latentChannels: number;
  outChannels: number;
  /** block_out_channels, narrowest first; the decoder walks them reversed. */
  blockOut: readonly number[];
  /** Resnets per up block: layers_per_block + 1. */
  resnetsPerBlock: number;
  normGroups: number;
  midAttention: boolean;
  upBlocks: HunyuanVideoUpBlock[];
}

/**
 * Up block i up-samples space while i < log2(spatial ratio) and time in the blocks
 * n−1−log2(4) ≤ i < n−1 (the decoder supports only a temporal ratio of 4).
 */
export function hunyuanVideoArchitecture(config: ResolvedConfig): HunyuanVideoArchitecture {
  const f = config.fields;
  const blockOut = f['block_out_channels'] as number[];
  const n = blockOut.length;
  const spatialLevels = Math.log2(config.geometry.spatialRatio);
  const temporalLevels = Math.log2(config.geometry.temporalRatio);
  const widths = [...blockOut].reverse();
  const upBlocks = widths.map((cout, i): HunyuanVideoUpBlock => {
    const space = i < spatialLevels;
    const time = i >= n - 1 - temporalLevels && i !== n - 1;
    return { cin: widths[Math.max(i - 1, 0)]!, cout, upsample: space || time ? [time ? 2 : 1, space ? 2 : 1, space ? 2 : 1] : null };
  });
  return {
    latentChannels: config.geometry.latentChannels,
    outChannels: config.geometry.outChannels,
    blockOut,
    resnetsPerBlock: (f['layers_per_block'] as number) + 1,
    normGroups: f['norm_num_groups'] as number,
    midAttention: f['mid_block_add_attention'] as boolean,
    upBlocks,
  };
}

/** Every decoder parameter (post_quant_conv.* and decoder.*) with its checkpoint key, shape and synthetic init: what the graph reads. */
export function hunyuanVideoDecoderParams(config: ResolvedConfig): ParamSpec[] {
  return recordParams((source) => hunyuanVideoDecoderGraph(config, source));
}

/**
 * HunyuanVideoUpsampleCausal3D: frame 0 is up-sampled in space only, later frames in time and
 * space, then the causal conv. Written as one nearest resize by (ft, fh, fw) that drops the
 * first ft − 1 frames: the resized frames are ft copies of frame 0, then ft of frame 1, …,
 * so what is left is frame 0 once and every later frame ft times — the same tensor.
 */
function upsampleCausal(m: Module, x: Value, channels: number, factors: Factors3): Value {
  const resized = m.scope.resizeNearest(x, [1, 1, ...factors]);
  return hunyuanCausalConv3d.apply(m.child('conv'), dropLeadingFrames(m.scope, resized, factors[0] - 1), channels, channels, 3);
}

/**
 * The decoder graph: input `latent` (batch, Cz, frames, height, width), output `sample`
 * (batch, out_channels, 1 + 4·(frames − 1), height·r, width·r), raw (no clamp).
 */
export function buildHunyuanVideoDecoderGraph(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>): GraphBuilder {
  const table = new WeightTable(weights);
  const g = hunyuanVideoDecoderGraph(config, table);
  table.assertAllTaken(config.className);
  return g;
}

function hunyuanVideoDecoderGraph(config: ResolvedConfig, source: ParamSource): GraphBuilder {
  const a = hunyuanVideoArchitecture(config);
  const g = new GraphBuilder(config.className, { docString: `${config.className} decoder built by distvae` });
  const root = new Module(g, source);
  const s: BlockSettings = { norm: { groups: a.normGroups, epsilon: DECODER_NORM_EPSILON }, conv: hunyuanCausalConv3d };
  const z = a.latentChannels;
  const top = a.upBlocks[0]!.cin;
  let x: Value = g.input('latent', ['batch', z, 'frames', 'height', 'width']);
  x = conv3d.apply(root.child('post_quant_conv'), x, z, z, 1);
  const decoder = root.child('decoder');
  x = hunyuanCausalConv3d.apply(decoder.child('conv_in'), x, z, top, 3);
  const mid = decoder.child('mid_block');
  x = resnetBlock(mid.child('resnets.0'), x, top, top, s);
  if (a.midAttention) {
    const attention = mid.child('attentions.0');
    x = attentionBlock(attention, x, top, s.norm, frameCausalMask(attention.scope, x));
  }
  x = resnetBlock(mid.child('resnets.1'), x, top, top, s);
  a.upBlocks.forEach((block, i) => {
    const factors = block.upsample;
    x = upBlock(decoder.child(`up_blocks.${i}`), x, block, a.resnetsPerBlock, factors !== null, s, (m, h, c) =>
      upsampleCausal(m, h, c, factors!),
    );
  });
  const last = a.blockOut[0]!;
  x = normSiluConv(decoder.child('conv_norm_out'), decoder.child('conv_out'), x, last, a.outChannels, s);
  g.output('sample', x, ['batch', a.outChannels, 'out_frames', 'out_height', 'out_width']);
  return g;
}
