// The worker side of the queue transport: a BullMQ worker that serves run jobs (the tiles one
// rank was dealt) from a queue until it is closed, decoding on worker threads that hold their own
// copy of the VAE (one per concurrent run). Per tile it reads the latent slice from its key
// (checking size and SHA-256), decodes it, writes the raw tile to its
// output key with a TTL — only while the decode still wants it — and reports the tile as job
// progress. A job naming another VAE is refused (it fails at once, never retried). Closing drains:
// the tile in hand is finished, the rest of its run goes back to the queue for another worker.

import { hostname } from 'node:os';
import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { reason, type Reason, refuse } from '../../errors.js';
import { elementCount } from '../../tensor.js';
import type { Tensor } from '../../tensor.js';
import { localGroup } from '../local/index.js';
import type { LocalGroup } from '../local/local-group.js';
import type { VaeRef } from '../program.js';
import { connectRedis, redisOptionsOf, type RedisConnection } from './connection.js';
import { DECODE_TILE } from './decode-program.js';
import { DEFAULT_QUEUE, decodeKeys, type DecodeKeys, float32Of, sha256, writeTile, type RunJobData, type RunJobResult, type RunProgress } from './protocol.js';

export interface QueueWorkerOptions {
  connection: RedisConnection;
  /** Queue to take run jobs from (default 'distvae'); the coordinator must name the same. */
  queue?: string;
  /** The VAE this worker decodes with: each decoder thread loads it and checks its hash; jobs naming another hash are refused. */
  vae: VaeRef;
  /** Run jobs decoded at once, each on its own decoder thread with its own copy of the VAE (default 1). */
  concurrency?: number;
  /** How long a taken job stays locked without renewal (ms, BullMQ's lockDuration; default 30000): a killed worker's job is taken again after about this long. */
  lockDurationMs?: number;
  /** How often this worker looks for jobs whose worker stopped renewing their lock (ms; default 30000). */
  stalledIntervalMs?: number;
  connectTimeoutMs?: number;
  /** Names this worker in results and messages (default host:pid). */
  name?: string;
  /** One line per notable event (a job refused or failed, draining). */
  log?: (line: string) => void;
}

export interface QueueWorker {
  readonly name: string;
  readonly vaeHash: string;
  /** Tiles this worker decoded so far. */
  readonly tilesDecoded: number;
  /** Stops taking jobs, finishes the tile in hand, hands the rest of its run back, and disconnects. */
  close(): Promise<void>;
}

