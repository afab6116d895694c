// diffusers' own AutoencoderKLMiniMaxH3 output as goldens (testing/goldens/README.md: the difref
// tiny and small configs, synthetic decoder weights seed 3, diffusers 58eb52c0): the whole decode
// (clips of 7 latent frames, cross-faded, padded frames cut) and the tiled decode through the
// class's own loop (tile + minimum overlap, derived overlaps, raw-neighbour blends) set through our
// planner, within 1e-4 of the output's largest value. Only outputs are stored; weights and latents
// are regenerated here from their seeds.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { difference } from '../../graph/testing/compare.js';
import { diffusersEquivalent } from '../../plan/equivalence.js';
import { tileGrid, seamOverlaps } from '../../plan/grid.js';
import { setTiling } from '../../plan/planner.js';
import { seededTensor } from '../../tensor.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { MINIMAX_H3_SMALL, MINIMAX_H3_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);

const CASES = [
  // Two clips (T = 8: padded to 12), tiles 16 px with a 4 px minimum: overlaps 8 | 8, 4 px derived.
  {
    name: 'tiny',
    config: MINIMAX_H3_TINY,
    latent: [1, 24, 8, 6, 9],
    tile: 16,
    minOverlap: 4,
    seams: [[2], [2, 1]],
    frameStep: 3,
    step: 1,
    suffix: '-frames3',
  },
  // One clip (T = 3: padded to 7), 36 layers, tiles 48 px with a 16 px minimum: overlaps 32 | 16 px.
  {
    name: 'small',
    config: MINIMAX_H3_SMALL,
    latent: [1, 24, 3, 4, 5],
    tile: 48,
    minOverlap: 16,
    seams: [[2], [1]],
    frameStep: 1,
    step: 3,
    suffix: '-every3',
  },
];

for (const c of CASES) {
  test(`minimax-h3 ${c.name}: whole and tiled (own loop) decodes match diffusers within 1e-4 of the largest value`, async () => {
    const vae = await loadVae({ config: c.config, weights: 'synthetic', seed: 3 }, { threads: 1 });
    try {
      assert.equal(vae.family.name, 'minimax-h3');
      assert.equal(vae.tiling.enabled, true, 'the class tiles by default');
      const z = seededTensor(c.latent, 9);
      setTiling(vae, 'off');
      const whole = await vae.decode(z);
      setTiling(vae, { window: { height: c.tile, width: c.tile }, overlap: { height: c.minOverlap, width: c.minOverlap } });
      assert.ok(diffusersEquivalent(vae), 'the tile and minimum overlap are the class attributes');
      const grid = tileGrid(vae, { frames: c.latent[2]!, height: c.latent[3]!, width: c.latent[4]! });
      assert.deepEqual([seamOverlaps(grid.rows), seamOverlaps(grid.cols)], c.seams, 'derived overlaps (latent units)');
      const tiled = await vae.decode(z);
      for (const [label, out] of [
        ['whole', whole],
        ['tiled', tiled],
      ] as const) {
        assertMatchesGolden(out, golden(`${c.name}-${label}${c.suffix}`), `${c.name} ${label}`, c.step, c.frameStep);
      }
      assert.ok(difference(whole, tiled).maxAbs > 0.01, 'tiling must change the result (attention within each tile)');
    } finally {
      await vae.dispose();
    }
  });
}
