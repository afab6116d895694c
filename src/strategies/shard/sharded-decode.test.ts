// Row-sharded decode through real local groups (worker threads): for 1–4 ranks the stacked
// bands equal the unsharded whole decode within max abs 1e-4 — tiny AutoencoderKL configs with
// mid-block attention (odd latent heights, batch 2, bands thinner than a stage's halo), Flux.2,
// tiny TAEs with and without the TAEF2 GroupNorm pool, and the trained TAEF2 decoder (pool
// GroupNorms) on a latent encoded from a photo — and every rank sends exactly the collectives the locality analysis predicts. Also: more ranks than
// latent rows, and graphs whose nonlocal ops are not sync regions, are refused before work.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sliceLatent } from '../../decode/latents.js';
import { loadVae, type Vae } from '../../decode/vae.js';
import { localGroup } from '../../ranks/local/index.js';
import type { LocalGroup } from '../../ranks/local/local-group.js';
import { loadEncoder } from '../../encode/encoder.js';
import { DistVaeError } from '../../errors.js';
import type { RawConfig } from '../../families/types.js';
import { difference } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import { readImage } from '../../io/image.js';
import { setTiling } from '../../plan/planner.js';
import type { Tensor } from '../../tensor.js';
import { shardedDecodeFor, type ShardStats } from './sharded-decode.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const SHARED = join(HERE, '../../../../shared');
const TAEF2_DECODER = join(SHARED, 'models/taef2/taef2_decoder.pth');
const TAEF2_ENCODER = join(SHARED, 'models/taef2/taef2_encoder.pth');
const PHOTO = join(SHARED, 'data/photo-2048x768.jpg');

const TOLERANCE = 1e-4;
const RANKS = [1, 2, 3, 4];

const groups = new Map<number, LocalGroup>();
function group(ranks: number): LocalGroup {
  let g = groups.get(ranks);
  if (!g) groups.set(ranks, (g = localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 })));
  return g;
}
after(() => Promise.all([...groups.values()].map((g) => g.close())));

/** The unsharded decode, then the sharded one on 1–4 ranks, compared; returns each run's stats. */
async function checkSharded(t: TestContext, vae: Vae, z: Tensor, ranks = RANKS): Promise<ShardStats[]> {
  setTiling(vae, 'off');
  const whole = await vae.runner.decode(z);
  const local = vae.tiledDecode;
  const stats: ShardStats[] = [];
  try {
    for (const r of ranks) {
      vae.tiledDecode = shardedDecodeFor(vae, group(r));
      const out = await vae.decode(z);
      const s = (vae.tiledDecode as ReturnType<typeof shardedDecodeFor>).lastStats!;
      assert.deepEqual(out.dims, whole.dims);
      const { maxAbs } = difference(out, whole);
      t.diagnostic(`${r} rank(s), bands ${s.bands.map((b) => `[${b.start},${b.end})`).join(' ')}: max abs ${maxAbs.toExponential(2)}`);
      assert.ok(maxAbs <= TOLERANCE, `${r} ranks: max abs ${maxAbs}`);
      s.ranks.forEach((rank, i) => assert.deepEqual(rank.counters, s.predicted[i], `rank ${i} of ${r}: collectives`));
      stats.push(s);
    }
  } finally {
    vae.tiledDecode = local;
  }
  return stats;
}

const KL_TINY: RawConfig = { block_out_channels: [16, 32], norm_num_groups: 8, layers_per_block: 1 };

test('AutoencoderKL with mid-block attention: 1–4 ranks equal the whole decode, odd height, batch 2', async (t) => {
  const vae = await loadVae({ family: 'autoencoder-kl', config: KL_TINY, weights: 'synthetic', seed: 2 }, { threads: 1 });
  try {
    const stats = await checkSharded(t, vae, seededTensor([2, 4, 7, 10], 1, 2));
    // Collectives per decode: one all-gather of band statistics per GroupNorm (14), one of keys and values for the attention.
    for (const s of stats) {
      assert.equal(s.collectives.allReduce.calls, 0);
      assert.equal(s.collectives.allGather.calls, 15 * s.bands.length);
      assert.equal(s.collectives.send.calls > 0, s.bands.length > 1);
    }
  } finally {
    await vae.dispose();
  }
});

