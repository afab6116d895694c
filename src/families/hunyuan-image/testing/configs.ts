// The HunyuanImage configs tests decode: the `--tiny` and `--small` configs of the team's difref
// harness (families.py `hunyuanimage`; every width a multiple of 32, since the class hard-codes
// GroupNorm(32)), as their config.json files spell them.

/** Three levels, 4× spatial, tiles of 32 px (8 latent units) by default. */
export const HUNYUAN_IMAGE_TINY = {
  _class_name: 'AutoencoderKLHunyuanImage',
  block_out_channels: [32, 64, 128],
  downsample_match_channel: true,
  in_channels: 3,
  latent_channels: 64,
  layers_per_block: 1,
  out_channels: 3,
  sample_size: 32,
  scaling_factor: 0.75289,
  spatial_compression_ratio: 4,
  upsample_match_channel: true,
};

/** The published depth and 32× ratio at 32–128 channels, tiles of 256 px (8 latent units) by default. */
export const HUNYUAN_IMAGE_SMALL = {
  ...HUNYUAN_IMAGE_TINY,
  block_out_channels: [32, 32, 64, 64, 128, 128],
  sample_size: 256,
  spatial_compression_ratio: 32,
};
