// HunyuanImage decoded on ranks: whole tiles dealt to local thread ranks are bitwise the
// one-rank tiled decode of the same plan, and row sharding (GroupNorm statistics gathered per
// norm, the mid-block attention's keys and values gathered) equals the whole decode within 1e-4
// on 1–3 ranks, with exactly the collectives the locality analysis predicts — as for
// AutoencoderKL. The locality analysis proves the graph shardable and not halo-exact (GroupNorm,
// attention), from the graph alone.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { difference } from '../../graph/testing/compare.js';
import { analyzeLocality } from '../../graph/locality.js';
import { setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { shardedDecodeFor } from '../../strategies/shard/sharded-decode.js';
import { tiledDecodeFor } from '../../strategies/tile/tiled-decode.js';
import { seededTensor } from '../../tensor.js';
import { HUNYUAN_IMAGE_SMALL, HUNYUAN_IMAGE_TINY } from './testing/configs.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

test('hunyuan-image: distributed tiles (default plan, batch 2, clipped edge tiles) are bitwise the one-rank tiled decode', async () => {
  const vae = await loadVae({ config: HUNYUAN_IMAGE_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    setTiling(vae);
    const z = seededTensor([2, 64, 12, 18], 21);
    const expected = await vae.decode(z);
    const single = vae.tiledDecode;
    for (const ranks of [2, 3]) {
      vae.tiledDecode = tiledDecodeFor(vae, groups.get(ranks))!;
      assertSameBits(await vae.decode(z), expected, `${ranks} ranks`);
      vae.tiledDecode = single;
    }
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
    const local = vae.tiledDecode;
    try {
      const report = analyzeLocality(vae.decoderModel());
      assert.equal(report.sharding.possible, true, report.sharding.blockers.join('; '));
      assert.equal(report.exactTiling.possible, false);
      assert.equal(report.regions.filter((r) => r.kind === 'attention').length, 1);
      setTiling(vae, 'off');
      const z = seededTensor(c.latent, 1, 2);
      const whole = await vae.runner.decode(z);
      for (const ranks of c.ranks) {
        vae.tiledDecode = shardedDecodeFor(vae, groups.get(ranks));
        const out = await vae.decode(z);
        const s = (vae.tiledDecode as ReturnType<typeof shardedDecodeFor>).lastStats!;
        const { maxAbs } = difference(out, whole);
        t.diagnostic(`${ranks} rank(s): max abs ${maxAbs.toExponential(2)}`);
        assert.ok(maxAbs <= 1e-4, `${ranks} ranks: max abs ${maxAbs}`);
        s.ranks.forEach((rank, i) => assert.deepEqual(rank.counters, s.predicted[i], `rank ${i} of ${ranks}: collectives`));
        assert.equal(s.collectives.allGather.calls, c.gathers * s.bands.length);
        assert.equal(s.collectives.allReduce.calls, 0);
      }
    } finally {
      vae.tiledDecode = local;
      await vae.dispose();
    }
  });
}
