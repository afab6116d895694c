// Encoder tiles on the queue transport, against a redis-server this file owns: two queue
// workers started with an encoder (`VaeRef.part` 'encoder') serve the tiles of a tiled encode —
// raw latent tiles back, blended by the coordinator — bitwise the one-rank tiled encode of the
// same plan; `distvae encode --redis` with a `distvae worker --encoder` process gives the same
// bits through the CLI; a worker holding the decoder instead refuses the run naming both content
// hashes; no key of any encode is left in Redis.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { localTiledEncode } from '../../encode/engine.js';
import { loadEncoder, type Encoder } from '../../encode/encoder.js';
import { loadVae } from '../../decode/vae.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { tiledEncodeFor } from '../../strategies/tile/tiled-encode.js';
import { assertSameBits, rejectsWith } from '../testing/assertions.js';
import { decodeLeftovers, redisServerPath, startRedisServer, type RedisServer } from '../testing/redis-server.js';
import { runCli } from '../../cli/main.js';
import { readLatents } from '../../io/latents.js';
import { writeNpy } from '../../io/npy.js';
import { encodeFile } from '../../session/encode-file.js';
import { startWorkerProcess } from '../testing/queue-workers.js';
import { queueGroup } from './index.js';
import { startQueueWorker, type QueueWorker } from './queue-worker.js';

const CONFIG = { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };
const SOURCE = { config: CONFIG, weights: 'synthetic' as const, seed: 6 };

const server: RedisServer | null = redisServerPath() === null ? null : await startRedisServer();
if (!server)
  test(
    'encoder tiles on the queue',
    { skip: 'redis-server is not installed (apt-get install redis-server; .ci/run does)' },
    () => undefined,
  );
