// Test helper: the checks every family's distributed test makes — whole tiles dealt to local
// ranks, and to queue workers, are bitwise the one-rank tiled decode of the same plan, and row
// sharding equals the whole (untiled) decode within 1e-4 with exactly the collectives the locality
// analysis predicts. One home, so a family's test says only what differs: its config, latent, plan
// and collective counts.

import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Vae } from '../../decode/vae.js';
import { difference } from '../../graph/testing/compare.js';
import { setTiling } from '../../plan/planner.js';
import type { ProgramGroup, RankGroup } from '../../ranks/group.js';
import type { VaeRef } from '../../ranks/program.js';
import { queueGroup } from '../../ranks/queue/index.js';
import { startQueueWorker } from '../../ranks/queue/queue-worker.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { redisServerPath, startRedisServer } from '../../ranks/testing/redis-server.js';
import { shardedDecodeFor, type ShardStats } from '../../strategies/shard/sharded-decode.js';
import { tiledDecodeFor } from '../../strategies/tile/tiled-decode.js';
import type { Tensor } from '../../tensor.js';

/**
 * Decodes `z` with `vae`'s tiling on one rank, then with its tiles dealt to each of `ranks` groups
 * (2 and 3 unless told): bitwise the same. Returns the one-rank decode; `vae` keeps its decode.
 */
export async function assertTilesOnRanksBitwise(
  vae: Vae,
  z: Tensor,
  group: (ranks: number) => RankGroup,
  ranks: readonly number[] = [2, 3],
): Promise<Tensor> {
  const expected = await vae.decode(z);
  const single = vae.tiledDecode;
  for (const n of ranks) {
    vae.tiledDecode = tiledDecodeFor(vae, group(n))!;
    assertSameBits(await vae.decode(z), expected, `${n} ranks`);
    vae.tiledDecode = single;
  }
  return expected;
}

/** A queue test's skip: the reason where no redis-server is installed. */
export const QUEUE_SKIP: false | string = redisServerPath() ? false : 'no redis-server';

/**
 * Decodes `z` with `vae`'s tiling on one rank, then with its tiles on `workers` queue workers
 * (in-process BullMQ workers that load `vae`'s source themselves, against a redis-server of its
 * own on loopback, queue `queue`): bitwise the same. Returns the one-rank decode and the number of
 * tiles the queue decode dealt; `vae` keeps its decode.
 */
export async function assertTilesOnQueueWorkersBitwise(
  vae: Vae,
  z: Tensor,
  queue: string,
  workers = 2,
): Promise<{ expected: Tensor; tiles: number }> {
  const server = await startRedisServer();
  const ref: VaeRef = { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() };
  const running = await Promise.all(Array.from({ length: workers }, () => startQueueWorker({ connection: server.url, queue, vae: ref })));
  const group = queueGroup({ connection: server.url, queue, ranks: workers, timeoutMs: 60000, cleanupTimeoutMs: 5000 });
  try {
    const expected = await vae.decode(z);
    const decode = tiledDecodeFor(vae, group)!;
    assertSameBits(await decode(z), expected, 'queue workers');
    return { expected, tiles: decode.lastStats!.tiles };
  } finally {
    await group.close();
    await Promise.all(running.map((w) => w.close()));
    await server.stop();
  }
}

/**
 * Turns tiling off, decodes `z` whole, then row-shards it on each of `ranks` groups: within 1e-4
 * of the whole, each rank's collectives as predicted; `check` asserts the family's collective
 * counts from the stats. `vae` keeps its decode.
 */
export async function assertRowShardingMatchesWhole(
  t: TestContext,
  vae: Vae,
  z: Tensor,
  group: (ranks: number) => ProgramGroup,
  ranks: readonly number[],
  check: (stats: ShardStats) => void,
): Promise<void> {
  const local = vae.tiledDecode;
  try {
    setTiling(vae, 'off');
    const whole = await vae.runner.decode(z);
    for (const n of ranks) {
      const decode = shardedDecodeFor(vae, group(n));
      vae.tiledDecode = decode;
      const out = await vae.decode(z);
      const s = decode.lastStats!;
      const { maxAbs } = difference(out, whole);
      t.diagnostic(`${n} rank(s): max abs ${maxAbs.toExponential(2)}`);
      assert.ok(maxAbs <= 1e-4, `${n} ranks: max abs ${maxAbs}`);
      s.ranks.forEach((rank, i) => assert.deepEqual(rank.counters, s.predicted[i], `rank ${i} of ${n}: collectives`));
      check(s);
    }
  } finally {
    vae.tiledDecode = local;
  }
}
