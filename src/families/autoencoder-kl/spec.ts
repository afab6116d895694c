// AutoencoderKL (SD 1.x/2.x, SDXL, SD3, FLUX.1 are configs of it): config reading, ratios and
// diffusers' tiling defaults (square `sample_size` window, overlap int(sample_size · 0.25)).

import { ConfigReader, MAX_WIDTH, readBlockOutLayers } from '../config-fields.js';
import { defineFamily, diffusersLayout, squareTiling, type FamilyLayout } from '../layout.js';
import type { ResolvedConfig } from '../types.js';

/** diffusers' `tile_overlap_factor` for AutoencoderKL and Flux.2. */
export const KL_TILE_OVERLAP_FACTOR = 0.25;

/**
 * Reads the fields AutoencoderKL and Flux.2 share. Without a config the published SD 1.x
 * decoder is assumed (diffusers' own class defaults describe a toy one-level model).
 */
export function readKlFields(
  r: ConfigReader,
  defaults: { latentChannels: number; sampleSize: number },
): {
  blockOut: number[];
  sampleSize: number;
  latentChannels: number;
  outChannels: number;
  normGroups: number;
} {
  const blockOut = readBlockOutLayers(r);
  const latentChannels = r.int('latent_channels', defaults.latentChannels, 1, MAX_WIDTH);
  const normGroups = r.int('norm_num_groups', 32);
  const sampleSize = r.intOrFirst('sample_size', defaults.sampleSize);
  r.int('in_channels', 3);
  const outChannels = r.int('out_channels', 3);
  r.bool('use_quant_conv', true);
  r.bool('use_post_quant_conv', true);
  r.bool('mid_block_add_attention', true);
  r.bool('force_upcast', true);
  r.passthrough('scaling_factor');
  r.passthrough('shift_factor');
  const upBlocks = r.stringList(
    'up_block_types',
    blockOut.map(() => 'UpDecoderBlock2D'),
  );
  r.check(
    upBlocks.length === blockOut.length && upBlocks.every((t) => t === 'UpDecoderBlock2D'),
    'up_block_types',
    upBlocks,
    `${blockOut.length} × UpDecoderBlock2D (one per block_out_channels entry)`,
    `up_block_types must list UpDecoderBlock2D once per block_out_channels entry (${blockOut.length}); got ${JSON.stringify(upBlocks)}`,
  );
  r.stringList(
    'down_block_types',
    blockOut.map(() => 'DownEncoderBlock2D'),
  );
  for (const [i, c] of blockOut.entries()) {
    r.check(
      c % normGroups === 0,
      `block_out_channels[${i}]`,
      c,
      `a multiple of norm_num_groups (${normGroups})`,
      `block_out_channels[${i}] = ${c} is not divisible by norm_num_groups = ${normGroups}`,
    );
  }
  return { blockOut, sampleSize, latentChannels, outChannels, normGroups };
}

/** What AutoencoderKL / Flux.2 fields resolve to: r = 2^(levels − 1), diffusers' square tiling at `sample_size`. */
export function klResolved(className: string, kl: ReturnType<typeof readKlFields>): Omit<ResolvedConfig, 'fields'> {
  const spatialRatio = 2 ** (kl.blockOut.length - 1);
  const overlap = Math.trunc(kl.sampleSize * KL_TILE_OVERLAP_FACTOR);
  return {
    className,
    geometry: {
      spatialRatio,
      temporalRatio: 1,
      patchSize: 1,
      latentChannels: kl.latentChannels,
      outChannels: kl.outChannels,
      fiveDimLatents: false,
    },
    tiling: squareTiling(kl.sampleSize, overlap),
  };
}

/**
 * What an AutoencoderKL decoder (AutoencoderKL, Flux.2) is to the engine: diffusers tiles it in
 * squares with an overlap factor, it has no time axis, and its checkpoints carry the encoder.
 */
export const KL_LAYOUT: FamilyLayout = diffusersLayout('square-with-overlap-factor', { kind: 'none' });

export const autoencoderKl = defineFamily(KL_LAYOUT, {
  name: 'autoencoder-kl',
  description: 'AutoencoderKL: Stable Diffusion 1.x/2.x, SDXL, SD3, FLUX.1',
  classNames: ['AutoencoderKL'],
  read: (r) => klResolved('AutoencoderKL', readKlFields(r, { latentChannels: 4, sampleSize: 512 })),
});
