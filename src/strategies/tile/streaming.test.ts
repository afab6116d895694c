// Band streaming when tiles come from several ranks: `decodeToBands` through the distributed tile
// decode over 2 and 3 thread ranks hands on bitwise the single-rank tiled decode, band by band in
// row order, for both assemblies (ranks finalising their own crops; the coordinator blending raw
// tiles when the overlap exceeds half the window). Streaming deals tiles round-robin in raster
// order, so ranks at similar speeds complete rows from the top (when the assemblers flush each
// row, whatever the order tiles arrive in, is tile/assembler.test.ts).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { decodeToBands } from '../../decode/engine.js';
import { loadVae } from '../../decode/vae.js';
import { tileOverlapPlan, tileShapePlan, setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { tiledDecodeFor } from './tiled-decode.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

const CONFIG = { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };

for (const [label, overlap, assembly] of [
  ['ranks finalise their crops', 4, 'edges'],
  ['coordinator blends raw tiles (overlap over half the window)', 12, 'raster'],
] as const) {
  test(`decodeToBands over 2 and 3 thread ranks is bitwise the single-rank decode, in row order: ${label}`, async () => {
    const vae = await loadVae({ config: CONFIG, weights: 'synthetic', seed: 6 }, { threads: 1 });
    try {
      setTiling(vae, tileShapePlan(vae, 16, 16)!);
      setTiling(vae, tileOverlapPlan(vae, overlap, overlap)!);
      const z = seededTensor([1, 4, 40, 12], 8);
      const expected = await vae.decode(z);
      const single = vae.tiledDecode;
      for (const ranks of [2, 3]) {
        const distributed = tiledDecodeFor(vae, groups.get(ranks))!;
        vae.tiledDecode = distributed;
        const rows: Float32Array[] = [];
        let y = 0;
        const { streamed, dims } = await decodeToBands(vae, z, (y0, band: Tensor) => {
          assert.equal(y0, y, 'bands in order');
          rows.push(band.data);
          y += band.dims[2]!;
        });
        vae.tiledDecode = single;
        assert.equal(streamed, true);
        assert.equal(distributed.lastStats!.assembly, assembly);
        assert.ok(rows.length > 2, `${rows.length} bands`);
        const stats = distributed.lastStats!;
        assert.deepEqual(
          stats.ranks.map((r) => r.tiles),
          Array.from({ length: ranks }, (_, r) => Array.from({ length: stats.tiles }, (_, i) => i).filter((i) => i % ranks === r)),
        );
        // Rows of a (1, 3, H, W) sample: concatenating the bands plane by plane gives the sample.
        const [, c, h, w] = expected.dims as number[];
        const got = new Float32Array(expected.data.length);
        let at = 0;
        for (const band of rows) {
          const bh = band.length / (c! * w!);
          for (let p = 0; p < c!; p++) got.set(band.subarray(p * bh * w!, (p + 1) * bh * w!), (p * h! + at) * w!);
          at += bh;
        }
        assertSameBits({ dims, data: got }, expected, `${ranks} ranks`);
      }
    } finally {
      await vae.dispose();
    }
  });
}
