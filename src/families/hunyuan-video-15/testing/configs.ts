// The HunyuanVideo 1.5 configs tests decode: the `--tiny` and `--small` configs of the team's
// difref harness (families.py `hunyuanvideo15`), as their config.json files spell them.

/** Three levels, 4× in space and time (both upsamplers temporal), 16–64 channels. */
export const HUNYUAN_VIDEO_15_TINY = {
  _class_name: 'AutoencoderKLHunyuanVideo15',
  block_out_channels: [16, 32, 64],
  downsample_match_channel: true,
  in_channels: 3,
  latent_channels: 32,
  layers_per_block: 1,
  out_channels: 3,
  scaling_factor: 1.03682,
  spatial_compression_ratio: 4,
  temporal_compression_ratio: 4,
  upsample_match_channel: true,
};

/** The published depth and ratios (16×, 4×) at 8–64 channels. */
export const HUNYUAN_VIDEO_15_SMALL = {
  ...HUNYUAN_VIDEO_15_TINY,
  block_out_channels: [8, 16, 32, 64, 64],
  spatial_compression_ratio: 16,
};
