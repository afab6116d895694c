// diffusers' HunyuanImageDecoder2D as an ONNX graph built from an AutoencoderKLHunyuanImage
// config: conv_in plus the latent repeated over channels, the mid block (resnet, single-head
// attention with 1×1-conv projections, resnet), the flat `up_blocks` list of resnets and
// depth-to-space upsamplers, GroupNorm + SiLU, conv_out. Also the decoder's parameter list under
// the checkpoint's own keys (what building the graph reads).
//
// PyTorch's `repeat_interleave(r, dim=1)` (channel k reads channel ⌊k / r⌋) is spelled as a
// nearest Resize by r on the channel axis, which reads exactly that source channel: one op that
// onnxruntime and the locality analysis both model, and exact (a copy).

import { GraphBuilder, type Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import {
  attentionBlock,
  conv2d,
  DECODER_NORM_EPSILON,
  Module,
  normSiluConv,
  recordParams,
  resnetBlock,
  WeightTable,
  type AttentionKeys,
  type BlockSettings,
  type ParamSource,
} from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';
import { HUNYUAN_IMAGE_NORM_GROUPS, hunyuanImageFields, hunyuanImageLevels } from './spec.js';

/** HunyuanImageAttentionBlock: `norm`, 1×1 convs `to_q`, `to_k`, `to_v`, `proj`. */
export const HUNYUAN_IMAGE_ATTENTION_KEYS: AttentionKeys = {
  norm: 'norm',
  q: 'to_q',
  k: 'to_k',
  v: 'to_v',
  out: 'proj',
  projections: 'conv1x1',
};

/** Every decoder parameter (decoder.*) with its checkpoint key, shape and synthetic init: what the graph reads. */
export function hunyuanImageDecoderParams(config: ResolvedConfig): ParamSpec[] {
  return recordParams((source) => decoderGraph(config, source));
}

export interface HunyuanImageGraphOptions {
  /** Query chunks of the mid-block attention (default 1: one N × N matrix). */
  attentionChunks?: number;
}

/**
 * The decoder graph: input `latent` (batch, 64, height, width), output `sample`
 * (batch, out_channels, height·r, width·r), raw (diffusers applies no clamp), with the bound
 * weights as initializers under their checkpoint keys.
 */
export function buildHunyuanImageDecoderGraph(
  config: ResolvedConfig,
  weights: ReadonlyMap<string, Tensor>,
  options: HunyuanImageGraphOptions = {},
): GraphBuilder {
  const table = new WeightTable(weights);
  const g = decoderGraph(config, table, options);
  table.assertAllTaken(config.className);
  return g;
}

/** x repeated `times` times along channels, each channel in place (PyTorch's `repeat_interleave(times, dim=1)`). */
function repeatChannels(m: Module, x: Value, times: number): Value {
  return times === 1 ? x : m.scope.resizeNearest(x, [1, times, 1, 1]);
}

/**
 * HunyuanImageUpsample (cin → cout, 2×): a 3×3 conv to 4·cout channels plus the input repeated
 * 4·cout / cin times, then depth-to-space in DCR order ((r1, r2, c) → c at row offset r1, column
 * offset r2, as the class's reshape / permute does). Depth-to-space is a permutation, so adding
 * before it equals diffusers' adding after it.
 */
function upsample(m: Module, x: Value, cin: number, cout: number): Value {
  const h = conv2d.apply(m.child('conv'), x, cin, 4 * cout, 3);
  return m.scope.depthToSpace(m.scope.add(h, repeatChannels(m, x, (4 * cout) / cin)), 2, 'DCR');
}

function decoderGraph(config: ResolvedConfig, source: ParamSource, options: HunyuanImageGraphOptions = {}): GraphBuilder {
  const f = hunyuanImageFields(config.fields);
  const levels = hunyuanImageLevels(f);
  const g = new GraphBuilder(config.className, { docString: `${config.className} decoder built by distvae` });
  const decoder = new Module(g, source).child('decoder');
  const s: BlockSettings = { norm: { groups: HUNYUAN_IMAGE_NORM_GROUPS, epsilon: DECODER_NORM_EPSILON }, conv: conv2d };
  const z = config.geometry.latentChannels;
  const top = levels[0]!.channels;
  const latent = g.input('latent', ['batch', z, 'height', 'width']);
  let x = g.add(conv2d.apply(decoder.child('conv_in'), latent, z, top, 3), repeatChannels(decoder, latent, top / z));
  const mid = decoder.child('mid_block');
  x = resnetBlock(mid.child('resnets.0'), x, top, top, s);
  x = attentionBlock(mid.child('attentions.0'), x, top, s.norm, undefined, options.attentionChunks ?? 1, HUNYUAN_IMAGE_ATTENTION_KEYS);
  x = resnetBlock(mid.child('resnets.1'), x, top, top, s);
  const ups = decoder.child('up_blocks');
  for (const level of levels) {
    const c = level.channels;
    for (let j = 0; j <= f.layersPerBlock; j++) x = resnetBlock(ups.child(`${level.first + j}`), x, c, c, s);
    if (level.upsampleTo !== null) x = upsample(ups.child(`${level.first + f.layersPerBlock + 1}`), x, c, level.upsampleTo);
  }
  const last = levels[levels.length - 1]!.channels;
  const out = config.geometry.outChannels;
  x = normSiluConv(decoder.child('norm_out'), decoder.child('conv_out'), x, last, out, s);
  g.output('sample', x, ['batch', out, 'out_height', 'out_width']);
  return g;
}
