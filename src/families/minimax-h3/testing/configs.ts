// The MiniMax-H3 configs tests decode: the `--tiny` and `--small` configs of the team's difref
// harness (families.py `minimaxh3`), as their config.json files spell them (latents_mean / _std
// left at their defaults: the decoder does not read them).

/** 4× spatial, 4× temporal, a 2-layer ViT decoder of 2 heads × 8 (rotary over 6 channels). */
export const MINIMAX_H3_TINY = {
  _class_name: 'AutoencoderKLMiniMaxH3',
  block_out_channels: [16, 32],
  clip_length: 17,
  decoder_attention_head_dim: 8,
  decoder_ffn_mult: 4,
  decoder_norm_eps: 1e-5,
  decoder_num_attention_heads: 2,
  decoder_num_layers: 2,
  decoder_num_register_tokens: 4,
  decoder_rope_dim_ratio: 0.75,
  decoder_rope_theta: 100.0,
  in_channels: 3,
  latent_channels: 24,
  layers_per_block: 1,
  norm_eps: 1e-6,
  norm_num_groups: 8,
  out_channels: 3,
  spatial_downsample_factors: [2, 2],
  spatial_padding_mode: 'reflect',
  temporal_downsample_factors: [2, 2],
  token_drop: 3,
};

/** The published ratios (16× / 4×) and 36 decoder layers, 2 heads × 16 (rotary over 12 channels). */
export const MINIMAX_H3_SMALL = {
  ...MINIMAX_H3_TINY,
  block_out_channels: [8, 16, 16, 32, 32, 32],
  decoder_attention_head_dim: 16,
  decoder_num_layers: 36,
  norm_num_groups: 4,
  spatial_downsample_factors: [2, 2, 2, 2, 1, 1],
  temporal_downsample_factors: [1, 2, 2, 1, 1, 1],
};
