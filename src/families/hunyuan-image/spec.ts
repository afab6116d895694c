// AutoencoderKLHunyuanImage (HunyuanImage 2.1's 32× VAE, 64 latent channels): config reading,
// the decoder's structure as diffusers builds it from the config, and diffusers' tiling defaults
// (square `sample_size` window, overlap int(sample_size · 0.25), latent window
// sample_size // spatial_compression_ratio — the AutoencoderKL loop at this class's ratio).

import { ConfigReader, MAX_WIDTH } from '../config-fields.js';
import { defineFamily, diffusersLayout, squareTiling, type FamilyLayout } from '../layout.js';
import type { ResolvedConfig } from '../types.js';

/** diffusers' `tile_overlap_factor` of AutoencoderKLHunyuanImage. */
export const HUNYUAN_IMAGE_TILE_OVERLAP_FACTOR = 0.25;

/** The class hard-codes GroupNorm(32, eps 1e-6) in every resnet, the attention and norm_out. */
export const HUNYUAN_IMAGE_NORM_GROUPS = 32;

/** The published HunyuanImage 2.1 VAE (diffusers' scripts/convert_hunyuan_image_to_diffusers.py `vae_config_diffusers`). */
export const HUNYUAN_IMAGE_PUBLISHED = {
  block_out_channels: [128, 256, 512, 512, 1024, 1024],
  layers_per_block: 2,
  latent_channels: 64,
  spatial_compression_ratio: 32,
  sample_size: 384,
  scaling_factor: 0.75289,
} as const;

/** One decoder level as diffusers' HunyuanImageDecoder2D lays it out in its flat `up_blocks` list. */
export interface HunyuanImageLevel {
  /** Width of the level's resnets (all map it to itself). */
  channels: number;
  /** Index of its first resnet in `decoder.up_blocks`. */
  first: number;
  /** Output width of the 2× upsampler after its resnets (index first + resnets), or null when it has none. */
  upsampleTo: number | null;
}

/**
 * The decoder's levels: widths reversed from `block_out_channels`, layers_per_block + 1 resnets
 * each, an upsampler after level i when i < log2(spatial_compression_ratio) and i is not the last
 * (to the next width with `upsample_match_channel`, else to its own).
 */
export function hunyuanImageLevels(f: {
  blockOut: readonly number[];
  layersPerBlock: number;
  spatialRatio: number;
  upsampleMatch: boolean;
}): HunyuanImageLevel[] {
  const widths = [...f.blockOut].reverse();
  const levels: HunyuanImageLevel[] = [];
  let index = 0;
  for (const [i, channels] of widths.entries()) {
    const first = index;
    index += f.layersPerBlock + 1;
    const upsample = i < Math.log2(f.spatialRatio) && i !== widths.length - 1;
    const upsampleTo = upsample ? (f.upsampleMatch ? widths[i + 1]! : channels) : null;
    if (upsample) index += 1;
    levels.push({ channels, first, upsampleTo });
  }
  return levels;
}

/** The decoder's fields, read once for the spec (refusals) and the graph (structure). */
export function hunyuanImageFields(fields: Readonly<Record<string, unknown>>) {
  return {
    blockOut: fields['block_out_channels'] as number[],
    layersPerBlock: fields['layers_per_block'] as number,
    spatialRatio: fields['spatial_compression_ratio'] as number,
    upsampleMatch: fields['upsample_match_channel'] as boolean,
  };
}

/**
 * The config fields the Hunyuan VAEs (HunyuanImage, HunyuanVideo 1.5) share, read in the classes'
 * order, with `P`, the published VAE's values, as defaults.
 */
export function readHunyuanDecoderShape(
  r: ConfigReader,
  P: { latent_channels: number; block_out_channels: readonly number[]; layers_per_block: number; spatial_compression_ratio: number },
) {
  r.int('in_channels', 3);
  const outChannels = r.int('out_channels', 3);
  const latentChannels = r.int('latent_channels', P.latent_channels, 1, MAX_WIDTH);
  const blockOut = r.intList('block_out_channels', P.block_out_channels, { max: MAX_WIDTH });
  const layersPerBlock = r.int('layers_per_block', P.layers_per_block);
  r.blocks(blockOut.length * (layersPerBlock + 2), 'block_out_channels × layers_per_block', {
    block_out_channels: blockOut.length,
    layers_per_block: layersPerBlock,
  });
  const spatialRatio = r.int('spatial_compression_ratio', P.spatial_compression_ratio);
  return { outChannels, latentChannels, blockOut, layersPerBlock, spatialRatio };
}

