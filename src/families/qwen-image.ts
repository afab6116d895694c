// AutoencoderKLQwenImage: the Wan-derived causal VAE used for single images (5-D latents with
// one or more frames). Spatial ratio 2^len(temperal_downsample), as diffusers computes it.

import { ConfigReader, MAX_WIDTH } from './config-fields.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from './types.js';

export const qwenImage: FamilySpec = {
  name: 'qwen-image',
  description: 'AutoencoderKLQwenImage: Qwen-Image',
  classNames: ['AutoencoderKLQwenImage'],
  diffusersTiling: 'window-and-stride',
  temporal: { kind: 'frame-steps' },
  ignoredKeyPrefixes: ['encoder.', 'quant_conv.'],
  minWindowLatent: 1,
  sampleRange: 'signed',
  resolveConfig(raw: RawConfig | undefined): ResolvedConfig {
    const r = new ConfigReader(raw ?? {}, 'qwen-image');
    r.int('base_dim', 96, 1, MAX_WIDTH);
    const zDim = r.int('z_dim', 16, 1, MAX_WIDTH);
    const dimMult = r.intList('dim_mult', [1, 2, 4, 4]);
    const resBlocks = r.int('num_res_blocks', 2);
    r.blocks(dimMult.length * (resBlocks + 1), 'dim_mult × num_res_blocks', { dim_mult: dimMult.length, num_res_blocks: resBlocks });
    r.passthrough('attn_scales', []);
    const temporalDown = r.boolOrBoolList('temperal_downsample', [false, true, true], null);
    const channels = r.int('input_channels', 3);
    r.passthrough('latents_mean');
    r.passthrough('latents_std');
    r.check(
      temporalDown.length === dimMult.length - 1,
      'temperal_downsample',
      temporalDown,
      `${dimMult.length - 1} entries (one per level of dim_mult after the first)`,
      `temperal_downsample has ${temporalDown.length} entries but dim_mult has ${dimMult.length} levels`,
    );
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
