// AutoencoderKL (SD 1.x/2.x, SDXL, SD3, FLUX.1 are configs of it): config reading, ratios and
// diffusers' tiling defaults (square `sample_size` window, overlap int(sample_size · 0.25)).

import { ConfigReader, MAX_WIDTH } from './config-fields.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from './types.js';

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
  const blockOut = r.intList('block_out_channels', [128, 256, 512, 512], { max: MAX_WIDTH });
  const layers = r.int('layers_per_block', 2);
  r.blocks(blockOut.length * (layers + 1), 'block_out_channels × layers_per_block', {
    block_out_channels: blockOut.length,
    layers_per_block: layers,
  });
  r.string('act_fn', 'silu', ['silu']);
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

export function klResolved(className: string, r: ConfigReader, kl: ReturnType<typeof readKlFields>): ResolvedConfig {
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
    tiling: { window: { height: kl.sampleSize, width: kl.sampleSize }, overlap: { height: overlap, width: overlap }, frames: null },
    fields: r.fields,
  };
}

/**
 * What an AutoencoderKL decoder (AutoencoderKL, Flux.2) is to the engine: diffusers tiles it in
 * squares with an overlap factor, it has no time axis, and its checkpoints carry the encoder.
 */
export const KL_LAYOUT: Pick<FamilySpec, 'diffusersTiling' | 'temporal' | 'ignoredKeyPrefixes' | 'minWindowLatent' | 'sampleRange'> = {
  diffusersTiling: 'square-with-overlap-factor',
  temporal: { kind: 'none' },
  ignoredKeyPrefixes: ['encoder.', 'quant_conv.'],
  minWindowLatent: 1,
  sampleRange: 'signed',
};

export const autoencoderKl: FamilySpec = {
  name: 'autoencoder-kl',
  description: 'AutoencoderKL: Stable Diffusion 1.x/2.x, SDXL, SD3, FLUX.1',
  classNames: ['AutoencoderKL'],
  ...KL_LAYOUT,
  resolveConfig(raw: RawConfig | undefined): ResolvedConfig {
    const r = new ConfigReader(raw ?? {}, 'autoencoder-kl');
    const kl = readKlFields(r, { latentChannels: 4, sampleSize: 512 });
    r.finish();
    return klResolved('AutoencoderKL', r, kl);
  },
};
