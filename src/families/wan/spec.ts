// AutoencoderKLWan (Wan 2.1; Wan 2.2 when the config has a patch size): causal 3-D decoder run
// frame by frame inside each spatial tile. The spatial ratio is the config's
// scale_factor_spatial, as in diffusers; the decoder's own up-sampling must agree with it.

import { ConfigReader, MAX_WIDTH } from '../config-fields.js';
import { defineFamily, diffusersLayout, squareTiling, type FamilyLayout } from '../layout.js';

/**
 * What a Wan-layout decoder (Wan, Qwen-Image) is to the engine: diffusers tiles it by window and
 * stride, decodes frame steps causally, and its checkpoints carry the encoder beside it.
 */
export const WAN_LAYOUT: FamilyLayout = diffusersLayout('window-and-stride', { kind: 'frame-steps' });

export const wan = defineFamily(WAN_LAYOUT, {
  name: 'wan',
  description: 'AutoencoderKLWan: Wan 2.1 and Wan 2.2 (patch size 2)',
  classNames: ['AutoencoderKLWan'],
  read(r) {
    const { baseDim, decoderBaseDim, zDim, dimMult, temporalDown } = readWanLayout(r, { decoderBaseDim: true });
    const residual = r.bool('is_residual', false);
    r.int('in_channels', 3);
    const outChannels = r.int('out_channels', 3);
    const patchSize = r.optionalInt('patch_size') ?? 1;
    const temporalRatio = r.int('scale_factor_temporal', 4);
    const spatialRatio = r.int('scale_factor_spatial', 8);
    r.passthrough('latents_mean');
    r.passthrough('latents_std');
    checkTemporalLevels(r, dimMult, temporalDown);
    const decoderSpatial = 2 ** (dimMult.length - 1) * patchSize;
    r.checkRatio('scale_factor_spatial', spatialRatio, decoderSpatial, '2^(len(dim_mult)-1) x patch_size', "the decoder's up-sampling");
    const decoderTemporal = 2 ** temporalDown.filter(Boolean).length;
    r.checkRatio(
      'scale_factor_temporal',
      temporalRatio,
      decoderTemporal,
      '2^count(temperal_downsample)',
      "the decoder's temporal up-sampling",
    );
    r.check(
      outChannels % (patchSize * patchSize) === 0,
      'out_channels',
      outChannels,
      `a multiple of patch_size^2 = ${patchSize * patchSize}`,
      `out_channels = ${outChannels} cannot be unpatchified with patch_size ${patchSize}`,
    );
    if (residual) checkDupUpRepeats(r, decoderBaseDim ?? baseDim, dimMult, temporalDown);
    return {
      className: 'AutoencoderKLWan',
      geometry: {
        spatialRatio,
        temporalRatio,
        patchSize,
        latentChannels: zDim,
        outChannels: outChannels / (patchSize * patchSize),
        fiveDimLatents: true,
      },
      tiling: squareTiling(256, 64),
    };
  },
});

/** The fields of the Wan layout (Wan and Qwen-Image), read in diffusers' order; Wan 2.2 adds decoder_base_dim. */
export function readWanLayout(
  r: ConfigReader,
  options: { decoderBaseDim: boolean },
): { baseDim: number; decoderBaseDim: number | null; zDim: number; dimMult: number[]; temporalDown: boolean[] } {
  const baseDim = r.int('base_dim', 96, 1, MAX_WIDTH);
  const decoderBaseDim = options.decoderBaseDim ? r.optionalInt('decoder_base_dim', 1, MAX_WIDTH) : null;
  const zDim = r.int('z_dim', 16, 1, MAX_WIDTH);
  const dimMult = r.intList('dim_mult', [1, 2, 4, 4]);
  const resBlocks = r.int('num_res_blocks', 2);
  r.blocks(dimMult.length * (resBlocks + 1), 'dim_mult × num_res_blocks', { dim_mult: dimMult.length, num_res_blocks: resBlocks });
  r.passthrough('attn_scales', []);
  const temporalDown = r.boolOrBoolList('temperal_downsample', [false, true, true], null);
  return { baseDim, decoderBaseDim, zDim, dimMult, temporalDown };
}

/** temperal_downsample has one entry per level of dim_mult after the first. */
export function checkTemporalLevels(r: ConfigReader, dimMult: readonly number[], temporalDown: readonly boolean[]): void {
  r.check(
    temporalDown.length === dimMult.length - 1,
    'temperal_downsample',
    temporalDown,
    `${dimMult.length - 1} entries (one per level of dim_mult after the first)`,
    `temperal_downsample has ${temporalDown.length} entries but dim_mult has ${dimMult.length} levels`,
  );
}

/**
 * Wan 2.2's DupUp3D repeats each of an up block's input channels out·F/in times (F = 8 with a
 * temporal upsample, else 4); diffusers asserts the division is exact when it builds the model.
 */
function checkDupUpRepeats(r: ConfigReader, base: number, dimMult: readonly number[], temporalDown: readonly boolean[]): void {
  const dims = [dimMult[dimMult.length - 1]!, ...[...dimMult].reverse()].map((m) => base * m);
  const temporalUp = [...temporalDown].reverse();
  for (let i = 0; i < dimMult.length - 1; i++) {
    const factor = (temporalUp[i] ? 2 : 1) * 4;
    r.check(
      (dims[i + 1]! * factor) % dims[i]! === 0,
      'dim_mult',
      dimMult,
      'widths whose up blocks can repeat channels evenly (out·F divisible by in)',
      `up block ${i} maps ${dims[i]} to ${dims[i + 1]} channels: its DupUp3D shortcut cannot repeat ${dims[i]} channels to ${dims[i + 1]! * factor}`,
    );
  }
}
