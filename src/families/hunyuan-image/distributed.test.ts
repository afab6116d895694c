// HunyuanImage decoded on ranks: whole tiles dealt to local thread ranks are bitwise the
// one-rank tiled decode of the same plan, and row sharding (GroupNorm statistics gathered per
// norm, the mid-block attention's keys and values gathered) equals the whole decode within 1e-4
// on 1–3 ranks, with exactly the collectives the locality analysis predicts — as for
// AutoencoderKL. The locality analysis proves the graph shardable and not halo-exact (GroupNorm,
// attention), from the graph alone.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { analyzeLocality } from '../../graph/locality.js';
import { setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { seededTensor } from '../../tensor.js';
import { assertRowShardingMatchesWhole, assertTilesOnRanksBitwise } from '../testing/distributed.js';
import { HUNYUAN_IMAGE_SMALL, HUNYUAN_IMAGE_TINY } from './testing/configs.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

test('hunyuan-image: distributed tiles (default plan, batch 2, clipped edge tiles) are bitwise the one-rank tiled decode', async () => {
  const vae = await loadVae({ config: HUNYUAN_IMAGE_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    setTiling(vae);
    await assertTilesOnRanksBitwise(vae, seededTensor([2, 64, 12, 18], 21), groups.get);
  } finally {
    await vae.dispose();
  }
});

const CASES = [
  // 3 levels, 4×: 2·2 + 3·2·2 resnet GroupNorms, the attention's and norm_out: 18, plus the attention.
  { name: 'tiny (4×), odd height', config: HUNYUAN_IMAGE_TINY, latent: [1, 64, 7, 10], gathers: 18 + 1, ranks: [1, 2, 3] },
  // 6 levels, 32×: 2·2 + 6·2·2 resnet norms, the attention's and norm_out: 30, plus the attention.
  { name: 'small (32×)', config: HUNYUAN_IMAGE_SMALL, latent: [1, 64, 5, 4], gathers: 30 + 1, ranks: [3] },
];

for (const c of CASES) {
  test(`hunyuan-image ${c.name}: row sharding on ${c.ranks.join(', ')} rank(s) equals the whole decode within 1e-4, with the predicted collectives`, async (t) => {
    const vae = await loadVae({ config: c.config, weights: 'synthetic', seed: 2 }, { threads: 1 });
    try {
      const report = analyzeLocality(vae.decoderModel());
      assert.equal(report.sharding.possible, true, report.sharding.blockers.join('; '));
      assert.equal(report.exactTiling.possible, false);
      assert.equal(report.regions.filter((r) => r.kind === 'attention').length, 1);
      await assertRowShardingMatchesWhole(t, vae, seededTensor(c.latent, 1, 2), groups.get, c.ranks, (s) => {
        assert.equal(s.collectives.allGather.calls, c.gathers * s.bands.length);
        assert.equal(s.collectives.allReduce.calls, 0);
      });
    } finally {
      await vae.dispose();
    }
  });
}
