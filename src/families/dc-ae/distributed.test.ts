// DC-AE decoded on ranks: whole tiles dealt to local thread ranks, and to two queue workers
// (in-process BullMQ workers on a loopback redis-server; skipped where none is installed), are
// bitwise the one-rank tiled decode of the same plan, and row sharding equals the whole decode within 1e-4 on 1–3 ranks,
// with exactly the collectives the locality analysis predicts. Its norms are RMSNorms over the
// channels of one pixel (no statistics to gather: no all-gather for norms at all), so the only
// sync regions are the linear attention cores, one per EfficientViT block (its heads and scales
// batched as (B·G, d, N) inside the region), which read keys and values only through
// K·[V; 1]ᵀ per head: each band computes its own and one all-reduce sums them (no keys or values
// travel). The attention is the same function in diffusers'
// linear and "quadratic" forms, so a band thin enough to switch forms (H·W ≤ head dim) is exact too.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { analyzeLocality } from '../../graph/locality.js';
import { setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { seededTensor } from '../../tensor.js';
import {
  assertRowShardingMatchesWhole,
  assertTilesOnQueueWorkersBitwise,
  assertTilesOnRanksBitwise,
  QUEUE_SKIP,
} from '../testing/distributed.js';
import { DCAE_SMALL, DCAE_TINY } from './testing/configs.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

test('dc-ae: distributed tiles (32/8 px plan, batch 2, clipped edge tiles) are bitwise the one-rank tiled decode', async () => {
  const vae = await loadVae({ config: DCAE_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    setTiling(vae, { window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } });
    await assertTilesOnRanksBitwise(vae, seededTensor([2, 32, 13, 14], 21), groups.get);
  } finally {
    await vae.dispose();
  }
});

test('dc-ae: tiles on two queue workers are bitwise the one-rank tiled decode', { skip: QUEUE_SKIP }, async () => {
  const vae = await loadVae({ config: DCAE_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    setTiling(vae, { window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } });
    // 13 × 14 latent at 4×: diffusers' loop starts a tile every 6 latent rows/columns (24 px)
    // up to the edge, 0, 6, 12 on both axes: 3 × 3 tiles, the last ones clipped.
    assert.equal((await assertTilesOnQueueWorkersBitwise(vae, seededTensor([2, 32, 13, 14], 21), 'dc-ae')).tiles, 9);
  } finally {
    await vae.dispose();
  }
});

const CASES = [
  // 2 EfficientViT levels × 1 block = 2 attention cores (each 4 heads × (1 + 1 scale) groups). At 3 ranks the
  // 7-row latent gives bands of 2–3 rows: 2×10 = 20 and 3×10 = 30 positions, while the whole is 70.
  { name: 'tiny (4×), odd height', config: DCAE_TINY, latent: [1, 32, 7, 10], attentions: 2, ranks: [1, 2, 3] },
  // 3 EfficientViT levels × 1 block = 3 cores; the top level's bands are 1–2 rows of 4
  // (≤ 8 = head dim: diffusers would take the quadratic form there, the whole 5×4 latent does not).
  { name: 'small (32×)', config: DCAE_SMALL, latent: [1, 32, 5, 4], attentions: 3, ranks: [3] },
];

for (const c of CASES) {
  test(`dc-ae ${c.name}: row sharding on ${c.ranks.join(', ')} rank(s) equals the whole decode within 1e-4, with the predicted collectives`, async (t) => {
    const vae = await loadVae({ config: c.config, weights: 'synthetic', seed: 2 }, { threads: 1 });
    try {
      const report = analyzeLocality(vae.decoderModel());
      assert.equal(report.sharding.possible, true, report.sharding.blockers.join('; '));
      assert.equal(report.exactTiling.possible, false);
      assert.equal(report.regions.length, c.attentions);
      assert.ok(report.regions.every((r) => r.kind === 'attention'));
      await assertRowShardingMatchesWhole(t, vae, seededTensor(c.latent, 1, 2), groups.get, c.ranks, (s) => {
        // One all-reduce of K·[V; 1]ᵀ per attention (heads × d × (d + 1) float64 per sample), nothing gathered.
        assert.equal(s.collectives.allReduce.calls, c.attentions * s.bands.length);
        assert.equal(s.collectives.allGather.calls, 0);
      });
    } finally {
      await vae.dispose();
    }
  });
}
