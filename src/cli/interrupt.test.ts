// SIGINT and SIGTERM on running decodes, as a person or a process manager sends them: a decode on
// the CLI's decoder thread (the signal lands inside a decoder call), on process ranks, and through
// the queue. Each must exit 130 / 143 (or end by that signal) within a couple of seconds, print
// no stack trace and no EPIPE, leave no rank process and no output file — and a queue decode must
// leave nothing in Redis. A worker told to stop while its Redis is gone must still exit.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { writeNpy } from '../io/npy.js';
import { startWorkerProcess, tinyWorkerArgs } from '../ranks/testing/queue-workers.js';
import { redisServerPath, startRedisServer } from '../ranks/testing/redis-server.js';
import { seededLatent } from '../ranks/testing/tiny-vae.js';
import { isAlive, runCliProcess, type CliProcessResult } from './testing/cli-process.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-interrupt-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Heavy enough that one decoder call lasts seconds on one thread (the signal lands inside it). */
const HEAVY = { _class_name: 'AutoencoderKL', block_out_channels: [64, 128, 128], layers_per_block: 2, norm_num_groups: 32, latent_channels: 4 };
const heavy = join(dir, 'heavy.json');
writeFileSync(heavy, JSON.stringify(HEAVY));
const latents = join(dir, 'z.npy');
writeNpy(latents, seededLatent(128, 128));

/** A bound on the exit after the signal that only a hang exceeds (the target is 2 s). */
const HANG_MS = 10_000;

async function assertInterrupted(r: CliProcessResult, signal: 'SIGINT' | 'SIGTERM', out: string): Promise<void> {
  const code = signal === 'SIGINT' ? 130 : 143;
  assert.ok(r.afterSignalMs !== null, `the decode ended before the signal: ${r.code} ${r.stderr}`);
  assert.ok(r.code === code || r.signal === signal, `exit ${r.code} / ${r.signal}, expected ${code}: ${r.stderr}`);
  assert.ok(r.afterSignalMs! < HANG_MS, `exited ${r.afterSignalMs} ms after ${signal}`);
  assert.doesNotMatch(r.stderr, /^\s+at .+[(:]\d+/m, `stack trace: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /EPIPE|Unhandled 'error'|internal error/, r.stderr);
  assert.equal(existsSync(out), false, 'no output after an interrupt');
  // A rank killed with the CLI is gone once the kernel has torn it down: allow the signal's 2 s.
  for (const pid of r.ranks) {
    for (let waited = 0; isAlive(pid) && waited < 2000; waited += 50) await new Promise((done) => setTimeout(done, 50));
    assert.equal(isAlive(pid), false, `rank process ${pid} outlived the CLI by 2 s`);
  }
}

const busy = (ms: number) => (seen: { elapsedMs: number }) => seen.elapsedMs > ms;

test('SIGINT inside a long decoder call on the CLI decoder thread: exit 130 at once, no output', async () => {
  const out = join(dir, 'thread.png');
  const r = await runCliProcess(['decode', '--synthetic', '--config', heavy, '--latents', latents, '--out', out, '--full', '--threads', '1'], { signal: 'SIGINT', when: busy(5000) });
  await assertInterrupted(r, 'SIGINT', out);
});

test('SIGTERM to a decode on process ranks: exit 143, ranks gone, no EPIPE', async () => {
  const out = join(dir, 'process.png');
  let ranksSeenAt: number | undefined;
  const r = await runCliProcess(['decode', '--synthetic', '--config', heavy, '--latents', latents, '--out', out, '--window', '256x256', '--ranks', '2', '--isolation', 'process', '--threads', '1'], {
    signal: 'SIGTERM',
    // Both ranks started and a second into their tiles.
    when: (s) => s.elapsedMs > 3000 && s.ranks().length >= 2 && (ranksSeenAt ??= s.elapsedMs) + 1000 < s.elapsedMs,
  });
  assert.equal(r.ranks.length, 2, `rank processes before the signal: ${r.ranks}`);
  await assertInterrupted(r, 'SIGTERM', out);
});

const server = redisServerPath();
if (!server) test('queue interrupts', { skip: 'redis-server is not installed (apt-get install redis-server; .ci/run does)' }, () => undefined);
else {
  test('SIGINT to a queue coordinator: exit 130, nothing of the decode left in Redis, the worker keeps serving', async () => {
    const redis = await startRedisServer();
    const worker = await startWorkerProcess(redis.url, 'interrupt', tinyWorkerArgs(dir, { block_out_channels: [32, 64], norm_num_groups: 8, layers_per_block: 1, sample_size: 32 }, 'queue-kl'));
    try {
      const config = join(dir, 'queue-kl.json');
      const out = join(dir, 'queue.png');
      // The signal lands while the decode is in Redis: its keys exist and a tile or more came back.
      let liveSince: number | null = null;
      const watch = setInterval(() => {
        void redis.client.keys('*:out:*').then((k) => {
          if (k.length > 0) liveSince ??= Date.now();
        });
      }, 50);
      const r = await runCliProcess(['decode', '--synthetic', '--family', 'autoencoder-kl', '--config', config, '--latents', latents, '--out', out, '--redis', redis.url, '--queue', 'interrupt', '--ranks', '2'], {
        signal: 'SIGINT',
        when: () => liveSince !== null,
      }).finally(() => clearInterval(watch));
      await assertInterrupted(r, 'SIGINT', out);
      // Jobs a worker held end at its next tile; give it that long.
      let keys: string[] = [];
      for (let i = 0; i < 50; i++) {
        keys = (await redis.client.keys('*')).filter((k) => !/:(meta|id|events|marker|stalled-check|workers?)$/.test(k) && !k.includes(':worker'));
        if (keys.length === 0) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      assert.deepEqual(keys, [], `keys left in Redis: ${keys.join(', ')}; coordinator stderr: ${r.stderr}`);
      assert.equal(worker.child.exitCode, null, 'the worker still serves');
    } finally {
      await worker.stop();
      await redis.stop();
    }
  });

  test('SIGTERM to a worker whose Redis is gone: it exits within 10 s', async () => {
    const redis = await startRedisServer();
    const worker = await startWorkerProcess(redis.url, 'gone', tinyWorkerArgs(dir));
    await redis.stop();
    const started = Date.now();
    const stopped = await worker.stop();
    assert.ok(Date.now() - started < 10_000, `exited after ${Date.now() - started} ms`);
    assert.ok(stopped.code !== null || stopped.signal !== null);
    assert.doesNotMatch(worker.stderr(), /^\s+at .+[(:]\d+/m);
  });
}
