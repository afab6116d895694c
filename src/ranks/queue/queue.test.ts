// The queue transport against a redis-server this file owns (loopback, free port, no
// persistence): the tile-decode conformance suite with two `distvae worker` processes, then
// faults — a worker SIGKILLed mid-run, no workers, unreachable Redis, a worker with another VAE,
// corrupted tiles, a worker drained with SIGTERM — and after each decode, no key of it left.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { localTiledDecode } from '../../decode/engine.js';
import { ProgressCounter } from '../../decode/types.js';
import { loadVae, type Vae } from '../../decode/vae.js';
import { runCli } from '../../cli/main.js';
import { DistVaeError } from '../../errors.js';
import { writeNpy } from '../../io/npy.js';
import type { Tensor } from '../../tensor.js';
import { sharedGroups } from '../testing/group-conformance.js';
import type { VaeRef } from '../program.js';
import { queueGroup } from './index.js';
import { tileConformance } from '../../strategies/tile/testing/tile-conformance.js';
import { tiledDecodeFor } from '../../strategies/tile/tiled-decode.js';
import { assertSameBits, rejectsWith } from '../testing/assertions.js';
import { decodeLeftovers, freePort, redisServerPath, startRedisServer, type RedisServer } from '../testing/redis-server.js';
import { startCorruptingWorker, startWorkerProcess, tinyWorkerArgs, type WorkerProcess } from '../testing/queue-workers.js';
import { TINY_KL, installPlan, loadTinyVae, seededLatent } from '../testing/tiny-vae.js';
import { redisOptionsOf } from './connection.js';
import { startQueueWorker } from './queue-worker.js';

const refOf = (vae: Vae): VaeRef => ({ source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() });

test('Redis URLs become ioredis options: TLS for rediss://, user and password for ACLs, database', () => {
  assert.deepEqual(redisOptionsOf('redis://127.0.0.1:6380'), { host: '127.0.0.1', port: 6380 });
  assert.deepEqual(redisOptionsOf('rediss://coordinator:p%40ss@redis.internal/2'), {
    host: 'redis.internal',
    port: 6379,
    username: 'coordinator',
    password: 'p@ss',
    db: 2,
    tls: { servername: 'redis.internal' },
  });
  assert.deepEqual(redisOptionsOf('redis://:secret@[::1]:7000'), { host: '::1', port: 7000, password: 'secret' });
  assert.throws(
    () => redisOptionsOf('http://host:6379'),
    (e: DistVaeError) => e.code === 'INVALID_ARGUMENT' && /scheme is http/.test(e.message),
  );
  assert.throws(
    () => redisOptionsOf('redis://:hunter2@host/x'),
    (e: DistVaeError) => /"\/x" is not a database number/.test(e.message) && !e.message.includes('hunter2'),
  );
  assert.throws(
    () => queueGroup({ connection: 'redis://h', ranks: 0, queue: 'a:b', timeoutMs: -1 }),
    (e: DistVaeError) => e.reasons.map((r) => r.field).join() === 'ranks,queue,timeoutMs',
  );
});

test('unreachable Redis: TRANSPORT_FAILED naming the server, before any work', async () => {
  const port = await freePort();
  const group = queueGroup({ connection: `redis://127.0.0.1:${port}`, ranks: 2, connectTimeoutMs: 1000 });
  const started = performance.now();
  await rejectsWith(
    group.connect(),
    'TRANSPORT_FAILED',
    new RegExp(`cannot reach Redis at redis://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`),
  );
  assert.ok(performance.now() - started < 1500, 'no retries');
  await group.close();
  const vae = await loadTinyVae();
  installPlan(vae, [32, 32], [8, 8]);
  const other = queueGroup({ connection: `redis://127.0.0.1:${port}`, ranks: 2, connectTimeoutMs: 1000 });
  await rejectsWith(tiledDecodeFor(vae, other)!(seededLatent(40, 56)), 'TRANSPORT_FAILED', /cannot reach Redis/);
  await other.close();
  await vae.dispose();
});

