// MiniMax-H3's encoder tiles dealt to local ranks: the tile strategy on a video encoder whose
// tiling is the class's own loop (derived seam overlaps, raw neighbours) and whose frame loop is
// read from the config on each rank (`framesFor`) gives bitwise the one-rank tiled encode — the
// mean, and the moments `--sample` draws from (the ranks load the encoder with them).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { seededTensor } from '../../tensor.js';
import { useStrategy } from '../../strategies/index.js';
import { MINIMAX_H3_TINY } from './testing/configs.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

for (const moments of [false, true])
  test(`minimax-h3: encoder tiles of a video on 2 thread ranks are bitwise the one-rank tiled encode${moments ? ' (the moments, --sample)' : ''}`, async () => {
    const encoder = await loadEncoder({ config: MINIMAX_H3_TINY, weights: 'synthetic', seed: 4 }, { threads: 1, moments });
    try {
      setTiling(encoder, tileShapePlan(encoder, 32, 32)!);
      setTiling(encoder, tileOverlapPlan(encoder, 8, 8)!);
      // 5 frames (one padded clip), 2 × 3 tiles of 32 px with derived overlaps.
      const x = seededTensor([1, 3, 5, 48, 72], 11);
      const expected = await encoder.encode(x);
      assert.equal(expected.dims[1], moments ? 48 : 24);
      const report = useStrategy(encoder, 'tile', groups.get(2))!;
      assertSameBits(await encoder.encode(x), expected, '2 ranks');
      assert.ok(
        report.ranks().every((r) => r.tiles.length > 0),
        'every rank encoded tiles',
      );
      useStrategy(encoder, 'tile', null);
    } finally {
      await encoder.dispose();
    }
  });
