// HunyuanVideo and LTX-2 against diffusers' own output, stored as tiny goldens.
//
// Provenance of testing/goldens/*.npy (float32, (B, C, F, H, W)): diffusers at commit 58eb52c0
// (torch 1.13, CPU, float32) on diffusers folders whose decoder tensors are exactly this repo's
// `syntheticWeights(params, 5)` for the configs below, decoding `seededTensor(latent, 21)` —
// hunyuan-video-tiled.npy in 2 chunks × 9 tiles, ltx2-conditioned-tiled.npy in 3 chunks × 4
// tiles. The commands and flags: testing/goldens/README.md.
// The same decodes here go through loadVae, the planner's plans and vae.decode. A change to the
// synthetic weight stream or to seededTensor invalidates these files.

import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadVae } from '../decode/vae.js';
import { difference } from '../graph/testing/compare.js';
import { seededTensor } from '../tensor.js';
import { readNpy } from '../io/npy.js';
import { tileFramePlan, tileOverlapPlan, tileShapePlan, setTiling } from '../plan/planner.js';
import type { RawConfig } from './types.js';

const GOLDENS = join(dirname(fileURLToPath(import.meta.url)), 'testing', 'goldens');
/** Agreement asked of a float32 decode against diffusers' float32 decode. */
const MAX_ABS = 1e-4;

interface Golden {
  file: string;
  family: 'hunyuan-video' | 'ltx2';
  config: RawConfig;
  latent: number[];
  window: number;
  overlap: number;
  /** Temporal plan in output frames, or the family default when absent. */
  frames?: { window: number; overlap: number };
  tiles: number;
}

const CASES: Golden[] = [
  {
    file: 'hunyuan-video-tiled.npy',
    family: 'hunyuan-video',
    config: { block_out_channels: [8, 16, 16], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4, spatial_compression_ratio: 4 },
    latent: [1, 4, 6, 3, 3],
    window: 8,
    overlap: 4,
    tiles: 2 * 9,
  },
  {
    file: 'ltx2-conditioned-tiled.npy',
    family: 'ltx2',
    config: {
      latent_channels: 4,
      block_out_channels: [8, 16],
      decoder_block_out_channels: [16, 16],
      decoder_layers_per_block: [1, 1, 1],
      decoder_spatio_temporal_scaling: [true, true],
      upsample_type: ['spatial', 'temporal'],
      upsample_residual: [true, true],
      upsample_factor: [1, 1],
      patch_size: 2,
      timestep_conditioning: true,
      decoder_causal: true,
      decoder_spatial_padding_mode: 'reflect',
      spatial_compression_ratio: 4,
      temporal_compression_ratio: 2,
      decode_timestep: 0.2,
    },
    latent: [1, 4, 3, 4, 4],
    window: 12,
    overlap: 4,
    frames: { window: 4, overlap: 2 },
    tiles: 3 * 4,
  },
];

for (const c of CASES) {
  test(`${c.family}: tiled and temporally chunked vae.decode matches diffusers' golden (${c.file})`, async () => {
    const golden = readNpy(join(GOLDENS, c.file));
    const vae = await loadVae({ family: c.family, config: c.config, weights: 'synthetic', seed: 5 }, { threads: 1 });
    try {
      setTiling(vae, tileShapePlan(vae, c.window, c.window)!);
      setTiling(vae, tileOverlapPlan(vae, c.overlap, c.overlap)!);
      if (c.frames) setTiling(vae, tileFramePlan(vae, c.frames)!);
      let tiles = 0;
      const out = await vae.decode(seededTensor(c.latent, 21), { onProgress: (e) => (tiles = e.tilesTotal) });
      assert.equal(tiles, c.tiles);
      assert.deepEqual(out.dims, golden.dims);
      const { maxAbs } = difference(out, golden);
      assert.ok(maxAbs <= MAX_ABS, `max |ours − diffusers| = ${maxAbs} > ${MAX_ABS}`);
    } finally {
      await vae.dispose();
    }
  });
}
