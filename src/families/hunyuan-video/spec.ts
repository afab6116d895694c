// AutoencoderKLHunyuanVideo: causal 3-D decoder over whole temporal chunks. Temporal tiling
// (diffusers' framewise decoding) is on by default at 16 frames with stride 12; chunks after
// the first drop their first decoded frame before blend_t.

import { log2Exact, MAX_WIDTH, readBlockOutLayers } from '../config-fields.js';
import { defineFamily, diffusersLayout, squareTiling, type FamilyLayout } from '../layout.js';

/** diffusers' window-and-stride tiling, with temporal chunks that drop their first decoded frame. */
const HUNYUAN_VIDEO_LAYOUT: FamilyLayout = diffusersLayout('window-and-stride', { kind: 'temporal-chunks', dropFrame: 'first' });

export const hunyuanVideo = defineFamily(HUNYUAN_VIDEO_LAYOUT, {
  name: 'hunyuan-video',
  description: 'AutoencoderKLHunyuanVideo: HunyuanVideo',
  classNames: ['AutoencoderKLHunyuanVideo'],
  read(r) {
    r.int('in_channels', 3);
    const outChannels = r.int('out_channels', 3);
    const latentChannels = r.int('latent_channels', 16, 1, MAX_WIDTH);
    const blockOut = readBlockOutLayers(r);
    const groups = r.int('norm_num_groups', 32);
    const upTypes = r.stringList(
      'up_block_types',
      blockOut.map(() => 'HunyuanVideoUpBlock3D'),
    );
    // The encoder's blocks (encoder-graph.ts): diffusers knows only this one type.
    const downTypes = r.stringList(
      'down_block_types',
      blockOut.map(() => 'HunyuanVideoDownBlock3D'),
    );
    r.passthrough('scaling_factor', 0.476986);
    const spatialRatio = r.int('spatial_compression_ratio', 8);
    const temporalRatio = r.int('temporal_compression_ratio', 4);
    r.bool('mid_block_add_attention', true);
    const spatialLevels = log2Exact(spatialRatio);
    r.check(
      spatialLevels !== null && spatialLevels <= blockOut.length - 1,
      'spatial_compression_ratio',
      spatialRatio,
      `a power of two up to 2^${blockOut.length - 1}`,
      `spatial_compression_ratio = ${spatialRatio} cannot be built from ${blockOut.length} decoder levels`,
    );
    r.check(
      upTypes.length === blockOut.length && upTypes.every((t) => t === 'HunyuanVideoUpBlock3D'),
      'up_block_types',
      upTypes,
      `${blockOut.length} x "HunyuanVideoUpBlock3D"`,
      `up_block_types ${JSON.stringify(upTypes)}: the HunyuanVideo decoder has one HunyuanVideoUpBlock3D per block_out_channels entry`,
    );
    r.check(
      downTypes.length === blockOut.length && downTypes.every((t) => t === 'HunyuanVideoDownBlock3D'),
      'down_block_types',
      downTypes,
      `${blockOut.length} x "HunyuanVideoDownBlock3D"`,
      `down_block_types ${JSON.stringify(downTypes)}: the HunyuanVideo encoder has one HunyuanVideoDownBlock3D per block_out_channels entry`,
    );
    r.check(
      blockOut.every((c) => c % groups === 0),
      'norm_num_groups',
      groups,
      `a divisor of every block_out_channels entry (${blockOut.join(', ')})`,
      `norm_num_groups = ${groups} does not divide block_out_channels ${JSON.stringify(blockOut)}`,
    );
    r.check(
      temporalRatio === 4,
      'temporal_compression_ratio',
      temporalRatio,
      '4',
      `temporal_compression_ratio = ${temporalRatio}: the HunyuanVideo decoder only supports 4`,
    );
    return {
      className: 'AutoencoderKLHunyuanVideo',
      geometry: { spatialRatio, temporalRatio, patchSize: 1, latentChannels, outChannels, fiveDimLatents: true },
      tiling: squareTiling(256, 64, { enabled: true, window: 16, overlap: 4 }),
    };
  },
});
