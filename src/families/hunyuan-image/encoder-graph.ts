// diffusers' HunyuanImageEncoder2D as an ONNX graph built from an AutoencoderKLHunyuanImage
// config: conv_in, the flat `down_blocks` list of resnets and space-to-depth downsamplers, the
// mid block (resnet, single-head attention with 1×1-conv projections, resnet), GroupNorm + SiLU,
// conv_out plus the channel-group mean of its input, then the mean half of the moments (the
// class has no quant_conv). Also the encoder's parameter list (what building the graph reads).
//
// HunyuanImageDownsample is a 3×3 conv to cout/4 channels followed by space-to-depth in
// (r1, r2, c) order, plus the input's space-to-depth averaged over groups of 4·cin/cout
// channels. Both are spelled as stride-2 convolutions, ops the locality analysis and the
// row-sharding machinery already model (a Slice with steps on a spatial axis they do not):
// the conv then space-to-depth is one 4×4 stride-2 conv whose output channel (r1·2 + r2)·C' + c
// holds the 3×3 kernel of channel c at offset (r1, r2) (built in the graph from the checkpoint
// weight, which onnxruntime folds into a constant), and the averaged shortcut is a 2×2 stride-2
// conv with constant weights 1/g (blocks.ts convSpaceToDepth, groupMeanConv; DC-AE's down
// blocks are the same two in pixel_unshuffle's channel order).

import { DistVaeError } from '../../errors.js';
import { GraphBuilder, type Value } from '../../graph/builder.js';
import { ENCODER_GRAPH_IO, outputPosterior } from '../autoencoder-kl/encoder-graph.js';
import {
  attentionBlock,
  conv2d,
  convSpaceToDepth,
  convWeights,
  DECODER_NORM_EPSILON,
  encoderGraphOf,
  groupMeanConv,
  Module,
  normSiluConv,
  resnetBlock,
  type BlockSettings,
  type ParamSource,
} from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';
import { HUNYUAN_IMAGE_ATTENTION_KEYS } from './graph.js';
import { HUNYUAN_IMAGE_NORM_GROUPS, hunyuanImageFields } from './spec.js';

/** One entry of the encoder's flat `down_blocks` list. */
type DownEntry = { kind: 'resnet'; channels: number } | { kind: 'downsample'; cin: number; cout: number };

/** The encoder's `down_blocks` as diffusers lays them out; refuses a width change inside a resnet (the class cannot run it). */
export function hunyuanImageDownBlocks(config: ResolvedConfig): DownEntry[] {
  const f = hunyuanImageFields(config.fields);
  const match = config.fields['downsample_match_channel'] as boolean;
  const entries: DownEntry[] = [];
  let width = f.blockOut[0]!;
  for (const [i, out] of f.blockOut.entries()) {
    for (let j = 0; j < f.layersPerBlock; j++) {
      if (width !== out)
        throw new DistVaeError(
          'CONFIG_INVALID',
          `encoder level ${i} (width ${out}) is entered at width ${width}: diffusers' HunyuanImageResnetBlock cannot change width (its conv_shortcut is applied to the branch), so the class cannot encode this config`,
        );
      entries.push({ kind: 'resnet', channels: out });
    }
    if (i < Math.log2(f.spatialRatio) && i !== f.blockOut.length - 1) {
      const to = match ? f.blockOut[i + 1]! : out;
      entries.push({ kind: 'downsample', cin: width, cout: to });
      width = to;
    }
  }
  return entries;
}

const hunyuanImageEncoder = encoderGraphOf(encoderGraph);

/** Every encoder parameter (encoder.*) with its checkpoint key, shape and synthetic init. */
export const hunyuanImageEncoderParams = hunyuanImageEncoder.params;

/**
 * The encoder graph: input `image` (batch, in_channels, height, width) in [−1, 1], output
 * `latents` (batch, latent_channels, height/r, width/r), the distribution's mean (with
 * `moments: true`, its moments: 2·latent_channels, mean then log-variance).
 */