test('three levels, two layers per block: halos wider than one-row bands come from farther ranks', async (t) => {
  const config: RawConfig = { block_out_channels: [8, 16, 16], norm_num_groups: 4, layers_per_block: 2, latent_channels: 3 };
  const vae = await loadVae({ family: 'autoencoder-kl', config, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    // 5 latent rows over 4 ranks: bands of 2, 1, 1, 1 rows; the upsampling stages' halos are 2 latent rows.
    await checkSharded(t, vae, seededTensor([1, 3, 5, 6], 3, 2));
  } finally {
    await vae.dispose();
  }
});

test('Flux.2: 1–4 ranks equal the whole decode', async (t) => {
  const vae = await loadVae({ family: 'flux2', config: { ...KL_TINY, latent_channels: 8 }, weights: 'synthetic', seed: 3 }, { threads: 1 });
  try {
    await checkSharded(t, vae, seededTensor([1, 8, 9, 6], 2, 2));
  } finally {
    await vae.dispose();
  }
});

test('TAE, tiny synthetic: without pool blocks only halos travel; with the TAEF2 GroupNorm pool, one all-gather per pool', async (t) => {
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
    const vae = await loadVae({ family: 'tae', config: { ...tiny, use_midblock_gn: pool }, weights: 'synthetic', seed: 6 }, { threads: 1 });
    try {
      const stats = await checkSharded(t, vae, seededTensor([1, 4, 7, 9], 7, 2));
      for (const s of stats) {
        assert.equal(s.collectives.allGather.calls, gathersPerRank * s.bands.length, `pool ${pool}: all-gathers`);
        assert.equal(s.collectives.allReduce.calls, 0);
      }
    } finally {
      await vae.dispose();
    }
  }
});

test('the trained TAEF2 decoder on a latent encoded from a photo: 1–4 ranks equal the whole decode', async (t) => {
  const missing = [TAEF2_DECODER, TAEF2_ENCODER, PHOTO].filter((p) => !existsSync(p));
  if (missing.length > 0) return t.skip(`real TAEF2 data absent: ${missing.join(', ')}`);
  // A 104 × 160 crop (dog and foliage) encodes to a 13 × 20 latent: an odd height.
  const photo = sliceLatent(readImage(PHOTO), { y0: 96, y1: 200, x0: 160, x1: 320 });
  const encoder = await loadEncoder(TAEF2_ENCODER, { family: 'tae', threads: 1 });
  const vae = await loadVae(TAEF2_DECODER, { family: 'tae', threads: 1 });
  try {
    const latents = await encoder.encode(photo);
    assert.deepEqual(latents.dims, [1, 32, 13, 20]);
    const stats = await checkSharded(t, vae, latents);
    for (const s of stats) assert.equal(s.collectives.allGather.calls, 3 * s.bands.length, 'one all-gather per pool GroupNorm');
  } finally {
    await encoder.dispose();
    await vae.dispose();
  }
});

test('refusals before any rank works: more ranks than latent rows; a decoder with unmarked nonlocal ops', async () => {
  const vae = await loadVae({ family: 'autoencoder-kl', config: KL_TINY, weights: 'synthetic', seed: 2 }, { threads: 1 });
  try {
    vae.tiledDecode = shardedDecodeFor(vae, group(4));
    await assert.rejects(
      vae.decode(seededTensor([1, 4, 3, 5], 1)),
      (e: unknown) => e instanceof DistVaeError && /4 ranks cannot share 3 latent rows \(6 output rows\)/.test(e.message),
    );
  } finally {
    await vae.dispose();
  }
  const fake = {
    ...vae,
    geometry: vae.geometry,
    family: vae.family,
    decoderModel: () => {
      const model = vae.decoderModel();
      return { ...model, metadata_props: [] };
    },
  } as unknown as Vae;
  assert.throws(
    () => shardedDecodeFor(fake, group(2)),
    (e: unknown) =>
      e instanceof DistVaeError && e.code === 'UNSUPPORTED' && /decoder\.mid_block\.resnets\.0\.norm1\/\w+ \(/.test(e.message),
  );
});
