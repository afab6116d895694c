// The diffusers `Decoder` of AutoencoderKL and AutoencoderKLFlux2 (they share it: Flux.2 only
// reads its widths from `decoder_block_out_channels` when set) as an ONNX graph built from the
// config: post_quant_conv (when configured), conv_in, mid block, up blocks, GroupNorm + SiLU,
// conv_out. Also the decoder's parameter list under the checkpoint's own keys (what building the
// graph reads) and the rename of legacy attention keys diffusers applies on load.

import { GraphBuilder, type Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import {
  channelParts,
  conv2d,
  DECODER_NORM_EPSILON,
  DEFAULT_UPSAMPLER_FORM,
  normSiluConv,
  midBlock,
  Module,
  recordParams,
  resnetBlockFromParts,
  upBlock,
  upsampler2d,
  upsampler2dParts,
  WeightTable,
  type BlockSettings,
  type ParamSource,
  type UpsamplerForm,
} from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';

/** The decoder's architecture, read from a resolved AutoencoderKL / Flux.2 config. */
export interface KlDecoderArchitecture {
  /** Decoder widths, narrowest first (diffusers' order); the decoder walks them reversed. */
  blockOut: readonly number[];
  layersPerBlock: number;
  latentChannels: number;
  outChannels: number;
  normGroups: number;
  midAttention: boolean;
  postQuantConv: boolean;
}

export function klDecoderArchitecture(config: ResolvedConfig): KlDecoderArchitecture {
  const f = config.fields;
  const blockOut = (f['decoder_block_out_channels'] ?? f['block_out_channels']) as number[];
  return {
    blockOut,
    layersPerBlock: f['layers_per_block'] as number,
    latentChannels: config.geometry.latentChannels,
    outChannels: config.geometry.outChannels,
    normGroups: f['norm_num_groups'] as number,
    midAttention: f['mid_block_add_attention'] as boolean,
    postQuantConv: f['use_post_quant_conv'] as boolean,
  };
}

/** Every decoder parameter (post_quant_conv.* and decoder.*) with its checkpoint key, shape and synthetic init: what the graph reads. */
export function klDecoderParams(config: ResolvedConfig): ParamSpec[] {
  return recordParams((source) => klDecoderGraph(config, source));
}

/**
 * The decoder graph: input `latent` (batch, C, height, width), output `sample`
 * (batch, out_channels, height·r, width·r), raw (no clamp), with the bound weights as
 * initializers under their checkpoint keys.
 */
export interface KlGraphOptions {
  /** How the upsamplers are spelled (default: the fastest measured, DEFAULT_UPSAMPLER_FORM). */
  upsampler?: UpsamplerForm;
  /** Query chunks of the mid-block attention (default 1: one N × N matrix; attentionChunksFor). */
  attentionChunks?: number;
  /**
   * Emit each upsampler that feeds a narrowing resnet as channel slices (blocks/blocks.ts, "channel
   * parts"): a lower activation peak, same function. Off by default, so the graph that locality
   * analysis and row sharding read keeps one GroupNorm per checkpoint norm; the tile runner turns it on.
   */
  channelParts?: boolean;
}

export function buildKlDecoderGraph(
  config: ResolvedConfig,
  weights: ReadonlyMap<string, Tensor>,
  options: KlGraphOptions = {},
): GraphBuilder {
  const table = new WeightTable(weights);
  const g = klDecoderGraph(config, table, options);
  table.assertAllTaken(config.className);
  return g;
}

function klDecoderGraph(config: ResolvedConfig, source: ParamSource, options: KlGraphOptions = {}): GraphBuilder {
  const a = klDecoderArchitecture(config);
  const g = new GraphBuilder(config.className, { docString: `${config.className} decoder built by distvae` });
  const root = new Module(g, source);
  const s: BlockSettings = { norm: { groups: a.normGroups, epsilon: DECODER_NORM_EPSILON }, conv: conv2d };
  const widths = [...a.blockOut].reverse();
  const z = a.latentChannels;
  let x: Value = g.input('latent', ['batch', z, 'height', 'width']);
  if (a.postQuantConv) x = conv2d.apply(root.child('post_quant_conv'), x, z, z, 1);
  const decoder = root.child('decoder');
  x = conv2d.apply(decoder.child('conv_in'), x, z, widths[0]!, 3);
  x = midBlock(decoder.child('mid_block'), x, widths[0]!, a.midAttention, s, options.attentionChunks ?? 1);
  const levels = a.blockOut.length;
  const upsampler = options.upsampler ?? DEFAULT_UPSAMPLER_FORM;
  const upsample = (m: Module, h: Value, channels: number) => upsampler2d(m, h, channels, upsampler);
  let parts: Value[] | null = null;
  for (let i = 0; i < levels; i++) {
    const m = decoder.child(`up_blocks.${i}`);
    const channels = { cin: widths[Math.max(i - 1, 0)]!, cout: widths[i]! };
    if (parts) {
      // The first resnet reads the previous upsampler's slices; the rest of the block as usual.
      x = resnetBlockFromParts(m.child('resnets.0'), parts, channels.cin, channels.cout, s);
      x = upBlock(m, x, channels, a.layersPerBlock + 1, false, s, upsample, 1);
    } else {
      x = upBlock(m, x, channels, a.layersPerBlock + 1, false, s, upsample);
    }
    parts = null;
    if (i === levels - 1) break;
    const k = options.channelParts ? channelParts(widths[i]!, widths[i + 1]!, a.normGroups) : 1;
    if (k > 1) parts = upsampler2dParts(m.child('upsamplers.0'), x, widths[i]!, upsampler, k);
    else x = upsample(m.child('upsamplers.0'), x, widths[i]!);
  }
  const last = a.blockOut[0]!;
  x = normSiluConv(decoder.child('conv_norm_out'), decoder.child('conv_out'), x, last, a.outChannels, s);
  g.output('sample', x, ['batch', a.outChannels, 'out_height', 'out_width']);
  return g;
}

/**
 * Older diffusers-format files name the mid-block attention `query`, `key`, `value`,
 * `proj_attn`; diffusers renames them on load (`_fix_state_dict_keys_on_load`), and so do we.
 * Shapes are unchanged (2-D Linear weights).
 */
const LEGACY_ATTENTION_NAMES: Readonly<Record<string, string>> = { query: 'to_q', key: 'to_k', value: 'to_v', proj_attn: 'to_out.0' };
const LEGACY_ATTENTION_KEY = /^(.*\.attentions\.\d+)\.(query|key|value|proj_attn)\.(weight|bias)$/;

export function renameLegacyAttentionKeys<T>(weights: ReadonlyMap<string, T>): Map<string, T> {
  const out = new Map<string, T>();
  for (const [key, value] of weights) {
    const m = LEGACY_ATTENTION_KEY.exec(key);
    const renamed = m ? `${m[1]}.${LEGACY_ATTENTION_NAMES[m[2]!]}.${m[3]}` : key;
    // A file holding both spellings keeps the legacy key, which strict binding then reports.
    out.set(weights.has(renamed) ? key : renamed, value);
  }
  return out;
}