/** How often a draining worker checks that Redis is still reachable (ms). */
const UNREACHABLE_CHECK_MS = 2000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export async function startQueueWorker(options: QueueWorkerOptions): Promise<QueueWorker> {
  const reasons: Reason[] = [];
  const { concurrency = 1, lockDurationMs = 30000, stalledIntervalMs = 30000 } = options;
  const queue = options.queue ?? DEFAULT_QUEUE;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > 1024) reasons.push(reason('CONCURRENCY_INVALID', 'concurrency', concurrency, 'an integer in [1, 1024]'));
  if (!Number.isSafeInteger(lockDurationMs) || lockDurationMs < 100) reasons.push(reason('LOCK_DURATION_INVALID', 'lockDurationMs', lockDurationMs, 'an integer ≥ 100 (ms)'));
  if (!Number.isSafeInteger(stalledIntervalMs) || stalledIntervalMs < 100) reasons.push(reason('STALLED_INTERVAL_INVALID', 'stalledIntervalMs', stalledIntervalMs, 'an integer ≥ 100 (ms)'));
  if (typeof queue !== 'string' || !/^[\w.-]{1,100}$/.test(queue)) reasons.push(reason('QUEUE_INVALID', 'queue', queue, 'a name of 1–100 letters, digits, "_", "." or "-"'));
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);

  const redisOptions = redisOptionsOf(options.connection);
  const redis: Redis = await connectRedis(redisOptions, options.connectTimeoutMs);
  const name = options.name ?? `${hostname()}:${process.pid}`;
  const { vae } = options;
  const vaeHash = vae.hash;
  const log = options.log ?? (() => undefined);
  // One decoder thread per concurrent run, each loading the VAE now rather than on the first tile.
  const decoders: LocalGroup[] = Array.from({ length: concurrency }, () =>
    localGroup({ ranks: 1, isolation: 'thread', ...(vae.loadOptions.threads !== undefined ? { threadsPerRank: vae.loadOptions.threads } : {}), ...(vae.loadOptions.deviceId !== undefined ? { devices: [vae.loadOptions.deviceId] } : {}) }),
  );
  const idleDecoders = [...decoders];
  try {
    await Promise.all(decoders.map((t) => t.run(DECODE_TILE, [{ vae, latent: null }])));
  } catch (e) {
    await Promise.all(decoders.map((t) => t.close()));
    redis.disconnect();
    throw e;
  }
  let draining = false;
  let tilesDecoded = 0;

  const processRun = async (job: Job<RunJobData, RunJobResult>, token?: string): Promise<RunJobResult> => {
    const started = performance.now();
    const data = job.data;
    if (data.vaeHash !== vaeHash) {
      throw new UnrecoverableError(
        `worker ${name} holds the VAE with content hash ${vaeHash.slice(0, 12)}… but the decode needs ${String(data.vaeHash).slice(0, 12)}…: start workers with the coordinator's VAE (same --vae/--config/--family/--seed)`,
      );
    }
    const keys = decodeKeys(queue, data.decodeId);
    const decoder = idleDecoders.pop()!;
    try {
      return await decodeRun(job, token, keys, decoder, started);
    } finally {
      idleDecoders.push(decoder);
    }
  };

  const decodeRun = async (job: Job<RunJobData, RunJobResult>, token: string | undefined, keys: DecodeKeys, decoder: LocalGroup, started: number): Promise<RunJobResult> => {
    const data = job.data;
    const result: RunJobResult = { worker: name, tiles: [], decoderSeconds: 0, busySeconds: 0, cancelled: false };
    for (const tile of data.tiles) {
      if (draining) {
        // The rest of the run goes back to the queue; tiles already delivered are skipped there.
        await job.moveToWait(token);
        throw new WaitingError();
      }
      const check = redis.multi().exists(keys.alive).sismember(keys.done, String(tile.index)).exists(keys.output(tile.index)).get(`${worker.toKey(job.id!)}:lock`);
      const [[, alive], [, done], [, written], [, lock]] = (await check.exec()) as [unknown, unknown][];
      if (token !== undefined && lock !== token) {
        // The lock expired (this worker looked dead): the run is back in the queue or with another
        // worker, which skips what is delivered; going on would only duplicate its work.
        throw new Error(`run ${job.id} was taken from worker ${name} (its lock expired); stopping it here`);
      }
      if (alive === 0) {
        result.cancelled = true;
        break;
      }
      if (done === 1 || written === 1) continue;
      const bytes = await redis.getBuffer(keys.input(tile.index));
      if (bytes === null) {
        result.cancelled = true;
        break;
      }
      if (bytes.byteLength !== elementCount(tile.dims) * 4 || sha256(bytes) !== tile.sha256) {
        throw new UnrecoverableError(`the latent slice of tile ${tile.index} in Redis has ${bytes.byteLength} bytes whose SHA-256 is not the coordinator's (expected ${elementCount(tile.dims) * 4} bytes, ${tile.sha256.slice(0, 12)}…)`);
      }
      const [decoded] = await decoder.run<{ tile: Tensor; decoderSeconds: number }>(DECODE_TILE, [{ vae, latent: { dims: tile.dims, data: float32Of(bytes) } }]);
      const out = decoded!.tile;
      result.decoderSeconds += decoded!.decoderSeconds;
      const outcome = await writeTile(redis, keys, tile.index, out, data.tileTtlMs, name);
      if (outcome === 'ended') {
        result.cancelled = true;
        break;
      }
      // 'assembled': another attempt of this run delivered the tile first; the rest of the run is still due.
      if (outcome === 'assembled') continue;
      tilesDecoded++;
      result.tiles.push(tile.index);
      await job.updateProgress({ tile: tile.index } satisfies RunProgress);
    }
    result.busySeconds = (performance.now() - started) / 1000;
    return result;
  };

  const worker = new Worker<RunJobData, RunJobResult>(queue, processRun, {
    connection: { ...redisOptions, maxRetriesPerRequest: null },
    concurrency,
    lockDuration: lockDurationMs,
    stalledInterval: stalledIntervalMs,
    maxStalledCount: 1,
    name,
  });
  worker.on('failed', (job, e) => {
    if (job && !(e instanceof WaitingError)) log(`run ${job.id} failed: ${e.message}`);
  });
  worker.on('error', (e) => log(`queue error: ${e.message}`));
  await worker.waitUntilReady();

  return {
    name,
    vaeHash,
    get tilesDecoded() {
      return tilesDecoded;
    },
    async close() {
      if (draining) return;
      draining = true;
      log('draining: finishing the tile in hand, taking no new job');
      // BullMQ's close waits for Redis without bound; with Redis unreachable there is nothing to
      // hand back, so after a short wait the worker closes by force (its runs' locks expire and
      // another worker takes them).
      const closing = worker.close();
      closing.catch(() => undefined);
      let forced = false;
      while (!forced && (await Promise.race([closing.then(() => true, () => true), sleep(UNREACHABLE_CHECK_MS).then(() => false)])) === false) {
        if (redis.status !== 'ready') {
          log('Redis is unreachable: closing without handing the run back');
          forced = true;
        }
      }
      if (forced) {
        await Promise.race([worker.close(true).catch(() => undefined), sleep(UNREACHABLE_CHECK_MS)]);
        worker.disconnect().catch(() => undefined);
      }
      await Promise.all(decoders.map((t) => t.close()));
      redis.disconnect();
    },
  };
}
