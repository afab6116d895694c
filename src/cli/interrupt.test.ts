// SIGINT and SIGTERM on running decodes, as a person or a process manager sends them, for each
// transport: thread ranks (the signal lands inside a decoder call), process ranks (mid-decode,
// and while the coordinator or its ranks are still loading the VAE), a video decode whose ffmpeg
// is running, a queue coordinator and a queue worker. Each must exit 130 / 143 (or end by that
// signal) within a few seconds, print no stack trace and no EPIPE, leave no process (found by an
// environment marker every descendant inherits, wherever it was re-parented) and no output file
// — and a queue decode must leave nothing in Redis. A worker told to stop drains: it finishes its
// tile and exits 0, and another worker finishes the decode. A worker told to stop while its Redis
// is gone must still exit.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, test, type TestContext } from 'node:test';
import { configFile, HUNYUAN_VIDEO_SMALL } from '../families/testing/config-files.js';
import { writeNpy } from '../io/npy.js';
import { stallingFfmpeg } from '../io/testing/stalling-ffmpeg.js';
import { startWorkerProcess, tinyWorkerArgs } from '../ranks/testing/queue-workers.js';
import { redisServerPath, startRedisServer, type RedisServer } from '../ranks/testing/redis-server.js';
import { seededLatent } from '../ranks/testing/tiny-vae.js';
import { seededTensor } from '../tensor.js';
import { runCliProcess, type CliProcessOptions, type CliProcessResult } from './testing/cli-process.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-interrupt-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Heavy enough that one decoder call lasts seconds on one thread (the signal lands inside it), and its load takes a while. */
const HEAVY = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [64, 128, 128],
  layers_per_block: 2,
  norm_num_groups: 32,
  latent_channels: 4,
};
const heavy = join(dir, 'heavy.json');
writeFileSync(heavy, JSON.stringify(HEAVY));
const latents = join(dir, 'z.npy');
writeNpy(latents, seededLatent(128, 128));
/** For process ranks: a decode of ~17 s on two ranks here, so a signal 4 s into the tiles cannot come after the file is written (128² took 4.3 s, and CI once wrote it first). */
const largeLatents = join(dir, 'z-large.npy');
writeNpy(largeLatents, seededLatent(256, 256));

/** A bound on the exit after the signal that only a hang exceeds (the target is 2 s). */
const HANG_MS = 10_000;
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
type Signal = (typeof SIGNALS)[number];

