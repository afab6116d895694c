// AutoencoderKLQwenImage: the Wan-derived causal VAE used for single images (5-D latents with
// one or more frames). Spatial ratio 2^len(temperal_downsample), as diffusers computes it.

import { defineFamily, squareTiling } from '../layout.js';
import { checkTemporalLevels, readWanLayout, WAN_LAYOUT } from '../wan/spec.js';

export const qwenImage = defineFamily(WAN_LAYOUT, {
  name: 'qwen-image',
  description: 'AutoencoderKLQwenImage: Qwen-Image',
  classNames: ['AutoencoderKLQwenImage'],
  read(r) {
    const { zDim, dimMult, temporalDown } = readWanLayout(r, { decoderBaseDim: false });
    const channels = r.int('input_channels', 3);
    r.passthrough('latents_mean');
    r.passthrough('latents_std');
    checkTemporalLevels(r, dimMult, temporalDown);
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
      tiling: squareTiling(256, 64),
    };
  },
});
