// Encoder tiles dealt to local ranks: the tile strategy on an encoder (each rank loads the encoder
// from its source, checks its content hash, and encodes the image tiles it is dealt) gives bitwise
// the one-rank tiled encode of the same plan, with both assemblies (ranks finalising their crops
// from exchanged edges; the coordinator blending raw tiles when the overlap exceeds half the window).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { seededTensor } from '../../tensor.js';
import { useStrategy } from '../index.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

const CONFIG = { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };

for (const [label, overlap] of [
  ['ranks finalise their crops', 4],
  ['coordinator blends raw tiles', 12],
] as const) {
  test(`a tiled encode on 2 and 3 thread ranks is bitwise the one-rank tiled encode: ${label}`, async () => {
    const encoder = await loadEncoder({ config: CONFIG, weights: 'synthetic', seed: 6 }, { threads: 1 });
    try {
      setTiling(encoder, tileShapePlan(encoder, 16, 16)!);
      setTiling(encoder, tileOverlapPlan(encoder, overlap, overlap)!);
      const image = seededTensor([1, 3, 40, 24], 8);
      const expected = await encoder.encode(image);
      for (const ranks of [2, 3]) {
        const report = useStrategy(encoder, 'tile', groups.get(ranks))!;
        const latents = await encoder.encode(image);
        assertSameBits(latents, expected, `${ranks} ranks`);
        const dealt = report.ranks().flatMap((r) => r.tiles);
        assert.deepEqual(
          dealt.sort((a, b) => a - b),
          Array.from({ length: dealt.length }, (_, i) => i),
          'every tile once',
        );
        assert.ok(
          report.ranks().every((r) => r.tiles.length > 0),
          'every rank encoded tiles',
        );
        useStrategy(encoder, 'tile', null);
      }
    } finally {
      await encoder.dispose();
    }
  });
}