function assertInterrupted(t: TestContext, r: CliProcessResult, signal: Signal, out: string): void {
  const code = signal === 'SIGINT' ? 130 : 143;
  t.diagnostic(`exit ${r.code ?? r.signal} ${r.afterSignalMs} ms after ${signal}; ranks before it: ${r.ranks.length}`);
  assert.ok(r.afterSignalMs !== null, `the decode ended before the signal: ${r.code} ${r.stderr}`);
  assert.ok(r.code === code || r.signal === signal, `exit ${r.code} / ${r.signal}, expected ${code}: ${r.stderr}`);
  assert.ok(r.afterSignalMs! < HANG_MS, `exited ${r.afterSignalMs} ms after ${signal}`);
  assert.doesNotMatch(r.stderr, /^\s+at .+[(:]\d+/m, `stack trace: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /EPIPE|Unhandled 'error'|internal error/, r.stderr);
  assert.equal(existsSync(out), false, 'no output after an interrupt');
  assert.deepEqual(r.leftBehind, [], `processes outlived the CLI by 2 s (ranks seen before the signal: ${r.ranks})`);
}

const busy = (ms: number) => (seen: { elapsedMs: number }) => seen.elapsedMs > ms;

/** Fires once rank processes exist and `delayMs` has passed since they first appeared. */
function ranksFor(delayMs: number, count = 2): NonNullable<CliProcessOptions['when']> {
  let seenAt: number | undefined;
  return (s) => {
    if (seenAt === undefined && s.ranks().length >= count) seenAt = s.elapsedMs;
    return seenAt !== undefined && s.elapsedMs >= seenAt + delayMs;
  };
}

const processRanks = (out: string) => [
  'decode',
  '--synthetic',
  '--config',
  heavy,
  '--latents',
  largeLatents,
  '--out',
  out,
  '--window',
  '256x256',
  '--ranks',
  '2',
  '--isolation',
  'process',
  '--threads',
  '1',
];

for (const signal of SIGNALS) {
  test(`${signal} inside a long decoder call on a thread rank: exit at once, no output`, async (t) => {
    const out = join(dir, `thread-${signal}.png`);
    const r = await runCliProcess(
      ['decode', '--synthetic', '--config', heavy, '--latents', latents, '--out', out, '--full', '--threads', '1'],
      { signal, when: busy(5000) },
    );
    assertInterrupted(t, r, signal, out);
  });

  test(`${signal} to a decode on process ranks, mid-decode: ranks gone, no EPIPE`, async (t) => {
    const out = join(dir, `process-${signal}.png`);
    // Both ranks started and several seconds into their load and tiles.
    const settled = ranksFor(4000);
    const r = await runCliProcess(processRanks(out), { signal, when: settled });
    assert.equal(r.ranks.length, 2, `rank processes before the signal: ${r.ranks}`);
    assertInterrupted(t, r, signal, out);
  });
}

// The ranks start while the coordinator loads the VAE (synchronously, so a signal is seen only
// when the load returns); a moment later they load their own copies.
const moments = [
  { name: 'as the ranks are spawned, the coordinator loading the VAE', delayMs: 0 },
  { name: 'while the ranks start and load the VAE', delayMs: 1200 },
];
for (const [i, moment] of moments.entries()) {
  for (const signal of SIGNALS) {
    test(`${signal} ${moment.name}: no rank left behind`, async (t) => {
      const out = join(dir, `loading-${i}-${signal}.png`);
      const r = await runCliProcess(processRanks(out), { signal, when: ranksFor(moment.delayMs) });
      assert.ok(r.ranks.length > 0, 'rank processes existed when the signal came');
      assertInterrupted(t, r, signal, out);
    });
  }
}

// A video is encoded after the decode: the signal lands while ffmpeg runs (one that stalls, so it
// cannot finish first), which must be killed with its partial file removed.
const HUNYUAN = configFile(dir, 'hunyuan.json', HUNYUAN_VIDEO_SMALL);
const videoLatents = join(dir, 'z5.npy');
writeNpy(videoLatents, seededTensor([1, 4, 3, 2, 3], 5));
for (const signal of SIGNALS) {
  test(`${signal} while ffmpeg writes a video: ffmpeg killed, no partial file`, async (t) => {
    const ffmpeg = stallingFfmpeg(join(dir, `ffmpeg-${signal}`));
    const folder = join(dir, `video-${signal}`);
    mkdirSync(folder);
    const out = join(folder, 'clip.mp4');
    const saved = process.env['PATH'];
    process.env['PATH'] = `${ffmpeg.bin}${delimiter}${saved}`;
    try {
      const r = await runCliProcess(
        ['decode', '--synthetic', '--config', HUNYUAN, '--latents', videoLatents, '--out', out, '--threads', '1'],
        { signal, when: () => ffmpeg.pid() !== null },
      );
      assertInterrupted(t, r, signal, out);
      assert.deepEqual(readdirSync(folder), [], 'no partial video left');
    } finally {
      process.env['PATH'] = saved;
    }
  });
}

const server = redisServerPath();
if (!server)
  test('queue interrupts', { skip: 'redis-server is not installed (apt-get install redis-server; .ci/run does)' }, () => undefined);
else {
  const QUEUE_KL = { block_out_channels: [32, 64], norm_num_groups: 8, layers_per_block: 1, sample_size: 32 };
  const config = join(dir, 'queue-kl.json');
  const queueDecode = (redis: RedisServer, queue: string, out: string) => [
    'decode',
    '--synthetic',
    '--family',
    'autoencoder-kl',
    '--config',
    config,
    '--latents',
    latents,
    '--out',
    out,
    '--redis',
    redis.url,
    '--queue',
    queue,
    '--ranks',
    '2',
  ];

  /** Keys of decodes (not BullMQ's queue-level ones), after waiting for them to go. */
  async function decodeKeysLeft(redis: RedisServer): Promise<string[]> {
    let keys: string[] = [];
    for (let i = 0; i < 50; i++) {
      keys = (await redis.client.keys('*')).filter(
        (k) => !/:(meta|id|events|marker|stalled-check|workers?)$/.test(k) && !k.includes(':worker'),
      );
      if (keys.length === 0) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    return keys;
  }

  /** Resolves `when` for runCliProcess once the decode's tiles are coming back through Redis. */
  function tilesInRedis(redis: RedisServer): { when: () => boolean; stop: () => void } {
    let live = false;
    const watch = setInterval(() => {
      void redis.client.keys('*:out:*').then((k) => {
        if (k.length > 0) live = true;
      });
    }, 50);
    return { when: () => live, stop: () => clearInterval(watch) };
  }

  for (const signal of SIGNALS) {
    test(`${signal} to a queue coordinator: nothing of the decode left in Redis, the worker keeps serving`, async (t) => {
      const redis = await startRedisServer();
      const queue = `coordinator-${signal}`;
      const worker = await startWorkerProcess(redis.url, queue, tinyWorkerArgs(dir, QUEUE_KL, 'queue-kl'));
      try {
        const out = join(dir, `queue-${signal}.png`);
        const tiles = tilesInRedis(redis);
        const r = await runCliProcess(queueDecode(redis, queue, out), { signal, when: tiles.when }).finally(tiles.stop);
        assertInterrupted(t, r, signal, out);
        // Jobs a worker held end at its next tile.
        const keys = await decodeKeysLeft(redis);
        assert.deepEqual(keys, [], `keys left in Redis: ${keys.join(', ')}; coordinator stderr: ${r.stderr}`);
        assert.equal(worker.child.exitCode, null, 'the worker still serves');
      } finally {
        await worker.stop();
        await redis.stop();
      }
    });

    test(`${signal} to a queue worker mid-decode: it drains and exits 0, another worker finishes the decode`, async () => {
      const redis = await startRedisServer();
      const queue = `worker-${signal}`;
      const args = tinyWorkerArgs(dir, QUEUE_KL, 'queue-kl');
      const [a, b] = await Promise.all([startWorkerProcess(redis.url, queue, args), startWorkerProcess(redis.url, queue, args)]);
      try {
        const out = join(dir, `drained-${signal}.png`);
        const tiles = tilesInRedis(redis);
        let signalledAt: number | null = null;
        const watch = setInterval(() => {
          if (signalledAt === null && tiles.when()) {
            signalledAt = Date.now();
            a.child.kill(signal);
          }
        }, 50);
        const r = await runCliProcess(queueDecode(redis, queue, out)).finally(() => {
          clearInterval(watch);
          tiles.stop();
        });
        assert.ok(signalledAt !== null, 'the worker was signalled mid-decode');
        assert.equal(r.code, 0, r.stderr);
        assert.ok(existsSync(out), 'the decode finished');
        const stopped = await a.stop();
        assert.equal(stopped.code, 0, `the drained worker exits 0: ${a.stderr()}`);
        assert.doesNotMatch(a.stderr(), /^\s+at .+[(:]\d+/m);
        assert.deepEqual(await decodeKeysLeft(redis), []);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
        await redis.stop();
      }
    });
  }

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
