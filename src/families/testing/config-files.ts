// Small diffusers config.json files for tests that load from a file (the CLI's `--config`): one writer,
// and the tiny configs more than one test file decodes with (synthetic weights: they load in ms).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HUNYUAN_VIDEO_TINY } from './video-configs.js';

/** Writes `config` as JSON to `dir/name` and returns the path. */
export function configFile(dir: string, name: string, config: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

/** A two-level AutoencoderKL (2× spatial, 4 latent channels); tests add the fields they exercise. */
export const KL_SMALL = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [8, 16],
  layers_per_block: 1,
  norm_num_groups: 4,
  latent_channels: 4,
};

/** HUNYUAN_VIDEO_TINY as a config.json names it. */
export const HUNYUAN_VIDEO_SMALL = { _class_name: 'AutoencoderKLHunyuanVideo', ...HUNYUAN_VIDEO_TINY };

/** An AutoencoderTiny of one 8-channel block per level, both halves, no pool blocks (every op local). */
export const TAE_SMALL = {
  _class_name: 'AutoencoderTiny',
  latent_channels: 4,
  decoder_block_out_channels: [8, 8, 8, 8],
  encoder_block_out_channels: [8, 8, 8, 8],
  num_decoder_blocks: [1, 1, 1, 1],
  num_encoder_blocks: [1, 1, 1, 1],
};
