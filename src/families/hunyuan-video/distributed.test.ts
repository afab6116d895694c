// HunyuanVideo (1.0) row sharding: bands of latent rows across every frame. Its GroupNorms take
// statistics over frames × H × W per group, merged across bands by Chan's formula (one
// all-gather each); its mid-block attention is frame-causal over frames × H × W (keys and values
// gathered once). Equal to the whole decode within 1e-4 on 1, 2 and 3 ranks, each rank sending
// exactly what the locality analysis predicts.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { localGroup } from '../../ranks/local/index.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { seededTensor } from '../../tensor.js';
import { assertRowShardingMatchesWhole } from '../testing/distributed.js';
import { HUNYUAN_VIDEO_TINY } from '../testing/video-configs.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

test('hunyuan-video: row sharding (2 latent frames, odd height 5) equals the whole decode on 1, 2 and 3 ranks', async (t) => {
  const vae = await loadVae({ family: 'hunyuan-video', config: HUNYUAN_VIDEO_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    await assertRowShardingMatchesWhole(t, vae, seededTensor([1, 4, 2, 5, 6], 3, 2), groups.get, [1, 2, 3], (s) => {
      const norms = s.predicted[0]!.allGather.calls - 1;
      assert.ok(norms > 0);
      // One all-gather per GroupNorm (band statistics) and one of keys and values for the attention, per rank.
      assert.equal(s.collectives.allGather.calls, (norms + 1) * s.bands.length);
      assert.equal(s.collectives.allReduce.calls, 0);
    });
  } finally {
    await vae.dispose();
  }
});
