// Row-sharded encodes through real local groups (worker threads): for 1–4 ranks the stacked
// latent bands equal the whole encode within max abs 1e-4 — a tiny AutoencoderKL encoder of
// the SD layout (four levels, three stride-2 down-samplers with diffusers' bottom/right pad,
// mid-block attention; odd latent heights, batch 2, bands thinner than a stage's halo) and
// tiny TAE encoders with and without the TAEF2 GroupNorm pool — and every rank sends exactly
// the collectives the locality analysis predicts. Also: more ranks than latent rows are refused
// before work, and `useStrategy(encoder, 'shard', group)` installs it.

import assert from 'node:assert/strict';
import { after, test, type TestContext } from 'node:test';
import { loadEncoder, type Encoder } from '../../encode/encoder.js';
import { DistVaeError } from '../../errors.js';
import type { RawConfig } from '../../families/types.js';
import { difference } from '../../graph/testing/compare.js';
import { setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import type { LocalGroup } from '../../ranks/local/local-group.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { useStrategy } from '../index.js';
import type { ShardStats } from './sharded-decode.js';
import { shardedEncodeFor } from './sharded-encode.js';

const TOLERANCE = 1e-4;
const RANKS = [1, 2, 3, 4];

const groups = new Map<number, LocalGroup>();
function group(ranks: number): LocalGroup {
  let g = groups.get(ranks);
  if (!g) groups.set(ranks, (g = localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 })));
  return g;
}
after(() => Promise.all([...groups.values()].map((g) => g.close())));

/** The whole encode, then the sharded one on each rank count, compared; returns each run's stats. */
async function checkSharded(t: TestContext, encoder: Encoder, image: Tensor, ranks = RANKS): Promise<ShardStats[]> {
  setTiling(encoder, 'off');
  const whole = await encoder.runner.decode(image);
  const local = encoder.tiledEncode;
  const stats: ShardStats[] = [];
  try {
    for (const r of ranks) {
      const sharded = shardedEncodeFor(encoder, group(r));
      encoder.tiledEncode = sharded;
      const out = await encoder.encode(image);
      const s = sharded.lastStats!;
      assert.deepEqual(out.dims, whole.dims);
      const { maxAbs } = difference(out, whole);
      t.diagnostic(
        `${r} rank(s), image-row bands ${s.bands.map((b) => `[${b.start},${b.end})`).join(' ')}: max abs ${maxAbs.toExponential(2)}`,
      );
      assert.ok(maxAbs <= TOLERANCE, `${r} ranks: max abs ${maxAbs}`);
      s.ranks.forEach((rank, i) => assert.deepEqual(rank.counters, s.predicted[i], `rank ${i} of ${r}: collectives`));
      stats.push(s);
    }
  } finally {
    encoder.tiledEncode = local;
  }
  return stats;
}

// The SD layout in miniature: four levels (r = 8), two resnets per level, mid-block attention.
const KL_SD_TINY: RawConfig = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [8, 8, 16, 16],
  layers_per_block: 2,
  norm_num_groups: 4,
  latent_channels: 4,
};

test('AutoencoderKL encoder, SD layout: 1–4 ranks equal the whole encode (odd latent height, batch 2)', async (t) => {
  const encoder = await loadEncoder({ config: KL_SD_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    // 7 latent rows (56 image rows) over 4 ranks: bands of 2, 2, 2, 1 latent rows = 16, 16, 16, 8 image rows.
    const stats = await checkSharded(t, encoder, seededTensor([2, 3, 56, 24], 5, 1));
    for (const s of stats) {
      assert.ok(
        s.bands.every((b) => b.start % 8 === 0 && b.end % 8 === 0),
        'bands are whole latent rows',
      );
      // One all-gather per GroupNorm (4 levels × 2 resnets × 2, mid 2 resnets × 2 + attention's 1, conv_norm_out 1 = 22) and one for the attention's keys and values.
      assert.equal(s.collectives.allGather.calls, 23 * s.bands.length);
      assert.equal(s.collectives.allReduce.calls, 0);
      assert.equal(s.collectives.send.calls > 0, s.bands.length > 1);
    }
  } finally {
    await encoder.dispose();
  }
});

test('TAE encoders, tiny synthetic: without pool blocks only halos travel; with the TAEF2 GroupNorm pool, one all-gather per pool', async (t) => {
  const tiny: RawConfig = {
    latent_channels: 4,
    decoder_block_out_channels: [8, 8, 8, 8],
    encoder_block_out_channels: [8, 8, 8, 8],
    num_decoder_blocks: [1, 1, 1, 1],
    num_encoder_blocks: [1, 1, 1, 1],
  };
  for (const [pool, gathersPerRank] of [
    [false, 0],
    [true, 1],
  ] as const) {
    const encoder = await loadEncoder(
      { family: 'tae', config: { ...tiny, use_midblock_gn: pool }, weights: 'synthetic', seed: 6 },
      { threads: 1 },
    );
    try {
      // 9 latent rows: bands of 3, 2, 2, 2 on 4 ranks, thinner than the stride-2 stages' halos.
      const stats = await checkSharded(t, encoder, seededTensor([1, 3, 72, 40], 7, 0.5));
      for (const s of stats) {
        assert.equal(s.collectives.allGather.calls, gathersPerRank * s.bands.length, `pool ${pool}: all-gathers`);
        assert.equal(s.collectives.allReduce.calls, 0);
      }
    } finally {
      await encoder.dispose();
    }
  }
});

test('more ranks than latent rows are refused before any rank works; useStrategy installs the sharded encode', async () => {
  const encoder = await loadEncoder({ config: KL_SD_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    const report = useStrategy(encoder, 'shard', group(4))!;
    await assert.rejects(
      encoder.encode(seededTensor([1, 3, 24, 16], 1)),
      (e: unknown) => e instanceof DistVaeError && /4 ranks cannot share 3 latent rows \(24 input rows\)/.test(e.message),
    );
    const latents = await encoder.encode(seededTensor([1, 3, 32, 16], 1));
    assert.deepEqual(latents.dims, [1, 4, 4, 2]);
    assert.deepEqual(
      report.shard()!.bands.map((b) => [b.start, b.end]),
      [
        [0, 8],
        [8, 16],
        [16, 24],
        [24, 32],
      ],
    );
  } finally {
    useStrategy(encoder, 'tile', null);
    await encoder.dispose();
  }
});
