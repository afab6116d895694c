// Long queue runs, short: the suite's versions of bench/soak.ts's worker and churn cases, against
// a redis-server this file owns. A worker and a coordinator serving decode after decode keep the
// same handles, listeners and Redis keys, and their heap and buffers after a full GC do not grow;
// under churn (two `distvae worker` processes, one SIGKILLed and restarted before each decode,
// once mid-run) every image equals the local decode bitwise, no decode key stays in Redis and no
// worker process outlives the test.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { processesWithEnv } from '../../cli/testing/cli-process.js';
import { localTiledDecode } from '../../decode/engine.js';
import { ProgressCounter } from '../../decode/types.js';
import type { Vae } from '../../decode/vae.js';
import { tiledDecodeFor } from '../../strategies/tile/tiled-decode.js';
import { assertSameBits } from '../testing/assertions.js';
import { floorGrowth, grownResources, retained, type Retained } from '../testing/retained.js';
import { startWorkerProcess, tinyWorkerArgs, type WorkerProcess } from '../testing/queue-workers.js';
import { decodeLeftovers, redisServerPath, startRedisServer, type RedisServer } from '../testing/redis-server.js';
import { installPlan, loadTinyVae, seededLatent } from '../testing/tiny-vae.js';
import { queueGroup } from './index.js';
import { startQueueWorker } from './queue-worker.js';

const server: RedisServer | null = redisServerPath() === null ? null : await startRedisServer();
if (!server)
  test(
    'long queue runs against redis-server',
    { skip: 'redis-server is not installed (apt-get install redis-server; .ci/run does)' },
    () => undefined,
  );
else
  describe('long queue runs against redis-server', () => {
    let dir: string;
    let vae: Vae;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'distvae-queue-soak-'));
      vae = await loadTinyVae();
      installPlan(vae, [32, 32], [8, 8]);
    });
    after(async () => {
      await vae?.dispose();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a worker serving 12 run jobs and their coordinator do not grow: handles, listeners, keys, heap and buffers', async (t) => {
      const worker = await startQueueWorker({
        connection: server.url,
        queue: 'soak',
        vae: { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() },
      });
      // One rank: each decode is one run job of 20 tiles.
      const group = queueGroup({ connection: server.url, queue: 'soak', ranks: 1, timeoutMs: 30000 });
      const decode = tiledDecodeFor(vae, group, { offThread: true })!;
      const signal = new AbortController().signal;
      const snapshots: (Retained & { keys: string[]; routes: number })[] = [];
      try {
        for (let job = 0; job < 12; job++) {
          const latents = seededLatent(40, 56, job + 1);
          const out = await decode(latents, { signal });
          if (job < 2) assertSameBits(out, await localTiledDecode(vae, vae.runner)(latents), `job ${job}`);
          snapshots.push({
            ...retained(signal),
            keys: await decodeLeftovers(server.client),
            routes: (group as unknown as { listeners: Map<string, unknown> }).listeners.size,
          });
        }
      } finally {
        await group.close();
        await worker.close();
      }
      assert.equal(worker.tilesDecoded, 12 * decode.lastStats!.tiles);
      const [third, last] = [snapshots[2]!, snapshots[11]!];
      assert.deepEqual(grownResources(third, last), [], 'handles or timers opened per job');
      // Beyond BullMQ's queue-level bookkeeping (its events stream is capped), nothing stays in Redis.
      assert.deepEqual(
        snapshots.map((s) => [s.keys, s.abortListeners, s.routes]),
        snapshots.map(() => [[], 0, 0]),
        "a decode's keys, abort listener or job-event route outlived it",
      );
      // Each job moves 20 latent slices in (1 KiB each) and 20 tiles out (12 KiB each): keeping
      // them would raise the buffers' floor by 250 KiB a job (the reply parser's pool, up to
      // 1.3 MiB here, comes and goes: the floor of 4 snapshots leaves it out). The heap warms up over the first jobs (compiled
      // code; a heap snapshot after 40 and 240 jobs differs only in code) by ~50 KiB a job here.
      const grown = { heap: floorGrowth(snapshots, 'heapBytes', 2), buffers: floorGrowth(snapshots, 'arrayBufferBytes', 2) };
      t.diagnostic(
        `after GC, heap ${snapshots.map((s) => (s.heapBytes / 1024).toFixed(0)).join(' ')} KiB; buffers ${snapshots.map((s) => (s.arrayBufferBytes / 1024).toFixed(0)).join(' ')} KiB`,
      );
      assert.ok(grown.buffers < 512 * 1024, `the buffers' floor rose by ${(grown.buffers / 1024).toFixed(0)} KiB`);
      assert.ok(grown.heap < 2 * 1024 * 1024, `the heap's floor rose by ${(grown.heap / 1024).toFixed(0)} KiB`);
    });

    test('churn: a worker SIGKILLed and restarted before a decode and during one: every image identical, no key, no process left', async () => {
      const args = tinyWorkerArgs(dir);
      const env = { DISTVAE_TEST_CHURN: `${process.pid}-${Date.now()}` };
      const marker = `DISTVAE_TEST_CHURN=${env.DISTVAE_TEST_CHURN}`;
      const workers: WorkerProcess[] = await Promise.all([0, 1].map(() => startWorkerProcess(server.url, 'churn', args, env)));
      const group = queueGroup({ connection: server.url, queue: 'churn', ranks: 2, timeoutMs: 30000, cleanupTimeoutMs: 10000 });
      const decode = tiledDecodeFor(vae, group)!;
      const replace = async (i: number) => {
        const victim = workers[i]!;
        victim.child.kill('SIGKILL');
        if (victim.child.exitCode === null && victim.child.signalCode === null) await once(victim.child, 'exit');
        workers[i] = await startWorkerProcess(server.url, 'churn', args, env);
      };
      try {
        for (const [step, kill] of (['none', 'between', 'mid-run'] as const).entries()) {
          if (kill === 'between') await replace(step % 2);
          const replacing: Promise<void>[] = [];
          const progress = new ProgressCounter(Infinity, (e) => {
            if (kill === 'mid-run' && e.tilesDone === 1) replacing.push(replace(step % 2));
          });
          const latents = seededLatent(40, 56, 100 + step);
          assertSameBits(await decode(latents, { progress }), await localTiledDecode(vae, vae.runner)(latents), `decode ${step} (${kill})`);
          await Promise.all(replacing);
          assert.deepEqual(await decodeLeftovers(server.client), [], `keys left by decode ${step} (${kill})`);
        }
      } finally {
        await group.close();
        await Promise.all(workers.map((w) => w.stop()));
      }
      // Every worker started here, killed or stopped, is gone (a killed one takes the kernel a moment).
      let left = processesWithEnv(marker);
      for (let waited = 0; left.length > 0 && waited < 2000; waited += 100) {
        await new Promise((r) => setTimeout(r, 100));
        left = processesWithEnv(marker);
      }
      assert.deepEqual(left, [], 'worker processes left');
      assert.deepEqual(await decodeLeftovers(server.client), []);
    });
  });
