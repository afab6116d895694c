// HunyuanVideo 1.5 distributed: whole tiles (each with all its frames) on 2 and 3 local ranks and
// on two queue workers (an in-process BullMQ worker per rank, against a redis-server this file
// owns; skipped where none is installed) are bitwise the one-rank tiled decode; row sharding (bands
// of rows across every frame) equals the whole decode within 1e-4 on 1, 2 and 3 ranks.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadVae, type Vae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import { setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { shardedDecodeFor } from '../../strategies/shard/sharded-decode.js';
import { seededTensor } from '../../tensor.js';
import {
  assertRowShardingMatchesWhole,
  assertTilesOnQueueWorkersBitwise,
  assertTilesOnRanksBitwise,
  QUEUE_SKIP,
} from '../testing/distributed.js';
import { HUNYUAN_VIDEO_15_TINY } from './testing/configs.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

/** The tiny VAE with diffusers' overlap factor on 32 px tiles: 2 × 3 tiles (edge tiles clipped) on a 12 × 18 latent. */
async function tinyTiled(): Promise<Vae> {
  const vae = await loadVae({ config: HUNYUAN_VIDEO_15_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  setTiling(vae, { window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } });
  return vae;
}

const z = seededTensor([2, 32, 2, 12, 18], 21);

test('hunyuan-video-1.5: distributed tiles (batch 2, 2 latent frames, clipped edge tiles) are bitwise the one-rank tiled decode', async () => {
  const vae = await tinyTiled();
  try {
    const expected = await assertTilesOnRanksBitwise(vae, z, groups.get);
    assert.deepEqual(expected.dims, [2, 3, 5, 48, 72]);
  } finally {
    await vae.dispose();
  }
});

test('hunyuan-video-1.5: tiles on two queue workers are bitwise the one-rank tiled decode', { skip: QUEUE_SKIP }, async () => {
  const vae = await tinyTiled();
  try {
    assert.equal((await assertTilesOnQueueWorkersBitwise(vae, z, 'hv15')).tiles, 6);
  } finally {
    await vae.dispose();
  }
});

// Row sharding: bands of latent rows across all frames. Mid block attention over 2 frames × 5 rows:
// on 3 ranks the bands are 2, 2 and 1 latent rows; the frame-causal attention gathers keys and
// values once (the only collective besides halo rows), and the RMS norms exchange nothing.
test('hunyuan-video-1.5: row sharding (2 latent frames, odd height 5) equals the whole decode on 1, 2 and 3 ranks, with the predicted collectives', async (t) => {
  const vae = await loadVae({ config: HUNYUAN_VIDEO_15_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    const latent = seededTensor([1, 32, 2, 5, 6], 3, 2);
    await assertRowShardingMatchesWhole(t, vae, latent, groups.get, [1, 2, 3], (s) => {
      // One attention: one all-gather of keys and values; no statistics, no all-reduce.
      assert.equal(s.collectives.allGather.calls, s.bands.length);
      assert.equal(s.collectives.allReduce.calls, 0);
      // Halo rows before both stages (3 and 11 latent rows: past the next band on 3 ranks), none on one rank.
      assert.equal(s.collectives.send.calls, s.bands.length === 1 ? 0 : 2 * s.bands.length * (s.bands.length - 1));
    });
  } finally {
    await vae.dispose();
  }
});

test('hunyuan-video-1.5: three frames, batch 2: row sharding on 2 ranks equals the whole decode', async (t) => {
  const vae = await loadVae({ config: HUNYUAN_VIDEO_15_TINY, weights: 'synthetic', seed: 7 }, { threads: 1 });
  try {
    await assertRowShardingMatchesWhole(t, vae, seededTensor([2, 32, 3, 4, 5], 9, 2), groups.get, [2], () => undefined);
  } finally {
    await vae.dispose();
  }
});

test('hunyuan-video-1.5: more ranks than latent rows is refused before any rank decodes', async () => {
  const vae = await tinyTiled();
  try {
    const decode = shardedDecodeFor(vae, groups.get(3));
    await assert.rejects(
      decode(seededTensor([1, 32, 2, 2, 6], 3)),
      (e: unknown) => e instanceof DistVaeError && e.reasons[0]?.code === 'TOO_MANY_RANKS',
    );
  } finally {
    await vae.dispose();
  }
});
