// Tiny autoencoders (madebyollin's TAESD, TAESDXL, TAESD3, TAEF1, TAEF2): no time axis, and no
// diffusers tiling loop of their own — the project's loop is used with a default window of
// 512 px and overlap of 128 px (docs/design.md §3, family T). The architecture is madebyollin's
// `Encoder` / `Decoder` (diffusers' `EncoderTiny` / `DecoderTiny` are the same layers), read
// from diffusers' AutoencoderTiny field names plus three of ours:
// - `variant` names a published checkpoint; its latent channels and pool blocks become the
//   defaults and a conflicting value is refused. Absent, the architecture is taken as given.
// - `use_midblock_gn` (madebyollin's name): the blocks of the lowest-resolution stage (the
//   decoder's first, the encoder's last) start with `x + pool(x)`, pool = 1×1 conv to 4·width,
//   GroupNorm(4 groups), ReLU, 1×1 conv back (TAEF2). A nonlocal op.
// - `key_layout`: 'madebyollin' (the .pth / .safetensors files madebyollin publishes: bare
//   Sequential indices `1.weight`, `3.conv.0.weight`) or 'diffusers' (AutoencoderTiny:
//   `decoder.layers.N…` with N one less, as DecoderTiny has no Clamp module, and
//   `encoder.layers.N…` with the same N). Loading reads it from the keys.

import { ConfigReader, MAX_WIDTH } from '../config-fields.js';
import { defineFamily, squareTiling, type FamilyLayout } from '../layout.js';
import type { ResolvedConfig } from '../types.js';

/** The published tiny autoencoders and what sets them apart (latent channels, a GroupNorm mid-block). */
export const TAE_VARIANTS = {
  taesd: { latentChannels: 4, midblockGn: false },
  taesdxl: { latentChannels: 4, midblockGn: false },
  taesd3: { latentChannels: 16, midblockGn: false },
  taef1: { latentChannels: 16, midblockGn: false },
  taef2: { latentChannels: 32, midblockGn: true },
} as const;

/** A published tiny autoencoder: taesd, taesdxl, taesd3, taef1 or taef2. */
export type TaeVariant = keyof typeof TAE_VARIANTS;

/** How a TAE checkpoint names its weights: madebyollin's own files, or a diffusers AutoencoderTiny. */
export const TAE_KEY_LAYOUTS = ['madebyollin', 'diffusers'] as const;
/** One of TAE_KEY_LAYOUTS. */
export type TaeKeyLayout = (typeof TAE_KEY_LAYOUTS)[number];

/** The architecture a resolved TAE config describes (what the graph builders read). */
export interface TaeArchitecture {
  variant: TaeVariant | null;
  latentChannels: number;
  imageChannels: { in: number; out: number };
  /** Channels of every layer (all stages share one width, as DecoderTiny / EncoderTiny require). */
  decoderWidth: number;
  encoderWidth: number;
  /** Blocks per stage; a stage boundary is one nearest upsample (decoder) or stride-2 conv (encoder). */
  decoderBlocks: readonly number[];
  encoderBlocks: readonly number[];
  upsampleFactor: number;
  midblockGn: boolean;
  keyLayout: TaeKeyLayout;
}

/** The published TAE architecture: 64 channels, 4 stages, 8× spatial. */
const STANDARD = {
  width: 64,
  decoderBlocks: [3, 3, 3, 1],
  encoderBlocks: [1, 3, 3, 3],
} as const;

/** GroupNorm of the pool blocks: 4 groups over 4·width channels, PyTorch's default epsilon. */
export const TAE_POOL_GROUPS = 4;
export const TAE_POOL_EXPANSION = 4;
export const TAE_POOL_EPSILON = 1e-5;

function checkUniformWidth(r: ConfigReader, key: string, stages: number): void {
  const widths = r.intList(key, new Array<number>(stages).fill(STANDARD.width), { max: MAX_WIDTH });
  r.check(
    widths.length === stages,
    key,
    widths,
    `${stages} entries, one per stage`,
    `${key} has ${widths.length} entries for ${stages} stages`,
  );
  r.check(
    widths.every((w) => w === widths[0]),
    key,
    widths,
    'the same width for every stage',
    `${key} = [${widths.join(', ')}]: a tiny autoencoder keeps one width through all stages`,
  );
}

/**
 * No diffusers tiling loop and no time axis; samples in [0, 1]. A diffusers AutoencoderTiny
 * checkpoint holds both halves (madebyollin ships them apart) and has no quant_conv.
 */