else
  describe('encoder tiles on the queue', () => {
    let encoder: Encoder;
    let image: Tensor;
    let expected: Tensor;
    let workers: QueueWorker[] = [];

    before(async () => {
      encoder = await loadEncoder(SOURCE, { threads: 1 });
      setTiling(encoder, tileShapePlan(encoder, 16, 16)!);
      setTiling(encoder, tileOverlapPlan(encoder, 4, 4)!);
      image = seededTensor([1, 3, 40, 24], 8);
      expected = await localTiledEncode(encoder, encoder.runner)(image, {});
      const ref = encoder.rankRef();
      workers = await Promise.all(
        [0, 1].map((i) => startQueueWorker({ connection: server.url, queue: 'encode', vae: ref, name: `encoder-worker-${i}` })),
      );
    });
    after(async () => {
      await Promise.all(workers.map((w) => w.close()));
      await encoder?.dispose();
      await server.stop();
    });

    test('two workers serving the encoder: bitwise the one-rank tiled encode, every tile once, nothing left', async () => {
      assert.ok(workers.every((w) => w.vaeHash === encoder.contentHash()));
      const group = queueGroup({ connection: server.url, queue: 'encode', ranks: 2, timeoutMs: 30000 });
      let tiles = 0;
      try {
        const encode = tiledEncodeFor(encoder, group, {
          onStats: (stats) => {
            tiles = stats.tiles;
            assert.equal(stats.assembly, 'raster');
            assert.deepEqual(
              stats.ranks.flatMap((r) => r.tiles).sort((a, b) => a - b),
              Array.from({ length: stats.tiles }, (_, i) => i),
            );
          },
        })!;
        assertSameBits(await encode(image, {}), expected, 'queue encode');
        assert.equal(tiles, 8);
        assert.equal(
          workers.reduce((n, w) => n + w.tilesDecoded, 0),
          tiles,
          'the workers encoded every tile',
        );
      } finally {
        await group.close();
      }
      assert.deepEqual(await decodeLeftovers(server.client), []);
    });

    test('distvae encode --redis with a `distvae worker --encoder` process: the same bits, nothing left', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'distvae-queue-encode-'));
      const config = join(dir, 'kl.json');
      writeFileSync(config, JSON.stringify(CONFIG));
      const source = ['--synthetic', '--config', config, '--seed', '6', '--threads', '1'];
      const worker = await startWorkerProcess(server.url, 'cli-encode', ['--encoder', ...source]);
      try {
        assert.match(worker.banner, new RegExp(`serving queue "cli-encode" .* with encoder ${encoder.contentHash().slice(0, 12)}`));
        const npy = join(dir, 'image.npy');
        writeNpy(npy, image);
        const out = join(dir, 'z.npy');
        let stdout = '';
        let stderr = '';
        const code = await runCli(
          [
            'encode',
            ...source,
            '--image',
            npy,
            '--out',
            out,
            '--window',
            '16x16',
            '--overlap',
            '4x4',
            '--redis',
            server.url,
            '--queue',
            'cli-encode',
            '--ranks',
            '2',
            '--json',
          ],
          { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), stderrIsTTY: false },
        );
        assert.equal(code, 0, stderr);
        assert.equal(JSON.parse(stdout).ranks.length, 2);
        assertSameBits(await readLatents(out), expected, 'distvae encode --redis');
        let refusal = '';
        const refused = await runCli(
          ['encode', ...source, '--image', npy, '--out', out, '--redis', server.url, '--queue', 'cli-encode', '--strategy', 'shard'],
          { stdout: () => undefined, stderr: (t) => (refusal += t), stderrIsTTY: false },
        );
        assert.equal(refused, 2);
        assert.match(refusal, /strategy shard needs a local rank group; queue workers cannot exchange halos/);
      } finally {
        await worker.stop();
        rmSync(dir, { recursive: true, force: true });
      }
      assert.deepEqual(await decodeLeftovers(server.client), []);
    });

    test('encodeFile --sample --redis: workers holding the moments encoder give the one-process tiled draw bitwise; a mean-only worker refuses the run naming both hashes', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'distvae-queue-sample-'));
      const vae = { family: 'autoencoder-kl', ...SOURCE };
      const moments = await loadEncoder(vae, { threads: 1, moments: true });
      const momentsRef = moments.rankRef();
      await moments.dispose();
      assert.notEqual(momentsRef.hash, encoder.contentHash(), 'the moments encoder is another content hash than the mean-only one');
      const served = await Promise.all(
        [0, 1].map((i) => startQueueWorker({ connection: server.url, queue: 'sample', vae: momentsRef, name: `moments-worker-${i}` })),
      );
      try {
        const npy = join(dir, 'image.npy');
        writeNpy(npy, image);
        const plan = { window: { height: 16, width: 16 }, overlap: { height: 4, width: 4 }, threads: 1, sample: true, seed: 7 };
        const one = join(dir, 'one.npy');
        await encodeFile({ vae, image: npy, out: one, ...plan });
        const queued = join(dir, 'queued.npy');
        const report = await encodeFile({ vae, image: npy, out: queued, ...plan, redis: server.url, queue: 'sample', ranks: 2 });
        assert.equal(report.tiles, 8);
        assert.equal(
          served.reduce((n, w) => n + w.tilesDecoded, 0),
          8,
          'the moments workers encoded every tile',
        );
        assertSameBits(await readLatents(queued), await readLatents(one), 'queue --sample draw');
        // `distvae worker --moments` is the encoder's option: refused without --encoder, before Redis is reached.
        let refusal = '';
        const code = await runCli(['worker', '--redis', 'redis://127.0.0.1:1', '--moments', '--synthetic', '--family', 'tae'], {
          stdout: () => undefined,
          stderr: (t) => (refusal += t),
          stderrIsTTY: false,
        });
        assert.equal(code, 2);
        assert.match(refusal, /--moments: only with --encoder/);
        // The mean-only workers of this suite hold the other hash: the run is refused, never blended at the wrong width.
        await assert.rejects(
          encodeFile({
            vae,
            image: npy,
            out: join(dir, 'refused.npy'),
            ...plan,
            redis: server.url,
            queue: 'encode',
            ranks: 2,
            queueTimeoutMs: 30000,
          }),
          (e: unknown) =>
            e instanceof Error &&
            new RegExp(`${encoder.contentHash().slice(0, 12)}.*${momentsRef.hash.slice(0, 12)}.*--encoder --moments`).test(e.message),
        );
      } finally {
        await Promise.all(served.map((w) => w.close()));
        rmSync(dir, { recursive: true, force: true });
      }
      assert.deepEqual(await decodeLeftovers(server.client), []);
    });

    test('a worker holding the decoder refuses encoder tiles: RANK_FAILED naming both hashes, nothing left', async () => {
      const vae = await loadVae({ family: 'autoencoder-kl', ...SOURCE }, { threads: 1 });
      const decoderHash = vae.contentHash();
      const worker = await startQueueWorker({
        connection: server.url,
        queue: 'decoder-only',
        vae: { source: vae.source, loadOptions: vae.loadOptions, hash: decoderHash },
      });
      const group = queueGroup({ connection: server.url, queue: 'decoder-only', ranks: 2, timeoutMs: 30000 });
      try {
        await rejectsWith(
          tiledEncodeFor(encoder, group)!(image, {}),
          'RANK_FAILED',
          new RegExp(`${decoderHash.slice(0, 12)}.*${encoder.contentHash().slice(0, 12)}`),
        );
      } finally {
        await group.close();
        await worker.close();
        await vae.dispose();
      }
      assert.deepEqual(await decodeLeftovers(server.client), []);
    });
  });
