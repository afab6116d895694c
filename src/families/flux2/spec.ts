// AutoencoderKLFlux2 (FLUX.2): the AutoencoderKL decoder with 32 latent channels and batch-norm
// statistics (`bn.*`) that only the pipeline uses; its `patch_size` is the pipeline's latent
// packing and adds no tiling constraint.

import { MAX_WIDTH } from '../config-fields.js';
import { KL_LAYOUT, klResolved, readKlFields } from '../autoencoder-kl/spec.js';
import { defineFamily, type FamilyLayout } from '../layout.js';

/** The KL layout; a checkpoint also carries the batch-norm statistics (bn.*) only the pipeline uses. */
const FLUX2_LAYOUT: FamilyLayout = { ...KL_LAYOUT, ignoredKeyPrefixes: [...KL_LAYOUT.ignoredKeyPrefixes, 'bn.'] };

export const flux2 = defineFamily(FLUX2_LAYOUT, {
  name: 'flux2',
  description: 'AutoencoderKLFlux2: FLUX.2',
  classNames: ['AutoencoderKLFlux2'],
  read(r) {
    const kl = readKlFields(r, { latentChannels: 32, sampleSize: 1024 });
    const decoderBlockOut = r.intList('decoder_block_out_channels', kl.blockOut, { max: MAX_WIDTH });
    r.check(
      decoderBlockOut.length === kl.blockOut.length,
      'decoder_block_out_channels',
      decoderBlockOut,
      `${kl.blockOut.length} entries, like block_out_channels`,
      'decoder_block_out_channels must have as many levels as block_out_channels (diffusers derives the tile size from block_out_channels)',
    );
    for (const [i, c] of decoderBlockOut.entries()) {
      r.check(
        c % kl.normGroups === 0,
        `decoder_block_out_channels[${i}]`,
        c,
        `a multiple of norm_num_groups (${kl.normGroups})`,
        `decoder_block_out_channels[${i}] = ${c} is not divisible by norm_num_groups = ${kl.normGroups}`,
      );
    }
    r.intList('patch_size', [2, 2]);
    r.number('batch_norm_eps', 1e-4);
    return klResolved('AutoencoderKLFlux2', kl);
  },
});
