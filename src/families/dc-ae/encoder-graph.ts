// diffusers' AutoencoderDC encoder as an ONNX graph built from its config: conv_in, per level
// `encoder_layers_per_block` ResBlocks or EfficientViT blocks (the decoder's own pieces,
// graph.ts `dcaeBlock`, with the act diffusers' Encoder hard-codes: SiLU) and, on every level but
// the last, a DCDownBlock2d; then conv_out plus the channel-group mean of its input
// (`encoder_out_shortcut`). The class returns this latent directly (`EncoderOutput.latent`): no
// distribution, no quant conv. Also the encoder's parameter list (what building the graph reads).
//
// DCDownBlock2d (cin → cout, ½×, with its shortcut) is a stride-2 3×3 conv (`downsample_block_type`
// "conv", what SANA's checkpoints use) or a 3×3 conv to cout/4 then pixel_unshuffle, plus the
// input pixel-unshuffled and averaged over groups of 4·cin/cout consecutive channels. pixel_unshuffle
// orders channels c·4 + r1·2 + r2; both pieces are stride-2 convs (blocks.ts convSpaceToDepth in
// 'CRD' order, groupMeanConv), which the locality analysis models like any conv.

import { DistVaeError } from '../../errors.js';
import { GraphBuilder, type Value } from '../../graph/builder.js';
import { ENCODER_GRAPH_IO } from '../autoencoder-kl/encoder-graph.js';
import { conv2d, convSpaceToDepth, convWeights, encoderGraphOf, groupMeanConv, Module, type ParamSource } from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';
import { dcaeBlock } from './graph.js';
import { dcaeEncoderFields, type DcaeEncoderFields } from './spec.js';

const dcaeEncoder = encoderGraphOf(encoderGraph);

/** Every encoder parameter (encoder.*) with its checkpoint key, shape and synthetic init. */
export const dcaeEncoderParams = dcaeEncoder.params;

/**
 * The encoder graph: input `image` (batch, in_channels, height, width) in [−1, 1] (height and
 * width multiples of r), output `latents` (batch, latent_channels, height/r, width/r).
 */
export const buildDcaeEncoderGraph = dcaeEncoder.build;

/** Refuses, naming the field, an encoder the class could not build or run (the decoder may still load). */
function checkEncoder(f: DcaeEncoderFields, latentChannels: number): void {
  const refuse = (message: string): never => {
    throw new DistVaeError('CONFIG_INVALID', `AutoencoderDC encoder: ${message}`);
  };
  for (const l of f.levels) {
    if (l.layers === 0)
      refuse(
        `encoder_layers_per_block[${l.index}] = 0: diffusers then builds level ${l.index} without blocks or down block (and conv_in as a down block); distvae encodes only encoders whose every level has blocks`,
      );
    if (l.block === 'EfficientViTBlock' && l.channels < f.headDim)
      refuse(
        `encoder level ${l.index} (width ${l.channels}) has ⌊${l.channels}/${f.headDim}⌋ = 0 attention heads (attention_head_dim ${f.headDim})`,
      );
    const to = l.deeper;
    if (to === null) continue;
    if ((4 * l.channels) % to !== 0)
      refuse(
        `the down block from width ${l.channels} to ${to} averages its pixel-unshuffled input over groups of 4·${l.channels}/${to} channels, not a whole number (encoder_block_out_channels)`,
      );
    if (f.pixelUnshuffle && to % 4 !== 0)
      refuse(
        `the pixel_unshuffle down block to width ${to} convolves to ${to}/4 channels, not a whole number (encoder_block_out_channels)`,
      );
  }
  const top = f.levels[f.levels.length - 1]!.channels;
  if (f.outShortcut && top % latentChannels !== 0)
    refuse(
      `encoder_block_out_channels[-1] = ${top} is not a multiple of latent_channels = ${latentChannels}: encoder_out_shortcut averages groups of ${top} / ${latentChannels} channels`,
    );
}

/** DCDownBlock2d (cin → cout, ½×) with its averaged pixel-unshuffle shortcut (header). */
function downBlock(m: Module, x: Value, cin: number, cout: number, pixelUnshuffle: boolean): Value {
  const sc = m.scope;
  const conv = m.child('conv');
  let h: Value;
  if (pixelUnshuffle) {
    const [weight, bias] = convWeights(conv, cin, cout / 4, [3, 3]);
    h = convSpaceToDepth(m, x, weight, bias, cin, cout / 4, 'CRD');
  } else {
    const [weight, bias] = convWeights(conv, cin, cout, [3, 3]);
    h = sc.conv(x, weight, bias, { pads: 1, strides: 2 });
  }
  // Listing parameters only: the constant shortcut reads none (and would allocate cin·cout·4 floats).
  if (m.weights.listing) return h;
  // pixel_unshuffle's channel q = c·4 + r1·2 + r2, then the mean over groups of g = 4·cin / cout consecutive channels.
  const g = (4 * cin) / cout;
  const shortcut = groupMeanConv(m, x, cout, (o, c, r1, r2) => (Math.floor((c * 4 + r1 * 2 + r2) / g) === o ? 1 / g : 0), cin, 2);
  return sc.add(h, shortcut);
}

function encoderGraph(config: ResolvedConfig, source: ParamSource): GraphBuilder {
  const f = dcaeEncoderFields(config.fields);
  const z = config.geometry.latentChannels;
  checkEncoder(f, z);
  const g = new GraphBuilder(config.className, { docString: `${config.className} encoder built by distvae` });
  const encoder = new Module(g, source).child('encoder');
  const inChannels = config.geometry.outChannels;
  let x: Value = g.input(ENCODER_GRAPH_IO.input, ['batch', inChannels, 'height', 'width']);
  x = conv2d.apply(encoder.child('conv_in'), x, inChannels, f.levels[0]!.channels, 3);
  const downs = encoder.child('down_blocks');
  for (const l of f.levels) {
    const level = downs.child(`${l.index}`);
    for (let j = 0; j < l.layers; j++) x = dcaeBlock(level.child(`${j}`), x, l, f.headDim);
    if (l.deeper !== null) x = downBlock(level.child(`${l.layers}`), x, l.channels, l.deeper, f.pixelUnshuffle);
  }
  const top = f.levels[f.levels.length - 1]!.channels;
  const out = conv2d.apply(encoder.child('conv_out'), x, top, z, 3);
  let latents = out;
  if (f.outShortcut && !source.listing) {
    // conv_out's residual: the mean over consecutive groups of top / z channels of its input.
    const group = top / z;
    const mean = group === 1 ? x : groupMeanConv(encoder, x, z, (o, c) => (Math.floor(c / group) === o ? 1 / group : 0), top, 1);
    latents = g.add(out, mean);
  }
  g.output(ENCODER_GRAPH_IO.output, latents, ['batch', z, 'latent_height', 'latent_width']);
  return g;
}
