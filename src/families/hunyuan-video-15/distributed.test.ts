// HunyuanVideo 1.5 distributed: whole tiles (each with all its frames) on 2 and 3 local ranks and
// on two queue workers (an in-process BullMQ worker per rank, against a redis-server of the
// test's own; skipped where none is installed) are bitwise the one-rank tiled decode. Row sharding is
// refused up front: the row-sharding engine and its locality analysis take image (4-D) latents,
// and this family's are 5-D (docs/design.md §6 says what sharding it would need).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadVae, type Vae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import { setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { shardedDecodeFor } from '../../strategies/shard/sharded-decode.js';
import { seededTensor } from '../../tensor.js';
import { assertTilesOnQueueWorkersBitwise, assertTilesOnRanksBitwise, QUEUE_SKIP } from '../testing/distributed.js';
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

test('hunyuan-video-1.5: row sharding is refused up front (5-D latents), before any rank decodes', async () => {
  const vae = await tinyTiled();
  try {
    assert.throws(
      () => shardedDecodeFor(vae, groups.get(2)),
      (e: unknown) =>
        e instanceof DistVaeError &&
        e.code === 'UNSUPPORTED' &&
        e.reasons[0]?.code === 'SHARD_VIDEO' &&
        /hunyuan-video-1\.5 latents are 5-D/.test(e.message),
    );
  } finally {
    await vae.dispose();
  }
});
