// Row-sharded encodes through real local groups (worker threads): for 1–4 ranks the stacked
// latent bands equal the whole encode within max abs 1e-4 (and 1e-4 of the largest |latent|) —
// a tiny AutoencoderKL encoder of the SD layout (four levels, three stride-2 down-samplers with diffusers' bottom/right pad,
// mid-block attention; odd latent heights, batch 2, bands thinner than a stage's halo), a tiny
// HunyuanImage encoder (space-to-depth down-samplers and group-mean shortcuts) and tiny TAE encoders with and without the TAEF2 GroupNorm pool — and every rank sends exactly
// the collectives the locality analysis predicts. Video encoders (B, C, F, H, W): HunyuanVideo's
// (causal convs, GroupNorms over frames × H × W, a frame-causal mid attention, stride-2 down-samplers
// in time and space) on 1–4 ranks at 1, 5 and 9 frames; DC-AE's (ReLU linear attention) on 2–3
// ranks. Also: more ranks than latent rows are refused before work, `useStrategy(encoder, 'shard',
// group)` installs it, and encoders that are not one graph are refused up front naming why.

import assert from 'node:assert/strict';
import { after, test, type TestContext } from 'node:test';
import { loadEncoder, type Encoder } from '../../encode/encoder.js';
import { DistVaeError } from '../../errors.js';
import { DCAE_TINY } from '../../families/dc-ae/testing/configs.js';
import { HUNYUAN_IMAGE_TINY } from '../../families/hunyuan-image/testing/configs.js';
import { HUNYUAN_VIDEO_DIFREF_TINY } from '../../families/hunyuan-video/testing/configs.js';
import { HUNYUAN_VIDEO_15_TINY } from '../../families/hunyuan-video-15/testing/configs.js';
import { LTX2_DIFREF_TINY } from '../../families/ltx2/testing/configs.js';
import { MINIMAX_H3_TINY } from '../../families/minimax-h3/testing/configs.js';
import { WAN_TINY_SAVED } from '../../families/testing/video-configs.js';
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
async function checkSharded(t: TestContext, encoder: Encoder, image: Tensor, ranks: readonly number[] = RANKS): Promise<ShardStats[]> {
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
      const largest = whole.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      t.diagnostic(
        `${r} rank(s), image-row bands ${s.bands.map((b) => `[${b.start},${b.end})`).join(' ')}: max abs ${maxAbs.toExponential(2)}, relative to max |whole| ${(maxAbs / largest).toExponential(2)}`,
      );
      assert.ok(maxAbs <= TOLERANCE, `${r} ranks: max abs ${maxAbs}`);
      assert.ok(maxAbs <= TOLERANCE * largest, `${r} ranks: max |Δ| ${maxAbs} over max |whole| ${largest}`);
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

test('HunyuanImage encoder: space-to-depth down-samplers (4×4 stride-2 kernels assembled in the graph) and the group-mean shortcuts shard too', async (t) => {
  const encoder = await loadEncoder({ config: HUNYUAN_IMAGE_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    const r = encoder.geometry.spatialRatio;
    await checkSharded(t, encoder, seededTensor([1, 3, 7 * r, 5 * r], 3, 1), [1, 3, 4]);
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

test('HunyuanVideo encoder (video in, 5-D bands of rows of every frame): 1–4 ranks equal the whole encode at 1, 5 and 9 frames, with the predicted collectives', async (t) => {
  const encoder = await loadEncoder({ config: HUNYUAN_VIDEO_DIFREF_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    const r = encoder.geometry.spatialRatio;
    // 7 latent rows (odd) over up to 4 ranks; batch 2 at 5 frames (two temporal down-samplers: 5 → 3 → 2 frames).
    for (const [frames, batch, ranks] of [
      [5, 2, RANKS],
      [1, 1, [1, 3]],
      [9, 1, [2, 4]],
    ] as const) {
      const stats = await checkSharded(t, encoder, seededTensor([batch, 3, frames, 7 * r, 3 * r], 11 + frames, 1), ranks);
      for (const s of stats) {
        // One all-gather per GroupNorm (3 levels × 2, mid 2 resnets × 2 + attention's 1, conv_norm_out 1 = 12) and one for the keys and values.
        assert.equal(s.collectives.allGather.calls, 13 * s.bands.length, `${frames} frames: all-gathers`);
        assert.equal(s.collectives.allReduce.calls, 0);
      }
    }
  } finally {
    await encoder.dispose();
  }
});

test('HunyuanVideo encoder: more ranks than latent rows are refused up front with the valid range', async () => {
  const encoder = await loadEncoder({ config: HUNYUAN_VIDEO_DIFREF_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    encoder.tiledEncode = shardedEncodeFor(encoder, group(3));
    await assert.rejects(
      encoder.encode(seededTensor([1, 3, 5, 8, 8], 1)),
      (e: unknown) =>
        e instanceof DistVaeError &&
        e.reasons[0]?.code === 'TOO_MANY_RANKS' &&
        e.reasons[0].valid === 'at most 2 (one latent row, 4 input rows, per rank)' &&
        /3 ranks cannot share 2 latent rows \(8 input rows\)/.test(e.message),
    );
  } finally {
    await encoder.dispose();
  }
});

test('DC-AE encoder (ReLU linear attention, per-pixel RMS norms): 2–3 ranks equal the whole encode, one all-reduce of K·[V; 1] per attention', async (t) => {
  const encoder = await loadEncoder({ config: DCAE_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    const r = encoder.geometry.spatialRatio;
    const stats = await checkSharded(t, encoder, seededTensor([1, 3, 5 * r, 3 * r], 9, 1), [2, 3]);
    for (const s of stats) {
      assert.equal(s.collectives.allGather.calls, 0, 'no norm statistics');
      assert.ok(s.collectives.allReduce.calls > 0, 'the linear attention sums');
    }
  } finally {
    await encoder.dispose();
  }
});

test('encoders that are not one graph are refused up front, naming why (frame-stepped, clip loop, packing down-samplers)', async () => {
  for (const [config, why] of [
    [WAN_TINY_SAVED, /frame-stepped/],
    [MINIMAX_H3_TINY, /loops over clips/],
    [LTX2_DIFREF_TINY, /pack rows, columns and frames into channels/],
    [HUNYUAN_VIDEO_15_TINY, /pack rows, columns and frames into channels/],
  ] as const) {
    const encoder = await loadEncoder({ config, weights: 'synthetic', seed: 4 }, { threads: 1 });
    try {
      assert.throws(
        () => useStrategy(encoder, 'shard', group(2)),
        (e: unknown) => e instanceof DistVaeError && e.reasons[0]?.code === 'NO_ENCODER_GRAPH' && why.test(e.message),
      );
    } finally {
      await encoder.dispose();
    }
  }
});
