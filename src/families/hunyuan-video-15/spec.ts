// AutoencoderKLHunyuanVideo15 (HunyuanVideo 1.5: 16× spatial, 4× temporal, 32 latent channels):
// config reading, the decoder's levels as diffusers builds them from the config, and the class's
// tiling: spatial tiles only (no temporal tiling; every decoder call takes all latent frames),
// `tile_sample_min_{height,width}` 256 px hard-coded (the config has no sample_size), latent window
// 256 // spatial_compression_ratio, `tile_overlap_factor` 0.25 — the AutoencoderKL loop and blend.

import type { ConfigReader } from '../config-fields.js';
import { defineFamily, diffusersLayout, squareTiling, type FamilyLayout } from '../layout.js';
import { checkLatentRepeat, readHunyuanDecoderShape } from '../hunyuan-image/spec.js';
import type { ResolvedConfig } from '../types.js';

/** diffusers' `tile_sample_min_height` / `_width` of AutoencoderKLHunyuanVideo15 (set in __init__, not from the config). */
export const HUNYUAN_VIDEO_15_TILE_SAMPLE = 256;
/** diffusers' `tile_overlap_factor` of the class. */
export const HUNYUAN_VIDEO_15_TILE_OVERLAP_FACTOR = 0.25;

/** The published HunyuanVideo 1.5 VAE: the class's own defaults (`AutoencoderKLHunyuanVideo15()`). */
export const HUNYUAN_VIDEO_15_PUBLISHED = {
  latent_channels: 32,
  block_out_channels: [128, 256, 512, 1024, 1024],
  layers_per_block: 2,
  spatial_compression_ratio: 16,
  temporal_compression_ratio: 4,
  scaling_factor: 1.03682,
} as const;

/** One up block of HunyuanVideo15Decoder3D. */
export interface HunyuanVideo15Level {
  /** Width the block is entered at (its first resnet maps cin → cout, with a 1×1 conv_shortcut when they differ). */
  cin: number;
  /** Width of its resnets. */
  cout: number;
  /** The upsampler after the resnets (always 2× in space; also 2× in time when `temporal`), or null. */
  upsample: { to: number; temporal: boolean } | null;
}

/** The decoder's fields, read once for the spec (refusals) and the graph (structure). */
export function hunyuanVideo15Fields(fields: Readonly<Record<string, unknown>>) {
  return {
    blockOut: fields['block_out_channels'] as number[],
    layersPerBlock: fields['layers_per_block'] as number,
    spatialRatio: fields['spatial_compression_ratio'] as number,
    temporalRatio: fields['temporal_compression_ratio'] as number,
    upsampleMatch: fields['upsample_match_channel'] as boolean,
  };
}

/**
 * The up blocks: widths reversed from `block_out_channels`; block i upsamples when
 * i < log2(spatial ratio) or i < log2(temporal ratio) (in time too when the latter), to the next
 * width with `upsample_match_channel` (else to its own). `to` is null where diffusers would index
 * past the last width (it raises; the spec refuses that config).
 */
export function hunyuanVideo15Levels(f: ReturnType<typeof hunyuanVideo15Fields>): (Omit<HunyuanVideo15Level, 'upsample'> & {
  upsample: { to: number | null; temporal: boolean } | null;
})[] {
  const widths = [...f.blockOut].reverse();
  let cin = widths[0]!;
  return widths.map((cout, i) => {
    const spatial = i < Math.log2(f.spatialRatio);
    const temporal = i < Math.log2(f.temporalRatio);
    const to = spatial || temporal ? (f.upsampleMatch ? (widths[i + 1] ?? null) : cout) : null;
    const level = { cin, cout, upsample: spatial || temporal ? { to, temporal } : null };
    cin = to ?? cout;
    return level;
  });
}

function read(r: ConfigReader): Omit<ResolvedConfig, 'fields'> {
  const P = HUNYUAN_VIDEO_15_PUBLISHED;
  const { outChannels, latentChannels, blockOut, layersPerBlock, spatialRatio } = readHunyuanDecoderShape(r, P);
  const temporalRatio = r.int('temporal_compression_ratio', P.temporal_compression_ratio);
  r.bool('downsample_match_channel', true);
  const upsampleMatch = r.bool('upsample_match_channel', true);
  r.passthrough('scaling_factor', P.scaling_factor);

  checkLatentRepeat(r, blockOut, latentChannels);
  const levels = hunyuanVideo15Levels({ blockOut, layersPerBlock, spatialRatio, temporalRatio, upsampleMatch });
  const ups = levels.filter((l) => l.upsample !== null);
  r.checkRatio(
    'spatial_compression_ratio',
    spatialRatio,
    2 ** ups.length,
    `2 to the number of upsamplers, one after each of the first log2(max(spatial, temporal ratio)) of ${blockOut.length} levels`,
    'the upsamplers the decoder builds',
  );
  r.checkRatio(
    'temporal_compression_ratio',
    temporalRatio,
    2 ** ups.filter((l) => l.upsample!.temporal).length,
    `2 to the number of temporal upsamplers, one after each of the first log2(temporal ratio) of ${blockOut.length} levels`,
    'the temporal upsamplers the decoder builds',
  );
  for (const [i, level] of levels.entries()) {
    const up = level.upsample;
    if (!up) continue;
    if (up.to === null) {
      r.check(
        false,
        'block_out_channels',
        blockOut,
        `more than ${i + 1} levels`,
        `decoder level ${i} upsamples to the next width, but block_out_channels has only ${blockOut.length} entries (diffusers indexes past them)`,
      );
      continue;
    }
    // The shortcut packs frames and pixels into channels (cin / 8 or cin / 4 groups) and repeats them to the output width.
    const pack = up.temporal ? 8 : 4;
    r.check(
      (4 * up.to) % level.cout === 0 && (!up.temporal || level.cout % pack === 0),
      'block_out_channels',
      blockOut,
      `upsamplers whose input width divides 4 × their output width${up.temporal ? ' and is a multiple of 8' : ''}`,
      `the upsampler of decoder level ${i} (width ${level.cout} → ${up.to}${up.temporal ? ', in time too' : ''}) cannot repeat its packed input to ${up.to} channels`,
    );
  }
  const tile = HUNYUAN_VIDEO_15_TILE_SAMPLE;
  return {
    className: 'AutoencoderKLHunyuanVideo15',
    geometry: { spatialRatio, temporalRatio, patchSize: 1, latentChannels, outChannels, fiveDimLatents: true },
    tiling: squareTiling(tile, Math.trunc(tile * HUNYUAN_VIDEO_15_TILE_OVERLAP_FACTOR)),
  };
}

/** diffusers' AutoencoderKL loop (per-axis windows, one overlap factor); 5-D latents whose every tile decodes all frames; checkpoints carry the encoder. */
const HUNYUAN_VIDEO_15_LAYOUT: FamilyLayout = {
  ...diffusersLayout('windows-with-overlap-factor', { kind: 'all-frames' }),
  ignoredKeyPrefixes: ['encoder.'],
};

export const hunyuanVideo15 = defineFamily(HUNYUAN_VIDEO_15_LAYOUT, {
  name: 'hunyuan-video-1.5',
  description: 'AutoencoderKLHunyuanVideo15: HunyuanVideo 1.5 (16×, 4× in time, 32 latent channels)',
  classNames: ['AutoencoderKLHunyuanVideo15'],
  read,
});
