// AutoencoderKLLTX2Video (LTX-2): video decoder with depth-to-space up-sampling and an output
// patch of `patch_size`, unpatchified inside the decoder, so blending sees whole pixels.
// Temporal tiling is off by default (16 frames, stride 8 when on); later chunks drop their
// last decoded frame. Defaults are the published LTX-2.0 config.
//
// Besides diffusers' own fields the config may carry `decode_timestep`: the timestep a
// timestep-conditioned decoder is given (diffusers' `decode(z, temb)`; the LTX-2 pipeline's
// `decode_timestep`, default 0), read only when the config has timestep conditioning.

import { DECODE_SETTING_FIELDS, MAX_WIDTH } from '../config-fields.js';
import { defineFamily, diffusersLayout, squareTiling, type FamilyLayout } from '../layout.js';
import type { RawConfig } from '../types.js';

/**
 * Without a config, the published LTX-2.0 VAE: its config.json states the ratios (32 / 8)
 * explicitly — diffusers' fallback formula, which reads the encoder's scaling flags, would give
 * 64 / 16 for these defaults — and a non-causal decoder (the class default is causal).
 */
const PUBLISHED_LTX2_CONFIG: RawConfig = { spatial_compression_ratio: 32, temporal_compression_ratio: 8, decoder_causal: false };

/** A config that holds only decode settings names no architecture: the published one applies. */
function withPublishedDefaults(raw: RawConfig | undefined): RawConfig {
  const namesArchitecture = raw !== undefined && Object.keys(raw).some((k) => !DECODE_SETTING_FIELDS.includes(k));
  return namesArchitecture ? raw : { ...PUBLISHED_LTX2_CONFIG, ...(raw ?? {}) };
}

/**
 * diffusers' window-and-stride tiling with temporal chunks that drop their last frame. No
 * quant_conv: latents_mean / latents_std are the pipeline's de-normalisation buffers. The decoder
 * pads spatially by reflection, which needs at least two rows and columns.
 */
const LTX2_LAYOUT: FamilyLayout = {
  ...diffusersLayout('window-and-stride', { kind: 'temporal-chunks', dropFrame: 'last' }),
  ignoredKeyPrefixes: ['encoder.', 'latents_mean', 'latents_std'],
  minWindowLatent: 2,
};

export const ltx2 = defineFamily(LTX2_LAYOUT, {
  name: 'ltx2',
  description: 'AutoencoderKLLTX2Video: LTX-2',
  classNames: ['AutoencoderKLLTX2Video'],
  given: withPublishedDefaults,
  read(r) {
    r.int('in_channels', 3);
    const outChannels = r.int('out_channels', 3);
    const latentChannels = r.int('latent_channels', 128, 1, MAX_WIDTH);
    const encoderBlockOut = r.intList('block_out_channels', [256, 512, 1024, 2048], { max: MAX_WIDTH });
    const decoderBlockOut = r.intList('decoder_block_out_channels', [256, 512, 1024], { max: MAX_WIDTH });
    const layers = r.intOrIntList('decoder_layers_per_block', [5, 5, 5, 5], decoderBlockOut.length + 1);
    r.blocks(
      layers.reduce((a, b) => a + b, 0),
      'decoder_layers_per_block',
      layers,
    );
    const encoderScaling = r.boolOrBoolList('spatio_temporal_scaling', true, encoderBlockOut.length);
    const decoderScaling = r.boolOrBoolList('decoder_spatio_temporal_scaling', true, decoderBlockOut.length);
    r.boolOrBoolList('decoder_inject_noise', false, decoderBlockOut.length + 1);
    const upsampleType = r.stringList(
      'upsample_type',
      decoderBlockOut.map(() => 'spatiotemporal'),
    );
    r.boolOrBoolList('upsample_residual', true, decoderBlockOut.length);
    // upsample_factor divides channels in the up-sampler; it does not change the spatial ratio.
    r.intOrIntList('upsample_factor', 2, decoderBlockOut.length);
    // Only a conditioned decoder reads a decode timestep; the registry refuses it for others.
    if (r.bool('timestep_conditioning', false)) r.number('decode_timestep', 0);
    const patch = r.int('patch_size', 4);
    const patchT = r.int('patch_size_t', 1);
    r.number('resnet_norm_eps', 1e-6);
    r.bool('decoder_causal', true);
    r.string('decoder_spatial_padding_mode', 'reflect', ['reflect', 'zeros']);
    // The encoder's own fields, kept as given (the class defaults otherwise) and checked only when
    // an encoder is asked for (encoder-graph.ts), so they never refuse a decode.
    r.passthrough('layers_per_block', [4, 6, 6, 2, 2]);
    r.passthrough(
      'down_block_types',
      encoderBlockOut.map(() => 'LTX2VideoDownBlock3D'),
    );
    r.passthrough('downsample_type', ['spatial', 'temporal', 'spatiotemporal', 'spatiotemporal']);
    r.passthrough('encoder_causal', true);
    r.passthrough('encoder_spatial_padding_mode', 'zeros');
    const encoderLevels = encoderScaling.filter(Boolean).length;
    const spatialRatio = r.optionalInt('spatial_compression_ratio') ?? patch * 2 ** encoderLevels;
    const temporalRatio = r.optionalInt('temporal_compression_ratio') ?? patchT * 2 ** encoderLevels;
    r.fields['spatial_compression_ratio'] = spatialRatio;
    r.fields['temporal_compression_ratio'] = temporalRatio;

    let decoderSpatial = patch;
    let decoderTemporal = patchT;
    decoderScaling.forEach((scales, i) => {
      if (!scales) return;
      const type = upsampleType[i] ?? 'spatiotemporal';
      r.check(
        ['spatial', 'temporal', 'spatiotemporal'].includes(type),
        `upsample_type[${i}]`,
        type,
        'spatial, temporal or spatiotemporal',
        `upsample_type[${i}] = ${JSON.stringify(type)} is unknown`,
      );
      if (type !== 'temporal') decoderSpatial *= 2;
      if (type !== 'spatial') decoderTemporal *= 2;
    });
    r.checkRatio('spatial_compression_ratio', spatialRatio, decoderSpatial, "patch_size x the decoder's spatial up-sampling");
    r.checkRatio('temporal_compression_ratio', temporalRatio, decoderTemporal, "patch_size_t x the decoder's temporal up-sampling");
    return {
      className: 'AutoencoderKLLTX2Video',
      geometry: { spatialRatio, temporalRatio, patchSize: 1, latentChannels, outChannels, fiveDimLatents: true },
      tiling: squareTiling(512, 64, { enabled: false, window: 16, overlap: 8 }),
    };
  },
});
