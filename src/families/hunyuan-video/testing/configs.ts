// The HunyuanVideo configs the encoder tests run: the `--tiny` config of the team's difref harness
// (families.py `hunyuanvideo`), as its config.json spells it.

/** Three levels, 4× in space and time, 16–32 channels, GroupNorm(8). */
export const HUNYUAN_VIDEO_DIFREF_TINY = {
  _class_name: 'AutoencoderKLHunyuanVideo',
  block_out_channels: [16, 32, 32],
  down_block_types: ['HunyuanVideoDownBlock3D', 'HunyuanVideoDownBlock3D', 'HunyuanVideoDownBlock3D'],
  in_channels: 3,
  latent_channels: 16,
  layers_per_block: 1,
  mid_block_add_attention: true,
  norm_num_groups: 8,
  out_channels: 3,
  scaling_factor: 0.476986,
  spatial_compression_ratio: 4,
  temporal_compression_ratio: 4,
  up_block_types: ['HunyuanVideoUpBlock3D', 'HunyuanVideoUpBlock3D', 'HunyuanVideoUpBlock3D'],
};

/** The published depth and ratios (8× in space, 4× in time: blocks 0-2 space, 1-2 time) at 8–32 channels, GroupNorm(4). */
export const HUNYUAN_VIDEO_DIFREF_SMALL = {
  ...HUNYUAN_VIDEO_DIFREF_TINY,
  block_out_channels: [8, 16, 32, 32],
  down_block_types: ['HunyuanVideoDownBlock3D', 'HunyuanVideoDownBlock3D', 'HunyuanVideoDownBlock3D', 'HunyuanVideoDownBlock3D'],
  norm_num_groups: 4,
  spatial_compression_ratio: 8,
  up_block_types: ['HunyuanVideoUpBlock3D', 'HunyuanVideoUpBlock3D', 'HunyuanVideoUpBlock3D', 'HunyuanVideoUpBlock3D'],
};
