// Tiny autoencoders (madebyollin's TAESD, TAESDXL, TAESD3, TAEF1, TAEF2): 8× spatial, no time
// axis, and no diffusers tiling loop of their own — the project's loop is used with a default
// window of 512 px and overlap of 128 px (DESIGN §3, family T). The variant is normally read
// from a checkpoint's keys; a config may name it.

import { ConfigReader } from './config-fields.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from './types.js';

export const TAE_VARIANTS = {
  taesd: { latentChannels: 4, poolBlocks: false },
  taesdxl: { latentChannels: 4, poolBlocks: false },
  taesd3: { latentChannels: 16, poolBlocks: false },
  taef1: { latentChannels: 16, poolBlocks: false },
  taef2: { latentChannels: 32, poolBlocks: true },
} as const;

export type TaeVariant = keyof typeof TAE_VARIANTS;

export const tae: FamilySpec = {
  name: 'tae',
  description: 'Tiny autoencoders (TAESD, TAESDXL, TAESD3, TAEF1, TAEF2)',
  classNames: ['AutoencoderTiny'],
  diffusersTiling: 'none',
  temporal: { kind: 'none' },
  ignoredKeyPrefixes: [],
  minWindowLatent: 1,
  sampleRange: 'unit',
  resolveConfig(raw: RawConfig | undefined): ResolvedConfig {
    const r = new ConfigReader(raw ?? {}, 'tae');
    const variant = r.string('variant', 'taesd', Object.keys(TAE_VARIANTS)) as TaeVariant;
    const latentChannels = r.int('latent_channels', TAE_VARIANTS[variant].latentChannels);
    r.check(
      latentChannels === TAE_VARIANTS[variant].latentChannels,
      'latent_channels',
      latentChannels,
      `${TAE_VARIANTS[variant].latentChannels} for ${variant}`,
      `latent_channels = ${latentChannels} does not match the ${variant} variant (${TAE_VARIANTS[variant].latentChannels})`,
    );
    r.finish();
    return {
      className: variant,
      geometry: { spatialRatio: 8, temporalRatio: 1, patchSize: 1, latentChannels, outChannels: 3, fiveDimLatents: false },
      tiling: { window: { height: 512, width: 512 }, overlap: { height: 128, width: 128 }, frames: null },
      fields: r.fields,
    };
  },
};
