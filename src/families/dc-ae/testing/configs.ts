// The DC-AE configs tests decode: the `--tiny` and `--small` configs of the team's difref
// harness (families.py `dcae`: SANA's f32c32 layout — ResBlock levels, then EfficientViT levels
// with one extra 5×5 q/k/v scale — at 8–32 channels with attention_head_dim 8), as their
// config.json files spell them.

const ENCODER = {
  downsample_block_type: 'conv',
  encoder_layers_per_block: [1, 1, 1],
  encoder_out_shortcut: true,
};

/** Three levels, 4×: one ResBlock level, two EfficientViT levels (32 channels: 4 heads of 8, 8 attention groups). */
export const DCAE_TINY = {
  _class_name: 'AutoencoderDC',
  attention_head_dim: 8,
  decoder_act_fns: 'silu',
  decoder_block_out_channels: [16, 32, 32],
  decoder_block_types: ['ResBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
  decoder_conv_act_fn: 'relu',
  decoder_in_shortcut: true,
  decoder_layers_per_block: [1, 1, 1],
  decoder_norm_types: 'rms_norm',
  decoder_qkv_multiscales: [[], [5], [5]],
  ...ENCODER,
  encoder_block_out_channels: [16, 32, 32],
  encoder_block_types: ['ResBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
  encoder_qkv_multiscales: [[], [5], [5]],
  in_channels: 3,
  latent_channels: 32,
  scaling_factor: 0.41407,
  upsample_block_type: 'interpolate',
};

/** The published depth and 32× ratio at 8–32 channels: three ResBlock levels, three EfficientViT levels. */
export const DCAE_SMALL = {
  ...DCAE_TINY,
  decoder_block_out_channels: [8, 16, 32, 32, 32, 32],
  decoder_block_types: ['ResBlock', 'ResBlock', 'ResBlock', 'EfficientViTBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
  decoder_layers_per_block: [1, 1, 1, 1, 1, 1],
  decoder_qkv_multiscales: [[], [], [], [5], [5], [5]],
  encoder_block_out_channels: [8, 16, 32, 32, 32, 32],
  encoder_block_types: ['ResBlock', 'ResBlock', 'ResBlock', 'EfficientViTBlock', 'EfficientViTBlock', 'EfficientViTBlock'],
  encoder_layers_per_block: [1, 1, 1, 1, 1, 1],
  encoder_qkv_multiscales: [[], [], [], [5], [5], [5]],
};
