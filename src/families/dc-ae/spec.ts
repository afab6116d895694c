// AutoencoderDC (SANA's DC-AE, `dc-ae-f32c32-sana-1.0`: 32×, 32 latent channels): config
// reading, the decoder's and the encoder's structure as diffusers builds them from the config
// (levels of ResBlocks or EfficientViT blocks; each decoder level but the last entered through a
// 2× up block, each encoder level but the last left through a 2× down block), and
// diffusers' tiling defaults (tile_sample_min 512 px, tile_sample_stride 448 px: the Family B
// window-and-stride loop, blend 64 px).

import { ConfigReader, MAX_WIDTH } from '../config-fields.js';
import { defineFamily, diffusersLayout, squareTiling, type FamilyLayout } from '../layout.js';
import type { ResolvedConfig } from '../types.js';

/** diffusers' AutoencoderDC tiling attributes (set in `__init__`, output pixels). */
export const DCAE_TILE_SAMPLE_MIN = 512;
export const DCAE_TILE_SAMPLE_STRIDE = 448;

/** Block kinds a decoder level may have. */
export const DCAE_BLOCK_TYPES = ['ResBlock', 'EfficientViTBlock'] as const;
export type DcaeBlockType = (typeof DCAE_BLOCK_TYPES)[number];

/** Activations `get_activation` names that the graph spells (GELU and Mish are not). */
export const DCAE_ACTIVATIONS = ['silu', 'swish', 'relu'] as const;
export type DcaeActivation = (typeof DCAE_ACTIVATIONS)[number];

/**
 * The published SANA DC-AE (diffusers' scripts/convert_dcae_to_diffusers.py, `dc-ae-f32c32-sana-1.0`):
 * the defaults of a config field that is absent, so `planningVae('dc-ae')` is that model. (The
 * class's own `__init__` defaults differ — ResBlocks everywhere, pixel-shuffle up blocks — but
 * every saved config.json spells each field out.)
 */