/** The decoder's conv_in adds the latent repeated block_out_channels[-1] / latent_channels times: refuses a width that does not divide. */
export function checkLatentRepeat(r: ConfigReader, blockOut: readonly number[], latentChannels: number): void {
  const top = blockOut[blockOut.length - 1]!;
  r.check(
    top % latentChannels === 0,
    'latent_channels',
    latentChannels,
    `a divisor of block_out_channels[-1] (${top})`,
    `latent_channels = ${latentChannels} does not divide block_out_channels[-1] = ${top}: the decoder's conv_in adds the latent repeated block_out_channels[-1] / latent_channels times`,
  );
}

function read(r: ConfigReader): Omit<ResolvedConfig, 'fields'> {
  const P = HUNYUAN_IMAGE_PUBLISHED;
  const { outChannels, latentChannels, blockOut, layersPerBlock, spatialRatio } = readHunyuanDecoderShape(r, P);
  const sampleSize = r.intOrFirst('sample_size', P.sample_size);
  r.passthrough('scaling_factor', P.scaling_factor);
  r.bool('downsample_match_channel', true);
  const upsampleMatch = r.bool('upsample_match_channel', true);

  const groups = HUNYUAN_IMAGE_NORM_GROUPS;
  for (const [i, c] of blockOut.entries()) {
    r.check(
      c % groups === 0,
      `block_out_channels[${i}]`,
      c,
      `a multiple of ${groups}`,
      `block_out_channels[${i}] = ${c}: AutoencoderKLHunyuanImage hard-codes GroupNorm(${groups}), so every width must be a multiple of ${groups}`,
    );
  }
  checkLatentRepeat(r, blockOut, latentChannels);
  const levels = hunyuanImageLevels({ blockOut, layersPerBlock, spatialRatio, upsampleMatch });
  const decoderRatio = 2 ** levels.filter((l) => l.upsampleTo !== null).length;
  r.checkRatio(
    'spatial_compression_ratio',
    spatialRatio,
    decoderRatio,
    `2 to the number of upsamplers, one after each of the first log2(ratio) of ${blockOut.length} levels`,
    'the upsamplers the decoder builds',
  );
  for (const [i, level] of levels.entries()) {
    const next = levels[i + 1];
    if (!next) break;
    const into = level.upsampleTo ?? level.channels;
    // diffusers' HunyuanImageResnetBlock applies its conv_shortcut to the branch, not the residual: a width change cannot run.
    r.check(
      into === next.channels,
      'block_out_channels',
      blockOut,
      'widths that each decoder level enters at its own width',
      `decoder level ${i + 1} (width ${next.channels}) is entered at width ${into}: diffusers' HunyuanImageResnetBlock cannot change width (its conv_shortcut is applied to the branch, not the residual), so the class cannot decode this config`,
    );
    if (level.upsampleTo !== null)
      r.check(
        (4 * level.upsampleTo) % level.channels === 0,
        'block_out_channels',
        blockOut,
        'upsamplers whose 4 × output width is a multiple of their input width',
        `the upsampler from width ${level.channels} to ${level.upsampleTo} repeats its input 4·${level.upsampleTo}/${level.channels} times, not a whole number`,
      );
  }
  return {
    className: 'AutoencoderKLHunyuanImage',
    geometry: { spatialRatio, temporalRatio: 1, patchSize: 1, latentChannels, outChannels, fiveDimLatents: false },
    tiling: squareTiling(sampleSize, Math.trunc(sampleSize * HUNYUAN_IMAGE_TILE_OVERLAP_FACTOR)),
  };
}

/** diffusers' square tiling with an overlap factor; checkpoints carry the encoder (no quant convs). */
const HUNYUAN_IMAGE_LAYOUT: FamilyLayout = {
  ...diffusersLayout('square-with-overlap-factor', { kind: 'none' }),
  ignoredKeyPrefixes: ['encoder.'],
};

export const hunyuanImage = defineFamily(HUNYUAN_IMAGE_LAYOUT, {
  name: 'hunyuan-image',
  description: 'AutoencoderKLHunyuanImage: HunyuanImage 2.1 (32×, 64 latent channels)',
  classNames: ['AutoencoderKLHunyuanImage'],
  read,
});
