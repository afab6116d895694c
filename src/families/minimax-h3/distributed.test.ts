// MiniMax-H3 decoded on ranks: whole tiles of the class's own loop (derived, unequal overlaps,
// raw-neighbour blends) dealt to local thread ranks, and to two queue workers (in-process BullMQ
// workers on a loopback redis-server; skipped where none is installed), are bitwise the one-rank tiled decode of the
// same plan — ranks finalise their own crops from their neighbours' raw edges, which for this loop
// are the tile above and the tile on the left only (no corner). Row sharding is refused before any
// work, naming the ops: the register tokens concatenated onto the positions and rotary tables that
// depend on the clip's whole height and width, in graphs built per clip shape (no fused graph).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { isDistVaeError } from '../../errors.js';
import { tileGrid, seamOverlaps } from '../../plan/grid.js';
import { setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { useStrategy } from '../../strategies/index.js';
import { tileLayout } from '../../tile/layout.js';
import { seededTensor } from '../../tensor.js';
import { assertTilesOnQueueWorkersBitwise, assertTilesOnRanksBitwise, QUEUE_SKIP } from '../testing/distributed.js';
import { MINIMAX_H3_TINY } from './testing/configs.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

test('minimax-h3: distributed tiles (own loop, unequal derived overlaps, batch 2) are bitwise the one-rank tiled decode', async () => {
  const vae = await loadVae({ config: MINIMAX_H3_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    // 16 px tiles, 4 px minimum overlap over 36 × 36 px: overlaps 8, 4 px on both axes — 3 × 3 tiles.
    setTiling(vae, { window: { height: 16, width: 16 }, overlap: { height: 4, width: 4 } });
    const z = seededTensor([2, 24, 3, 9, 9], 21);
    const grid = tileGrid(vae, { frames: 3, height: 9, width: 9 });
    assert.deepEqual(
      [seamOverlaps(grid.rows), seamOverlaps(grid.cols)],
      [
        [2, 1],
        [2, 1],
      ],
    );
    assert.equal(tileLayout(grid).edgesSuffice, true, 'raw-neighbour blends always finalise from raw edges');
    const expected = await assertTilesOnRanksBitwise(vae, z, groups.get);
    assert.deepEqual(expected.dims, [2, 3, 9, 36, 36]);
  } finally {
    await vae.dispose();
  }
});

test('minimax-h3: tiles of its own loop on two queue workers are bitwise the one-rank tiled decode', { skip: QUEUE_SKIP }, async () => {
  const vae = await loadVae({ config: MINIMAX_H3_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    // As above: 3 × 3 tiles with overlaps 8, 4 px (derived from the 4 px minimum).
    setTiling(vae, { window: { height: 16, width: 16 }, overlap: { height: 4, width: 4 } });
    const { expected, tiles } = await assertTilesOnQueueWorkersBitwise(vae, seededTensor([2, 24, 3, 9, 9], 21), 'minimax-h3');
    assert.equal(tiles, 9);
    assert.deepEqual(expected.dims, [2, 3, 9, 36, 36]);
  } finally {
    await vae.dispose();
  }
});

test('minimax-h3: row sharding is refused up front, naming the ops, before any rank works', async () => {
  const vae = await loadVae({ config: MINIMAX_H3_TINY, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    assert.throws(
      () => useStrategy(vae, 'shard', groups.get(2)),
      (e: unknown) =>
        isDistVaeError(e) &&
        e.code === 'UNSUPPORTED' &&
        e.reasons.some((r) => r.code === 'NO_DECODER_GRAPH') &&
        /register tokens/.test(e.message) &&
        /rotary/.test(e.message),
    );
  } finally {
    await vae.dispose();
  }
});
