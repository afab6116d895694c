// Configs the family, plan and distribution tests share, mostly tiny video families (diffusers' field names).

import type { RawConfig } from '../types.js';
import type { HunyuanVideoReferenceArchitecture } from '../hunyuan-video/testing/reference.js';
import type { Ltx2ReferenceConfig } from '../ltx2/testing/reference.js';
import type { WanReferenceConfig } from '../wan/testing/reference.js';

/** Wan 2.1 with one temporal upsample: 2 output frames per latent frame after the first. */
export const WAN21_TINY: RawConfig = {
  base_dim: 4,
  dim_mult: [1, 2],
  num_res_blocks: 1,
  temperal_downsample: [true],
  z_dim: 4,
  scale_factor_spatial: 2,
  scale_factor_temporal: 2,
};

/** diffusers' tiny AutoencoderKLWan (r 2, rt 2) as its `save_config` writes it (diffusers 0.40.0.dev0). */
export const WAN_TINY_SAVED: RawConfig = {
  _class_name: 'AutoencoderKLWan',
  _diffusers_version: '0.40.0.dev0',
  attn_scales: [],
  base_dim: 8,
  decoder_base_dim: null,
  dim_mult: [1, 2],
  dropout: 0.0,
  in_channels: 3,
  is_residual: false,
  num_res_blocks: 1,
  out_channels: 3,
  patch_size: null,
  scale_factor_spatial: 2,
  scale_factor_temporal: 2,
  temperal_downsample: [true],
  z_dim: 16,
};

/** WAN21_TINY (and QWEN_IMAGE_TINY, the same decoder) as the float64 reference takes it. */
export const WAN21_TINY_REFERENCE: WanReferenceConfig = { baseDim: 4, dimMult: [1, 2], numResBlocks: 1, temperalDownsample: [true] };

/**
 * Wan 2.2 (residual, patch 2). Up block 0 is upsample2d (DupUp3D repeats 4), block 1 upsample3d
 * from 16 to 4 channels (factor_t 2, repeats 2: the DupUp3D frame and row offsets pick
 * different channels, so their order is tested).
 */
export const WAN22_TINY: RawConfig = {
  base_dim: 4,
  decoder_base_dim: 4,
  dim_mult: [1, 1, 4],
  num_res_blocks: 1,
  temperal_downsample: [true, false],
  is_residual: true,
  out_channels: 12,
  patch_size: 2,
  z_dim: 8,
  scale_factor_spatial: 8,
  scale_factor_temporal: 2,
};

/** The published Wan 2.2 TI2V-5B config as the reference harness writes it (r 16, patch 2, 48 latent channels). */
export const WAN22_PUBLISHED: RawConfig = {
  _class_name: 'AutoencoderKLWan',
  base_dim: 160,
  decoder_base_dim: 256,
  dim_mult: [1, 2, 4, 4],
  num_res_blocks: 2,
  temperal_downsample: [false, true, true],
  is_residual: true,
  in_channels: 12,
  out_channels: 12,
  patch_size: 2,
  scale_factor_spatial: 16,
  scale_factor_temporal: 4,
  z_dim: 48,
};

/** WAN22_TINY as the float64 reference takes it. */
export const WAN22_TINY_REFERENCE: WanReferenceConfig = {
  baseDim: 4,
  decoderBaseDim: 4,
  dimMult: [1, 1, 4],
  numResBlocks: 1,
  temperalDownsample: [true, false],
  isResidual: true,
};

/** Qwen-Image: the Wan 2.1 layout with 16 latent channels. */
export const QWEN_IMAGE_TINY: RawConfig = { base_dim: 4, dim_mult: [1, 2], num_res_blocks: 1, temperal_downsample: [true], z_dim: 16 };

/** HunyuanVideo: three levels, 4× spatial and temporal compression. */
export const HUNYUAN_VIDEO_TINY: RawConfig = {
  block_out_channels: [8, 16, 16],
  layers_per_block: 1,
  norm_num_groups: 4,
  latent_channels: 4,
  spatial_compression_ratio: 4,
};

/** HUNYUAN_VIDEO_TINY as the float64 reference takes it. */
export const HUNYUAN_VIDEO_TINY_REFERENCE: HunyuanVideoReferenceArchitecture = {
  blockOut: [8, 16, 16],
  layersPerBlock: 1,
  groups: 4,
  attention: true,
  spatialRatio: 4,
};

/** LTX-2: two spatio-temporal upsamplers, patch 4, not causal, no timestep conditioning. */
export const LTX2_TINY: RawConfig = {
  latent_channels: 4,
  block_out_channels: [8, 16],
  decoder_block_out_channels: [8, 16],
  decoder_layers_per_block: [1, 1, 1],
  decoder_spatio_temporal_scaling: [true, true],
  upsample_type: ['spatiotemporal', 'spatiotemporal'],
  upsample_residual: [true, true],
  upsample_factor: [2, 2],
  decoder_causal: false,
  spatial_compression_ratio: 16,
  temporal_compression_ratio: 4,
};

/** LTX-2 at tiny widths with 16 latent channels and both halves' flags (r 16, rt 4): what the plan tests create. */
export const LTX2_TINY_16: RawConfig = {
  block_out_channels: [16, 32],
  decoder_block_out_channels: [16, 32],
  spatio_temporal_scaling: [true, true],
  decoder_spatio_temporal_scaling: [true, true],
  decoder_layers_per_block: [1, 1, 1],
  upsample_type: ['spatiotemporal', 'spatiotemporal'],
  spatial_compression_ratio: 16,
  temporal_compression_ratio: 4,
  latent_channels: 16,
};

/** The reference harness's tiny AutoencoderKL as the plan tests create it (r 2, sample_size 128). */
export const KL_TINY_PLAN: RawConfig = { block_out_channels: [16, 32], norm_num_groups: 8, sample_size: 128 };

/** LTX2_TINY as the float64 reference takes it: ratios 16 / 4, reflect padding, non-causal. */
export const LTX2_TINY_REFERENCE: Ltx2ReferenceConfig = {
  decoderBlockOut: [8, 16],
  layersPerBlock: [1, 1, 1],
  scaling: [true, true],
  upsampleType: ['spatiotemporal', 'spatiotemporal'],
  residual: [true, true],
  factor: [2, 2],
  patchSize: 4,
  patchSizeT: 1,
  causal: false,
  padding: 'reflect',
  timestepConditioning: false,
  layerNormEpsilon: 1e-6,
};