const server: RedisServer | null = redisServerPath() === null ? null : await startRedisServer();
if (!server)
  test(
    'queue transport against redis-server',
    { skip: 'redis-server is not installed (apt-get install redis-server; .ci/run does)' },
    () => undefined,
  );
else
  describe('queue transport against redis-server', () => {
    let dir: string;
    let workerArgs: string[];
    let workers: WorkerProcess[] = [];
    let vae: Vae;
    let latents: Tensor;
    let expected: Tensor;
    const shared = sharedGroups((ranks) =>
      queueGroup({ connection: server.url, queue: 'conformance', ranks, timeoutMs: 30000, cleanupTimeoutMs: 10000 }),
    );
    const leftovers = () => decodeLeftovers(server.client);

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'distvae-queue-'));
      workerArgs = tinyWorkerArgs(dir);
      workers = await Promise.all([0, 1].map(() => startWorkerProcess(server.url, 'conformance', workerArgs)));
      vae = await loadTinyVae();
      installPlan(vae, [32, 32], [8, 8]);
      latents = seededLatent(40, 56, 3);
      expected = await localTiledDecode(vae, vae.runner)(latents);
    });
    after(async () => {
      await shared.closeAll();
      await Promise.all(workers.map((w) => w.stop()));
      await vae?.dispose();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('two worker processes serve the VAE the coordinator holds', () => {
      for (const w of workers)
        assert.match(
          w.banner,
          new RegExp(`serving queue "conformance" at redis://127\\.0\\.0\\.1:\\d+ with VAE ${vae.contentHash().slice(0, 12)}`),
        );
    });

    tileConformance('queue (two worker processes)', (ranks) => shared.get(ranks));

    test('the conformance decodes left no key in Redis', async () => {
      assert.deepEqual(await leftovers(), []);
    });

    test('a tile that takes longer than the timeout does not time out while its worker holds the run', async () => {
      // A heavier decoder (128/256 channels, two layers, no attention: its tiles stay small in
      // memory; ~0.65 s a tile on an idle core) on its own workers, so every tile outlasts the
      // 200 ms timeout on any machine.
      const heavyConfig = {
        block_out_channels: [128, 256],
        norm_num_groups: 8,
        layers_per_block: 2,
        sample_size: 32,
        mid_block_add_attention: false,
      };
      const heavyArgs = tinyWorkerArgs(dir, heavyConfig, 'heavy-kl');
      const heavyWorkers = await Promise.all([0, 1].map(() => startWorkerProcess(server.url, 'slow', heavyArgs)));
      const heavy = await loadVae({ family: 'autoencoder-kl', config: heavyConfig, weights: 'synthetic', seed: 0 }, { threads: 1 });
      const group = queueGroup({ connection: server.url, queue: 'slow', ranks: 2, timeoutMs: 200 });
      try {
        installPlan(heavy, [128, 128], [32, 32]);
        const big = seededLatent(112, 112, 4);
        const reference = await localTiledDecode(heavy, heavy.runner)(big);
        const decode = tiledDecodeFor(heavy, group)!;
        assertSameBits(await decode(big), reference, 'slow tiles');
        assert.ok(
          Math.min(...decode.lastStats!.ranks.map((r) => r.decoderSeconds / r.tiles.length)) > 0.2,
          'each tile took longer than the timeout',
        );
      } finally {
        await group.close();
        await Promise.all(heavyWorkers.map((w) => w.stop()));
        await heavy.dispose();
      }
      assert.deepEqual(await leftovers(), []);
    });

    test('a worker SIGKILLed mid-run: the run stalls, another worker takes it, the image is identical', async () => {
      const victim = await startWorkerProcess(server.url, 'kill', workerArgs);
      const group = queueGroup({ connection: server.url, queue: 'kill', ranks: 2, timeoutMs: 30000 });
      let rescuer: Awaited<ReturnType<typeof startQueueWorker>> | null = null;
      const rescuerVae = await loadTinyVae();
      try {
        const decode = tiledDecodeFor(vae, group)!;
        // The victim alone serves the queue: it takes a run; killed after its first tile, a rescuer starts.
        const progress = new ProgressCounter(Infinity, (e) => {
          if (e.tilesDone !== 1) return;
          victim.child.kill('SIGKILL');
          void startQueueWorker({
            connection: server.url,
            queue: 'kill',
            vae: refOf(rescuerVae),
            lockDurationMs: 1000,
            stalledIntervalMs: 300,
          }).then((w) => (rescuer = w));
        });
        assertSameBits(await decode(latents, { progress }), expected, 'after SIGKILL');
        const stats = decode.lastStats!;
        assert.equal(stats.failures.length, 1);
        assert.match(stats.failures[0]!.cause, /stopped renewing the job lock/);
        assert.ok(stats.redealt.length > 0, 'the killed worker had unfinished tiles');
        assert.deepEqual(
          stats.ranks.flatMap((r) => r.tiles).sort((a, b) => a - b),
          Array.from({ length: stats.tiles }, (_, i) => i),
        );
        assert.equal(victim.child.signalCode, 'SIGKILL');
        assert.deepEqual(await leftovers(), []);
      } finally {
        await (rescuer as { close: () => Promise<void> } | null)?.close();
        await group.close();
        await rescuerVae.dispose();
      }
    });

    test('no workers: TIMEOUT after the configured wait, and nothing left in Redis', async () => {
      const group = queueGroup({ connection: server.url, queue: 'nobody', ranks: 2, timeoutMs: 800 });
      try {
        await rejectsWith(
          tiledDecodeFor(vae, group)!(latents),
          'TIMEOUT',
          /no worker on queue "nobody" .* took or finished a tile for 800 ms \(0 of \d+ tile\(s\) assembled\): start workers/,
        );
        assert.deepEqual(await leftovers(), []);
      } finally {
        await group.close();
      }
    });

    test('a tile that comes out non-finite fails the decode as NON_FINITE_OUTPUT naming it, not as a wrong result; nothing left', async () => {
      const worker = await startQueueWorker({ connection: server.url, queue: 'overflow', vae: refOf(vae) });
      const group = queueGroup({ connection: server.url, queue: 'overflow', ranks: 2, timeoutMs: 30000, cleanupTimeoutMs: 5000 });
      try {
        // Latents near float32's limit (finite, so accepted) drive the decoder to NaN.
        const huge = { dims: latents.dims, data: new Float32Array(latents.data.length).fill(3e38) };
        await rejectsWith(tiledDecodeFor(vae, group)!(huge), 'NON_FINITE_OUTPUT', /^tile \d+ \(rank \d\) came out non-finite/);
        assert.deepEqual(await leftovers(), []);
      } finally {
        await group.close();
        await worker.close();
      }
    });

    test('a worker holding another VAE refuses the run: RANK_FAILED naming both hashes, nothing left', async () => {
      const otherVae = await loadVae({ family: 'autoencoder-kl', config: TINY_KL, weights: 'synthetic', seed: 1 }, { threads: 1 });
      const worker = await startQueueWorker({ connection: server.url, queue: 'wrong', vae: refOf(otherVae) });
      const group = queueGroup({ connection: server.url, queue: 'wrong', ranks: 2, timeoutMs: 30000, cleanupTimeoutMs: 5000 });
      try {
        const hashes = `holds the VAE with content hash ${otherVae.contentHash().slice(0, 12)}… but the decode needs ${vae.contentHash().slice(0, 12)}…`;
        await rejectsWith(
          tiledDecodeFor(vae, group)!(latents),
          'RANK_FAILED',
          new RegExp(`rank \\d failed on a worker: worker .* ${hashes}`),
        );
        assert.deepEqual(await leftovers(), []);
      } finally {
        await group.close();
        await worker.close();
        await otherVae.dispose();
      }
    });

    for (const [mode, pattern] of [
      ['bytes', /returned a wrong result for tile 0, rejected: SHA-256 of the \d+ bytes is not the .* the worker computed/],
      ['shape', /returned a wrong result for tile 0, rejected: shape \[1, 3, 32, 31\] ends in 32x31, expected 32x32/],
    ] as const) {
      test(`a corrupted tile payload (${mode}) is rejected, never blended; nothing left`, async () => {
        const worker = await startCorruptingWorker(server.url, `corrupt-${mode}`, mode);
        const group = queueGroup({ connection: server.url, queue: `corrupt-${mode}`, ranks: 2, timeoutMs: 30000, cleanupTimeoutMs: 5000 });
        try {
          await rejectsWith(tiledDecodeFor(vae, group)!(latents), 'RANK_FAILED', pattern);
          assert.deepEqual(await leftovers(), []);
        } finally {
          await group.close();
          await worker.close();
        }
      });
    }

    test('distvae decode --redis: the local bits, ranks defaulting to the workers listening; refusals before work', async () => {
      const run = async (...argv: string[]) => {
        let stdout = '';
        let stderr = '';
        const code = await runCli(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), stderrIsTTY: false });
        return { code, stdout, stderr };
      };
      writeNpy(join(dir, 'z.npy'), latents);
      const plan = [
        '--family',
        'autoencoder-kl',
        '--config',
        join(dir, 'tiny-kl.json'),
        '--latents',
        join(dir, 'z.npy'),
        '--window',
        '32x32',
        '--overlap',
        '8x8',
        '--json',
      ];
      const common = ['decode', '--synthetic', ...plan];
      // --threads is a local decode's (with --redis each worker has its own, and it is refused).
      const local = await run(...common, '--out', join(dir, 'local.npy'), '--threads', '1');
      assert.equal(local.code, 0, local.stderr);
      const queued = await run(...common, '--out', join(dir, 'queue.npy'), '--redis', server.url, '--queue', 'conformance');
      assert.equal(queued.code, 0, queued.stderr);
      assert.deepEqual(readFileSync(join(dir, 'queue.npy')), readFileSync(join(dir, 'local.npy')));
      const summary = JSON.parse(queued.stdout) as { tiles: number; ranks: { rank: number; tiles: number[] }[] };
      assert.deepEqual(
        summary.ranks.map((r) => r.rank),
        [0, 1],
        'two workers listen: two runs',
      );
      assert.deepEqual(
        summary.ranks.flatMap((r) => r.tiles).sort((a, b) => a - b),
        Array.from({ length: summary.tiles }, (_, i) => i),
      );
      const port = await freePort();
      // Redis is reached before the VAE is loaded (a VAE path that names nothing is bad input, refused first).
      const unreachable = await run(...common, '--out', join(dir, 'x.npy'), '--redis', `redis://127.0.0.1:${port}`);
      assert.equal(unreachable.code, 3, 'a transport failure is a runtime failure');
      assert.match(unreachable.stderr, new RegExp(`TRANSPORT_FAILED: cannot reach Redis at redis://127\\.0\\.0\\.1:${port}`));
      const refused = await run(...common, '--out', join(dir, 'x.npy'), '--redis', server.url, '--isolation', 'process', '--ranks', '1');
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /--ranks 1: a queue decode deals its tiles into at least 2 runs; --isolation applies to local ranks/);
      assert.deepEqual(await leftovers(), []);
    });

    test('SIGTERM drains a worker: the tile in hand is finished, its run goes to the other worker, the image is identical', async () => {
      const group = shared.get(2);
      const decode = tiledDecodeFor(vae, group)!;
      const [drained, other] = workers as [WorkerProcess, WorkerProcess];
      const stopping: Promise<{ code: number | null; stdout: string }>[] = [];
      const progress = new ProgressCounter(Infinity, (e) => {
        if (e.tilesDone === 1) stopping.push(drained.stop());
      });
      assertSameBits(await decode(latents, { progress }), expected, 'after draining one worker');
      const stopped = await stopping[0]!;
      assert.equal(stopped.code, 0, drained.stderr());
      assert.match(stopped.stdout, /stopped after \d+ tile\(s\)/);
      assert.match(drained.stderr(), /draining: finishing the tile in hand, taking no new job/);
      assert.equal(other.child.exitCode, null);
      assert.deepEqual(await leftovers(), []);
    });
  });
