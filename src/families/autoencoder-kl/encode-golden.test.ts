// diffusers' own encodes as goldens: the tiny `make_vae.py kl | kl-flux | flux2 --tiny` configs
// (quant_conv present, absent — SD3 / FLUX.1's layout — and Flux.2) with distvae's synthetic
// encoder weights (seed 4), `encode(x).latent_dist.mode()` by diffusers 58eb52c0 (torch 1.13
// CPU, float32) on a seeded image in [−1, 1], whole and tiled (tile_sample_min_size 32, overlap
// factor 0.25: 4 tiles incl. an 8-row edge tile). Provenance and the commands that remake them:
// testing/goldens/README.md.

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { difference } from '../../graph/testing/compare.js';
import { readNpy } from '../../io/npy.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { seededTensor } from '../../tensor.js';
import type { RawConfig } from '../types.js';

const TINY = {
  act_fn: 'silu',
  block_out_channels: [16, 32],
  layers_per_block: 1,
  mid_block_add_attention: true,
  norm_num_groups: 8,
  in_channels: 3,
  out_channels: 3,
  sample_size: 128,
};
const CASES: { family: 'autoencoder-kl' | 'flux2'; golden: string; config: RawConfig }[] = [
  { family: 'autoencoder-kl', golden: 'kl', config: { _class_name: 'AutoencoderKL', ...TINY, latent_channels: 4 } },
  {
    family: 'autoencoder-kl',
    golden: 'kl-flux',
    config: { _class_name: 'AutoencoderKL', ...TINY, latent_channels: 16, use_quant_conv: false, use_post_quant_conv: false },
  },
  {
    family: 'flux2',
    golden: 'flux2',
    config: { _class_name: 'AutoencoderKLFlux2', ...TINY, latent_channels: 32, decoder_block_out_channels: null, patch_size: [2, 2] },
  },
];
const golden = (name: string) => readNpy(fileURLToPath(new URL(`../testing/goldens/${name}.npy`, import.meta.url)));
/** The test image: seeded values in [−1, 1], the diffusers classes' input range. */
const ENCODE_IMAGE = { dims: [1, 3, 32, 48], seed: 11 } as const;

for (const c of CASES) {
  test(`${c.golden}: whole and tiled encodes match diffusers' latent_dist.mode() (≤ 1e-4 of the largest value)`, async () => {
    const encoder = await loadEncoder({ family: c.family, config: c.config, weights: 'synthetic', seed: 4 }, { threads: 1 });
    try {
      const x = seededTensor(ENCODE_IMAGE.dims, ENCODE_IMAGE.seed);
      const whole = await encoder.encode(x);
      setTiling(encoder, tileShapePlan(encoder, 32, 32)!);
      setTiling(encoder, tileOverlapPlan(encoder, 8, 8)!);
      const tiled = await encoder.encode(x);
      for (const [label, out] of [
        ['whole', whole],
        ['tiled', tiled],
      ] as const) {
        const expected = golden(`${c.golden}-encode-${label}`);
        assert.deepEqual(out.dims, expected.dims, label);
        const { maxAbs } = difference(out, expected);
        const scale = expected.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
        assert.ok(maxAbs <= 1e-4 * scale, `${c.golden} ${label}: max |ours − diffusers| = ${maxAbs} (largest ${scale})`);
      }
      assert.ok(difference(whole, tiled).maxAbs > 0.01, 'tiling must change the latents, or the tiled golden proves nothing');
    } finally {
      await encoder.dispose();
    }
  });
}
