// AutoencoderKLMiniMaxH3 (MiniMax-H3's video VAE: a causal 3-D CNN encoder and a non-causal ViT
// decoder, 16× spatial, 4× temporal, 24 latent channels): config reading, the temporal clip
// geometry diffusers derives from `clip_length` / `token_drop`, and the class's tiling defaults —
// its own loop (docs/design.md §3 "Families with their own tiling loop"): a tile of 256 px and a
// *minimum* overlap of 64 px, on by default — and its ImageNet-normalised sample range.

import { ConfigReader, MAX_WIDTH } from '../config-fields.js';
import { defineFamily, squareTiling, type FamilyLayout } from '../layout.js';
import { clipGeometry } from '../clip-frames.js';
import type { ChannelNormalization, ResolvedConfig } from '../types.js';

/** The published config (diffusers' AutoencoderKLMiniMaxH3 defaults, scripts/convert_minimax_h3_to_diffusers.py). */
export const MINIMAX_H3_PUBLISHED = {
  latent_channels: 24,
  block_out_channels: [128, 256, 256, 512, 512, 1024],
  layers_per_block: 2,
  spatial_downsample_factors: [2, 2, 2, 2, 1, 1],
  temporal_downsample_factors: [1, 2, 2, 1, 1, 1],
  norm_num_groups: 32,
  decoder_num_layers: 36,
  decoder_num_attention_heads: 32,
  decoder_attention_head_dim: 64,
  decoder_num_register_tokens: 4,
  decoder_ffn_mult: 4,
  decoder_rope_theta: 100,
  decoder_rope_dim_ratio: 0.75,
  decoder_norm_eps: 1e-5,
  clip_length: 17,
  token_drop: 3,
} as const;

/** The class's tiling attributes (`tile_sample_min_{height,width}`, `tile_sample_min_overlap_{height,width}`), in pixels. */
export const MINIMAX_H3_TILE = 256;
export const MINIMAX_H3_MIN_OVERLAP = 64;

/**
 * What the decoder's sample holds: ImageNet-normalised RGB over [0, 1], not diffusers' usual
 * [−1, 1]. The class's docstring and the MiniMax-H3 pipeline's decode step (modular_pipelines/
 * minimax_h3/decoders.py: `(video.float() * pixel_std + pixel_mean).clamp(0, 1)`, then
 * `postprocess_video` with `do_normalize=False`) undo it; its encode step applies
 * `(pixels / 255 − pixel_mean) / pixel_std` (encoders.py). The config does not carry these: the
 * pipeline's `pixel_mean` / `pixel_std` properties hard-code them.
 */
export const MINIMAX_H3_PIXELS: ChannelNormalization = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

/** The decoder's and the clip loop's fields, read once for the spec (refusals), the graph and the runner. */
export function miniMaxFields(fields: Readonly<Record<string, unknown>>) {
  const f = (k: string) => fields[k] as number;
  const heads = f('decoder_num_attention_heads');
  const headDim = f('decoder_attention_head_dim');
  return {
    latentChannels: f('latent_channels'),
    outChannels: f('out_channels'),
    layers: f('decoder_num_layers'),
    heads,
    headDim,
    dim: heads * headDim,
    registers: f('decoder_num_register_tokens'),
    ffnMult: f('decoder_ffn_mult'),
    ropeTheta: f('decoder_rope_theta'),
    /** `int(attention_head_dim · rope_dim_ratio)`: the leading channels of every head that are rotated. */
    ropeDim: Math.trunc(headDim * f('decoder_rope_dim_ratio')),
    eps: f('decoder_norm_eps'),
    spatialRatio: (fields['spatial_downsample_factors'] as number[]).reduce((a, b) => a * b, 1),
    temporalRatio: (fields['temporal_downsample_factors'] as number[]).reduce((a, b) => a * b, 1),
    clipLength: f('clip_length'),
    tokenDrop: f('token_drop'),
  };
}

