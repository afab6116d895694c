// AutoencoderKLQwenImage: the Wan-derived causal VAE used for single images (5-D latents with
// one or more frames). Spatial ratio 2^len(temperal_downsample), as diffusers computes it.

import { ConfigReader } from './config-fields.js';
import { checkTemporalLevels, readWanLayout, WAN_LAYOUT } from './wan.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from './types.js';

export const qwenImage: FamilySpec = {
  name: 'qwen-image',
  description: 'AutoencoderKLQwenImage: Qwen-Image',
  classNames: ['AutoencoderKLQwenImage'],
  ...WAN_LAYOUT,
  resolveConfig(raw: RawConfig | undefined): ResolvedConfig {
    const r = new ConfigReader(raw ?? {}, 'qwen-image');
    const { zDim, dimMult, temporalDown } = readWanLayout(r, { decoderBaseDim: false });
    const channels = r.int('input_channels', 3);
    r.passthrough('latents_mean');
    r.passthrough('latents_std');
    checkTemporalLevels(r, dimMult, temporalDown);
    r.finish();
    return {
      className: 'AutoencoderKLQwenImage',
      geometry: {
        spatialRatio: 2 ** temporalDown.length,
        temporalRatio: 2 ** temporalDown.filter(Boolean).length,
        patchSize: 1,
        latentChannels: zDim,
        outChannels: channels,
        fiveDimLatents: true,
      },
      tiling: { window: { height: 256, width: 256 }, overlap: { height: 64, width: 64 }, frames: null },
      fields: r.fields,
    };
  },
};