export const buildHunyuanImageEncoderGraph = hunyuanImageEncoder.build;

/** HunyuanImageDownsample (cin → cout, ½×) as two stride-2 convs (header). */
function downsample(m: Module, x: Value, cin: number, cout: number): Value {
  const sc = m.scope;
  const quarter = cout / 4;
  const [weight, bias] = convWeights(m.child('conv'), cin, quarter, [3, 3]);
  // Output channel (r1·2 + r2)·C' + c of space-to-depth is conv channel c at (2i + r1, 2j + r2): the 3×3 kernel at offset (r1, r2) of a 4×4 one.
  const h = convSpaceToDepth(m, x, weight, bias, cin, quarter, 'DCR');
  // The shortcut: space-to-depth channel q = (r1·2 + r2)·cin + c, averaged over groups of g = 4·cin / cout.
  // Listing parameters only: the constant shortcut reads none (and would allocate cin·cout·4 floats).
  if (m.weights.listing) return h;
  const g = (4 * cin) / cout;
  const shortcut = groupMeanConv(m, x, cout, (o, c, r1, r2) => (Math.floor(((r1 * 2 + r2) * cin + c) / g) === o ? 1 / g : 0), cin, 2);
  return sc.add(h, shortcut);
}

function encoderGraph(config: ResolvedConfig, source: ParamSource, attentionChunks: number, moments: boolean): GraphBuilder {
  const f = hunyuanImageFields(config.fields);
  const g = new GraphBuilder(config.className, { docString: `${config.className} encoder built by distvae` });
  const encoder = new Module(g, source).child('encoder');
  const s: BlockSettings = { norm: { groups: HUNYUAN_IMAGE_NORM_GROUPS, epsilon: DECODER_NORM_EPSILON }, conv: conv2d };
  const z = config.geometry.latentChannels;
  const inChannels = config.fields['in_channels'] as number;
  const top = f.blockOut[f.blockOut.length - 1]!;
  let x: Value = g.input(ENCODER_GRAPH_IO.input, ['batch', inChannels, 'height', 'width']);
  x = conv2d.apply(encoder.child('conv_in'), x, inChannels, f.blockOut[0]!, 3);
  const downs = encoder.child('down_blocks');
  for (const [k, entry] of hunyuanImageDownBlocks(config).entries()) {
    if (entry.kind === 'resnet') x = resnetBlock(downs.child(`${k}`), x, entry.channels, entry.channels, s);
    else x = downsample(downs.child(`${k}`), x, entry.cin, entry.cout);
  }
  const mid = encoder.child('mid_block');
  x = resnetBlock(mid.child('resnets.0'), x, top, top, s);
  x = attentionBlock(mid.child('attentions.0'), x, top, s.norm, undefined, attentionChunks, HUNYUAN_IMAGE_ATTENTION_KEYS);
  x = resnetBlock(mid.child('resnets.1'), x, top, top, s);
  // conv_out's residual: the input's mean over consecutive groups of top / 2z channels.
  const group = top / (2 * z);
  if (!Number.isInteger(group))
    throw new DistVaeError(
      'CONFIG_INVALID',
      `block_out_channels[-1] = ${top} is not a multiple of 2 × latent_channels = ${2 * z}: HunyuanImageEncoder2D's conv_out residual averages groups of block_out_channels[-1] / (2 × latent_channels) channels`,
    );
  const residual =
    group === 1 || source.listing ? x : groupMeanConv(encoder, x, 2 * z, (o, c) => (Math.floor(c / group) === o ? 1 / group : 0), top, 1);
  x = g.add(normSiluConv(encoder.child('norm_out'), encoder.child('conv_out'), x, top, 2 * z, s), residual);
  outputPosterior(g, x, z, moments, (c) => ['batch', c, 'latent_height', 'latent_width']);
  return g;
}