export const DCAE_PUBLISHED = {
  in_channels: 3,
  latent_channels: 32,
  attention_head_dim: 32,
  decoder_block_types: ['ResBlock', 'ResBlock', 'ResBlock', 'EfficientViTBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
  encoder_block_types: ['ResBlock', 'ResBlock', 'ResBlock', 'EfficientViTBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
  encoder_block_out_channels: [128, 256, 512, 512, 1024, 1024],
  decoder_block_out_channels: [128, 256, 512, 512, 1024, 1024],
  decoder_layers_per_block: [3, 3, 3, 3, 3, 3],
  encoder_layers_per_block: [2, 2, 2, 3, 3, 3],
  decoder_qkv_multiscales: [[], [], [], [5], [5], [5]],
  encoder_qkv_multiscales: [[], [], [], [5], [5], [5]],
  downsample_block_type: 'conv',
  encoder_out_shortcut: true,
  upsample_block_type: 'interpolate',
  decoder_norm_types: 'rms_norm',
  decoder_act_fns: 'silu',
  decoder_in_shortcut: true,
  decoder_conv_act_fn: 'relu',
  scaling_factor: 0.41407,
} as const;

/** Which half's levels a per-level field counts. */
type Side = 'decoder' | 'encoder';

/**
 * One level as the graph builds it, the decoder's (`decoder.up_blocks.<index>`) or the encoder's
 * (`encoder.down_blocks.<index>`).
 */
export interface DcaeLevel {
  index: number;
  channels: number;
  block: DcaeBlockType;
  layers: number;
  act: DcaeActivation;
  /** Kernel sizes of the EfficientViT attention's extra q/k/v scales. */
  scales: number[];
  /**
   * Width of the next deeper level (index + 1), null for the deepest: the decoder enters this
   * level from it through a DCUpBlock2d (module 0 of the level), the encoder leaves this level
   * to it through a 2× down block (the module after its blocks).
   */
  deeper: number | null;
}

/** The decoder's fields, normalised once by the reader (per-level lists), for the graph. */
export interface DcaeFields {
  levels: DcaeLevel[];
  headDim: number;
  interpolate: boolean;
  inShortcut: boolean;
  convAct: DcaeActivation;
}

/** The encoder's fields, normalised by the reader, for the encoder graph (which makes its own structural checks). */
export interface DcaeEncoderFields {
  levels: DcaeLevel[];
  headDim: number;
  /** `downsample_block_type == "pixel_unshuffle"`: a 3×3 conv to a quarter of the width, then pixel_unshuffle; else a stride-2 3×3 conv. */
  pixelUnshuffle: boolean;
  outShortcut: boolean;
}

/** One half's levels from the per-level fields `read` normalised (`<side>_block_out_channels`, `_block_types`, …). */
function dcaeLevels(fields: Readonly<Record<string, unknown>>, side: Side): DcaeLevel[] {
  const widths = fields[`${side}_block_out_channels`] as number[];
  const types = fields[`${side}_block_types`] as DcaeBlockType[];
  const layers = fields[`${side}_layers_per_block`] as number[];
  const scales = fields[`${side}_qkv_multiscales`] as number[][];
  // diffusers' Encoder builds every block with norm "rms_norm" and act "silu"; the decoder's act is per level.
  const acts = side === 'decoder' ? (fields['decoder_act_fns'] as DcaeActivation[]) : null;
  return widths.map((channels, index) => ({
    index,
    channels,
    block: types[index]!,
    layers: layers[index]!,
    act: acts ? acts[index]! : 'silu',
    scales: scales[index]!,
    deeper: index < widths.length - 1 ? widths[index + 1]! : null,
  }));
}

export function dcaeFields(fields: Readonly<Record<string, unknown>>): DcaeFields {
  return {
    levels: dcaeLevels(fields, 'decoder'),
    headDim: fields['attention_head_dim'] as number,
    interpolate: fields['upsample_block_type'] === 'interpolate',
    inShortcut: fields['decoder_in_shortcut'] as boolean,
    convAct: fields['decoder_conv_act_fn'] as DcaeActivation,
  };
}

export function dcaeEncoderFields(fields: Readonly<Record<string, unknown>>): DcaeEncoderFields {
  return {
    levels: dcaeLevels(fields, 'encoder'),
    headDim: fields['attention_head_dim'] as number,
    pixelUnshuffle: fields['downsample_block_type'] === 'pixel_unshuffle',
    outShortcut: fields['encoder_out_shortcut'] as boolean,
  };
}

/** A field diffusers takes as one string or one per level: stored as the per-level list. */
function perLevel<T extends string>(
  r: ConfigReader,
  key: string,
  fallback: string | readonly string[],
  n: number,
  allowed: readonly T[],
  side: Side = 'decoder',
): T[] {
  const value = r.passthrough(key, fallback);
  const list = typeof value === 'string' ? new Array<string>(n).fill(value) : value;
  const ok =
    Array.isArray(list) && list.length === n && list.every((v) => typeof v === 'string' && (allowed as readonly string[]).includes(v));
  r.check(
    ok,
    key,
    value,
    `one of ${allowed.join(', ')}, or a list of ${n} of them (one per ${side} level)`,
    `${key} = ${JSON.stringify(value)}: AutoencoderDC's ${side} here takes one of ${allowed.join(', ')} or a list of ${n} of them (one per level)`,
  );
  const normalised = ok ? (list as T[]) : new Array<T>(n).fill(allowed[0]!);
  r.fields[key] = normalised;
  return normalised;
}

/** Kernel sizes per level (`decoder_qkv_multiscales`, `encoder_qkv_multiscales`): odd integers, one list per level. */
function multiscales(r: ConfigReader, n: number, side: Side = 'decoder'): number[][] {
  const key = `${side}_qkv_multiscales`;
  const value = r.passthrough(key, DCAE_PUBLISHED[`${side}_qkv_multiscales`]);
  const ok =
    Array.isArray(value) &&
    value.length === n &&
    value.every((l) => Array.isArray(l) && l.length <= 8 && l.every((k) => Number.isInteger(k) && k >= 1 && k <= 63 && k % 2 === 1));
  r.check(
    ok,
    key,
    value,
    `a list of ${n} lists (one per level) of odd kernel sizes in [1, 63]`,
    `${key} = ${JSON.stringify(value)}: expected one list of odd kernel sizes per ${side} level (${n})`,
  );
  const normalised = ok ? (value as number[][]).map((l) => [...l]) : Array.from({ length: n }, () => []);
  r.fields[key] = normalised;
  return normalised;
}

function read(r: ConfigReader): Omit<ResolvedConfig, 'fields'> {
  const P = DCAE_PUBLISHED;
  const inChannels = r.int('in_channels', P.in_channels);
  const latentChannels = r.int('latent_channels', P.latent_channels, 1, MAX_WIDTH);
  const headDim = r.int('attention_head_dim', P.attention_head_dim, 1, MAX_WIDTH);
  const encoderWidths = r.intList('encoder_block_out_channels', P.encoder_block_out_channels, { max: MAX_WIDTH });
  const widths = r.intList('decoder_block_out_channels', P.decoder_block_out_channels, { max: MAX_WIDTH });
  const n = widths.length;
  const layers = r.intOrIntList('decoder_layers_per_block', P.decoder_layers_per_block, n, 0);
  r.blocks(
    layers.reduce((a, b) => a + b, 0),
    'decoder_layers_per_block',
    layers,
  );
  const types = perLevel(r, 'decoder_block_types', P.decoder_block_types, n, DCAE_BLOCK_TYPES);
  perLevel(r, 'decoder_norm_types', P.decoder_norm_types, n, ['rms_norm'] as const);
  perLevel(r, 'decoder_act_fns', P.decoder_act_fns, n, DCAE_ACTIVATIONS);
  multiscales(r, n);
  r.string('upsample_block_type', P.upsample_block_type, ['interpolate', 'pixel_shuffle']);
  const inShortcut = r.bool('decoder_in_shortcut', P.decoder_in_shortcut);
  r.string('decoder_conv_act_fn', P.decoder_conv_act_fn, DCAE_ACTIVATIONS);
  r.passthrough('scaling_factor', P.scaling_factor);
  // The encoder's fields, type-checked here; what only the encoder's structure needs (widths its
  // down blocks and shortcuts divide) is checked when an encoder is asked for (encoder-graph.ts),
  // so a decoder loads whatever they say.
  const ne = encoderWidths.length;
  const encoderLayers = r.intOrIntList('encoder_layers_per_block', P.encoder_layers_per_block, ne, 0);
  r.blocks(
    encoderLayers.reduce((a, b) => a + b, 0),
    'encoder_layers_per_block',
    encoderLayers,
    'encoder',
  );
  perLevel(r, 'encoder_block_types', P.encoder_block_types, ne, DCAE_BLOCK_TYPES, 'encoder');
  multiscales(r, ne, 'encoder');
  // diffusers tests `== "pixel_unshuffle"`; any other value (the converter writes "conv") is a stride-2 conv.
  r.string('downsample_block_type', P.downsample_block_type);
  r.bool('encoder_out_shortcut', P.encoder_out_shortcut);

  // diffusers' spatial_compression_ratio counts the *encoder's* levels; the decoder's up blocks must build the same.
  const spatialRatio = 2 ** (encoderWidths.length - 1);
  r.checkRatio(
    'decoder_block_out_channels',
    spatialRatio,
    2 ** (n - 1),
    `2^(len(encoder_block_out_channels) − 1), one 2× up block per decoder level but the last`,
    `the ${n - 1} up blocks of the decoder (2^${n - 1})`,
  );
  for (const [i, l] of layers.entries())
    r.check(
      l > 0,
      `decoder_layers_per_block[${i}]`,
      l,
      'at least 1',
      `decoder_layers_per_block[${i}] = 0: a level without blocks drops its up block in diffusers (level 0 then ends in an up-sampling conv_out); distvae decodes only decoders whose every level has blocks`,
    );
  const top = widths[n - 1]!;
  if (inShortcut)
    r.check(
      top % latentChannels === 0,
      'latent_channels',
      latentChannels,
      `a divisor of decoder_block_out_channels[-1] (${top})`,
      `latent_channels = ${latentChannels} does not divide decoder_block_out_channels[-1] = ${top}: the decoder's in-shortcut repeats the latent block_out_channels[-1] / latent_channels times`,
    );
  for (let i = 0; i < n - 1; i++) {
    const [cin, cout] = [widths[i + 1]!, widths[i]!];
    r.check(
      (4 * cout) % cin === 0,
      'decoder_block_out_channels',
      widths,
      'up blocks whose 4 × output width is a multiple of their input width',
      `the up block from width ${cin} to ${cout} repeats its input 4·${cout}/${cin} times for its shortcut, not a whole number`,
    );
  }
  for (const [i, t] of types.entries())
    if (t === 'EfficientViTBlock')
      r.check(
        widths[i]! >= headDim,
        'attention_head_dim',
        headDim,
        `at most decoder_block_out_channels[${i}] (${widths[i]})`,
        `decoder level ${i} (width ${widths[i]}) has ⌊${widths[i]}/${headDim}⌋ = 0 attention heads`,
      );
  return {
    className: 'AutoencoderDC',
    geometry: { spatialRatio, temporalRatio: 1, patchSize: 1, latentChannels, outChannels: inChannels, fiveDimLatents: false },
    tiling: squareTiling(DCAE_TILE_SAMPLE_MIN, DCAE_TILE_SAMPLE_MIN - DCAE_TILE_SAMPLE_STRIDE),
  };
}

/** diffusers' window-and-stride tiling in pixels; checkpoints carry the encoder (no quant convs); the sample is in [-1, 1]. */
const DCAE_LAYOUT: FamilyLayout = {
  ...diffusersLayout('window-and-stride', { kind: 'none' }),
  ignoredKeyPrefixes: ['encoder.'],
  // AutoencoderDC's encoder returns its latent directly: no distribution to sample.
  latentDistribution: 'none',
};

export const dcae = defineFamily(DCAE_LAYOUT, {
  name: 'dc-ae',
  description: "AutoencoderDC: SANA's DC-AE (32×, 32 latent channels, linear attention)",
  classNames: ['AutoencoderDC'],
  read,
});
