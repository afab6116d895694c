// diffusers' own output as goldens: the tiny `make_vae.py kl --tiny` / `flux2 --tiny` configs
// with distvae's synthetic decoder weights (seed 3), decoded by diffusers 58eb52c0
// (0.40.0.dev0, torch 1.13 CPU, float32) whole and tiled (tile_sample_min_size 32, overlap
// factor 0.25: 4 tiles incl. a 4-row edge tile), so CI checks agreement with diffusers without
// torch. The weights are regenerated here from (config, seed); only the outputs are stored.
//
// Provenance — how these files were made (difref's make_vae.py and ref_decode.py with
// scripts/synthetic-vae-folder.ts) and how to remake them: testing/goldens/README.md.

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { difference } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import { readNpy } from '../../io/npy.js';
import { tileOverlapPlan, tileShapePlan, setTiling } from '../../plan/planner.js';
import type { RawConfig } from '../types.js';

const TINY = {
  act_fn: 'silu',
  block_out_channels: [16, 32],
  layers_per_block: 1,
  mid_block_add_attention: true,
  norm_num_groups: 8,
  out_channels: 3,
  sample_size: 128,
  use_post_quant_conv: true,
};
const CASES: { family: 'autoencoder-kl' | 'flux2'; golden: string; config: RawConfig }[] = [
  { family: 'autoencoder-kl', golden: 'kl', config: { _class_name: 'AutoencoderKL', ...TINY, latent_channels: 4 } },
  {
    family: 'flux2',
    golden: 'flux2',
    config: { _class_name: 'AutoencoderKLFlux2', ...TINY, latent_channels: 32, decoder_block_out_channels: null, patch_size: [2, 2] },
  },
];
const golden = (name: string) => readNpy(fileURLToPath(new URL(`../testing/goldens/${name}.npy`, import.meta.url)));

for (const c of CASES) {
  test(`${c.family}: whole and tiled decodes match diffusers' own output (max abs ≤ 1e-4)`, async () => {
    const vae = await loadVae({ family: c.family, config: c.config, weights: 'synthetic', seed: 3 }, { threads: 1 });
    try {
      const z = seededTensor([1, vae.geometry.latentChannels, 16, 24], 9);
      const whole = await vae.decode(z);
      setTiling(vae, tileShapePlan(vae, 32, 32)!);
      setTiling(vae, tileOverlapPlan(vae, 8, 8)!);
      const tiled = await vae.decode(z);
      for (const [label, out] of [
        ['whole', whole],
        ['tiled', tiled],
      ] as const) {
        const expected = golden(`${c.golden}-${label}`);
        assert.deepEqual(out.dims, expected.dims, label);
        const { maxAbs } = difference(out, expected);
        assert.ok(maxAbs <= 1e-4, `${c.family} ${label}: max |ours − diffusers| = ${maxAbs}`);
      }
      assert.ok(
        difference(whole, tiled).maxAbs > 0.01,
        'tiling must change the result (per-tile GroupNorm and attention), or the tiled golden proves nothing',
      );
    } finally {
      await vae.dispose();
    }
  });
}