const TAE_LAYOUT: FamilyLayout = {
  diffusersTiling: 'none',
  temporal: { kind: 'none' },
  ignoredKeyPrefixes: ['encoder.'],
  minWindowLatent: 1,
  sampleRange: 'unit',
  // The encoder returns the latents directly: no distribution to sample.
  latentDistribution: 'none',
};

export const tae = defineFamily(TAE_LAYOUT, {
  name: 'tae',
  description: 'Tiny autoencoders (TAESD, TAESDXL, TAESD3, TAEF1, TAEF2)',
  classNames: ['AutoencoderTiny'],
  read(r, given) {
    const variant =
      given['variant'] == null
        ? (r.passthrough('variant') as null)
        : (r.string('variant', 'taesd', Object.keys(TAE_VARIANTS)) as TaeVariant);
    const published = TAE_VARIANTS[variant ?? 'taesd'];
    const latentChannels = r.int('latent_channels', published.latentChannels, 1, MAX_WIDTH);
    const midblockGn = r.bool('use_midblock_gn', published.midblockGn);
    if (variant !== null) {
      // A named variant fixes these two: a config that says otherwise describes another model.
      const asPublished = (key: string, value: unknown, expected: unknown) =>
        r.check(
          value === expected,
          key,
          value,
          `${expected} for ${variant}`,
          `${key} = ${value} does not match the ${variant} variant (${expected})`,
        );
      asPublished('latent_channels', latentChannels, published.latentChannels);
      asPublished('use_midblock_gn', midblockGn, published.midblockGn);
    }
    const decoderBlocks = r.intList('num_decoder_blocks', STANDARD.decoderBlocks);
    const encoderBlocks = r.intList('num_encoder_blocks', STANDARD.encoderBlocks);
    r.blocks(
      [...decoderBlocks, ...encoderBlocks].reduce((a, b) => a + b, 0),
      'num_decoder_blocks + num_encoder_blocks',
      { num_decoder_blocks: decoderBlocks, num_encoder_blocks: encoderBlocks },
    );
    checkUniformWidth(r, 'decoder_block_out_channels', decoderBlocks.length);
    checkUniformWidth(r, 'encoder_block_out_channels', encoderBlocks.length);
    const upsampleFactor = r.int('upsampling_scaling_factor', 2);
    r.string('act_fn', 'relu', ['relu']);
    r.string('upsample_fn', 'nearest', ['nearest']);
    const inChannels = r.int('in_channels', 3);
    const outChannels = r.int('out_channels', 3);
    r.check(
      inChannels === outChannels,
      'in_channels',
      inChannels,
      `${outChannels} (out_channels: one image format for both halves)`,
      `in_channels = ${inChannels} differs from out_channels = ${outChannels}`,
    );
    r.string('key_layout', 'madebyollin', TAE_KEY_LAYOUTS);
    r.passthrough('latent_magnitude', 3);
    r.passthrough('latent_shift', 0.5);
    r.passthrough('scaling_factor', 1);
    const spatialRatio = upsampleFactor ** (decoderBlocks.length - 1);
    const encoderRatio = 2 ** (encoderBlocks.length - 1);
    r.check(
      encoderRatio === spatialRatio,
      'num_encoder_blocks',
      encoderBlocks,
      `${decoderBlocks.length} stages (the encoder's stride-2 convs must undo the decoder's ${spatialRatio}x)`,
      `the encoder's ${encoderBlocks.length} stages downsample ${encoderRatio}x but the decoder upsamples ${spatialRatio}x`,
    );
    return {
      className: variant ?? 'AutoencoderTiny',
      geometry: { spatialRatio, temporalRatio: 1, patchSize: 1, latentChannels, outChannels, fiveDimLatents: false },
      tiling: squareTiling(512, 128),
    };
  },
});

/** The architecture of a resolved TAE config (fields as `tae.resolveConfig` wrote them). */
export function taeArchitecture(config: ResolvedConfig): TaeArchitecture {
  const f = config.fields;
  return {
    variant: (f['variant'] as TaeVariant | null) ?? null,
    latentChannels: f['latent_channels'] as number,
    imageChannels: { in: f['in_channels'] as number, out: f['out_channels'] as number },
    decoderWidth: (f['decoder_block_out_channels'] as number[])[0]!,
    encoderWidth: (f['encoder_block_out_channels'] as number[])[0]!,
    decoderBlocks: f['num_decoder_blocks'] as number[],
    encoderBlocks: f['num_encoder_blocks'] as number[],
    upsampleFactor: f['upsampling_scaling_factor'] as number,
    midblockGn: f['use_midblock_gn'] as boolean,
    keyLayout: f['key_layout'] as TaeKeyLayout,
  };
}
