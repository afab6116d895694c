// The LTX-2 configs the encoder tests run: the `--tiny` and `--small` configs of the team's difref
// harness (families.py `ltx2`), as their config.json files spell them.

/** Two spatio-temporal down-samplers after a 4 × 4 patch: 16× in space, 4× in time; 16–32 channels. */
export const LTX2_DIFREF_TINY = {
  _class_name: 'AutoencoderKLLTX2Video',
  block_out_channels: [16, 32],
  decoder_block_out_channels: [16, 32],
  decoder_causal: false,
  decoder_inject_noise: [false, false, false],
  decoder_layers_per_block: [1, 1, 1],
  decoder_spatial_padding_mode: 'reflect',
  decoder_spatio_temporal_scaling: [true, true],
  down_block_types: ['LTX2VideoDownBlock3D', 'LTX2VideoDownBlock3D'],
  downsample_type: ['spatiotemporal', 'spatiotemporal'],
  encoder_causal: true,
  encoder_spatial_padding_mode: 'zeros',
  in_channels: 3,
  latent_channels: 16,
  layers_per_block: [1, 1, 1],
  out_channels: 3,
  patch_size: 4,
  patch_size_t: 1,
  resnet_norm_eps: 1e-6,
  scaling_factor: 1.0,
  spatial_compression_ratio: 16,
  spatio_temporal_scaling: [true, true],
  temporal_compression_ratio: 4,
  timestep_conditioning: false,
  upsample_factor: [2, 2],
  upsample_residual: [true, true],
  upsample_type: ['spatiotemporal', 'spatiotemporal'],
};

/** The published down-sampler pattern (spatial, temporal, spatiotemporal × 2): 32× in space, 8× in time; 8–32 channels. */
export const LTX2_DIFREF_SMALL = {
  ...LTX2_DIFREF_TINY,
  block_out_channels: [8, 16, 32, 32],
  decoder_block_out_channels: [8, 16, 32],
  decoder_inject_noise: [false, false, false, false],
  decoder_layers_per_block: [1, 1, 1, 1],
  decoder_spatio_temporal_scaling: [true, true, true],
  down_block_types: ['LTX2VideoDownBlock3D', 'LTX2VideoDownBlock3D', 'LTX2VideoDownBlock3D', 'LTX2VideoDownBlock3D'],
  downsample_type: ['spatial', 'temporal', 'spatiotemporal', 'spatiotemporal'],
  layers_per_block: [1, 1, 1, 1, 1],
  spatial_compression_ratio: 32,
  spatio_temporal_scaling: [true, true, true, true],
  temporal_compression_ratio: 8,
  upsample_factor: [2, 2, 2],
  upsample_residual: [true, true, true],
  upsample_type: ['spatiotemporal', 'spatiotemporal', 'spatiotemporal'],
};

/**
 * LTX2_DIFREF_TINY with the encoder's other switches: a `conv` down-sampler (the strided causal
 * conv, as LTX 0.9 builds them), non-causal, reflect-padded (difref's tiny config.json so edited).
 */
export const LTX2_CONV_TINY = {
  ...LTX2_DIFREF_TINY,
  downsample_type: ['conv', 'spatiotemporal'],
  encoder_causal: false,
  encoder_spatial_padding_mode: 'reflect',
};