function read(r: ConfigReader): Omit<ResolvedConfig, 'fields'> {
  const P = MINIMAX_H3_PUBLISHED;
  r.int('in_channels', 3);
  const outChannels = r.int('out_channels', 3);
  const latentChannels = r.int('latent_channels', P.latent_channels, 1, MAX_WIDTH);
  r.intList('block_out_channels', P.block_out_channels, { max: MAX_WIDTH });
  r.int('layers_per_block', P.layers_per_block);
  const sDown = r.intList('spatial_downsample_factors', P.spatial_downsample_factors);
  const tDown = r.intList('temporal_downsample_factors', P.temporal_downsample_factors);
  r.int('norm_num_groups', P.norm_num_groups);
  r.passthrough('norm_eps', 1e-6);
  r.string('spatial_padding_mode', 'reflect');
  const layers = r.int('decoder_num_layers', P.decoder_num_layers);
  r.blocks(layers, 'decoder_num_layers', layers);
  const heads = r.int('decoder_num_attention_heads', P.decoder_num_attention_heads, 1, MAX_WIDTH);
  const headDim = r.int('decoder_attention_head_dim', P.decoder_attention_head_dim, 1, MAX_WIDTH);
  r.int('decoder_num_register_tokens', P.decoder_num_register_tokens, 0);
  r.int('decoder_ffn_mult', P.decoder_ffn_mult);
  r.number('decoder_rope_theta', P.decoder_rope_theta);
  const ratio = r.number('decoder_rope_dim_ratio', P.decoder_rope_dim_ratio);
  r.number('decoder_norm_eps', P.decoder_norm_eps);
  const clipLength = r.int('clip_length', P.clip_length);
  const tokenDrop = r.int('token_drop', P.token_drop, 0);
  r.passthrough('latents_mean', null);
  r.passthrough('latents_std', null);
  r.check(heads * headDim <= MAX_WIDTH, 'decoder_attention_head_dim', headDim, 'heads × head dim within the width bound', 'too wide');
  const ropeDim = Math.trunc(headDim * ratio);
  r.check(
    ropeDim % 6 === 0 && ropeDim > 0 && ropeDim <= headDim,
    'decoder_rope_dim_ratio',
    ratio,
    `a ratio whose int(${headDim} × ratio) is a positive multiple of 6 (2 × 3 axes) up to ${headDim}`,
    `int(decoder_attention_head_dim × decoder_rope_dim_ratio) = ${ropeDim}: MiniMaxH3VideoRotaryPosEmbed needs a positive multiple of 6 (two per axis of t, h, w) within the head dim`,
  );
  const spatialRatio = sDown.reduce((a, b) => a * b, 1);
  const temporalRatio = tDown.reduce((a, b) => a * b, 1);
  r.check(
    clipLength >= temporalRatio,
    'clip_length',
    clipLength,
    `at least the temporal ratio ${temporalRatio}`,
    `clip_length = ${clipLength} is shorter than one latent frame (${temporalRatio} frames)`,
  );
  return {
    className: 'AutoencoderKLMiniMaxH3',
    geometry: {
      spatialRatio,
      temporalRatio,
      patchSize: 1,
      latentChannels,
      outChannels,
      fiveDimLatents: true,
      clips: clipGeometry(clipLength, tokenDrop, temporalRatio),
    },
    // The class ships with `use_tiling = True`: its released frames are the blended-tile ones.
    tiling: { ...squareTiling(MINIMAX_H3_TILE, MINIMAX_H3_MIN_OVERLAP), enabled: true },
  };
}

/**
 * The class's own tiling loop (tile + minimum overlap, raw neighbours), clips decoded inside each
 * spatial tile by the runner; checkpoints carry the encoder and quant_conv beside the decoder.
 */
const MINIMAX_H3_LAYOUT: FamilyLayout = {
  diffusersTiling: 'tile-and-min-overlap',
  temporal: { kind: 'clip-chunks' },
  ignoredKeyPrefixes: ['encoder.', 'quant_conv.'],
  minWindowLatent: 1,
  sampleRange: MINIMAX_H3_PIXELS,
};

export const miniMaxH3 = defineFamily(MINIMAX_H3_LAYOUT, {
  name: 'minimax-h3',
  description: 'AutoencoderKLMiniMaxH3: MiniMax-H3 video (ViT decoder, 16× spatial, 4× temporal, 24 latent channels)',
  classNames: ['AutoencoderKLMiniMaxH3'],
  read,
});
