// The worker side of the queue transport: a BullMQ worker that serves run jobs (the tiles one
// rank was dealt) from a queue until it is closed, decoding on worker threads that hold their own
// copy of the VAE (one per concurrent run). Per tile it reads the latent slice from its key
// (checking size and SHA-256), decodes it, writes the raw tile to its
// output key with a TTL — only while the decode still wants it — and reports the tile as job
// progress. A job naming another VAE is refused (it fails at once, never retried). Closing drains:
// the tile in hand is finished, the rest of its run goes back to the queue for another worker.

import { hostname } from 'node:os';
import { DelayedError, UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { reason, type Reason, refuse } from '../../errors.js';
import { elementCount } from '../../tensor.js';
import type { Tensor } from '../../tensor.js';
import { localGroup } from '../local/index.js';
import type { LocalGroup } from '../local/local-group.js';
import type { VaeRef } from '../program.js';
import { connectRedis, redisOptionsOf, type RedisConnection } from './connection.js';
import { DECODE_TILE } from './decode-program.js';
import {
  DEFAULT_QUEUE,
  decodeKeys,
  type DecodeKeys,
  float32Of,
  sha256,
  writeTile,
  type RunJobData,
  type RunJobResult,
  type RunProgress,
  type RunTile,
} from './protocol.js';

/** Options of `startQueueWorker`. */
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
  /**
   * This worker's memory budget: a run whose predicted peak (`predictRunBytes` of its tiles,
   * times `concurrency`) exceeds it is handed back to the queue for a larger worker, untouched.
   */
  memoryBudget?: { bytes: number; predictRunBytes: (tiles: readonly RunTile[]) => number };
}

/** How long a run handed back for memory waits before any worker (this one included) may take it again (ms). */
export const HANDED_BACK_DELAY_MS = 2000;

/** A running queue worker (from `startQueueWorker`): its name, the VAE it serves, and `close()` to drain. */
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

/**
 * Starts a worker that serves run jobs from the queue until it is closed. Options are checked and
 * every decoder thread has loaded the VAE (and checked its hash) before it takes a job.
 */
export async function startQueueWorker(options: QueueWorkerOptions): Promise<QueueWorker> {
  const settings = checkWorkerOptions(options);
  const redisOptions = redisOptionsOf(options.connection);
  const redis: Redis = await connectRedis(redisOptions, options.connectTimeoutMs);
  let decoders: LocalGroup[];
  try {
    decoders = await startDecoders(options.vae, settings.concurrency);
  } catch (e) {
    redis.disconnect();
    throw e;
  }
  const server = new RunServer(options, settings, redis, decoders);
  const worker = new Worker<RunJobData, RunJobResult>(settings.queue, (job, token) => server.processRun(job, token), {
    connection: { ...redisOptions, maxRetriesPerRequest: null },
    concurrency: settings.concurrency,
    lockDuration: settings.lockDurationMs,
    stalledInterval: settings.stalledIntervalMs,
    maxStalledCount: 1,
    name: server.name,
  });
  server.attach(worker);
  await worker.waitUntilReady();
  return server;
}

interface WorkerSettings {
  queue: string;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
}

function checkWorkerOptions(options: QueueWorkerOptions): WorkerSettings {
  const reasons: Reason[] = [];
  const { concurrency = 1, lockDurationMs = 30000, stalledIntervalMs = 30000 } = options;
  const queue = options.queue ?? DEFAULT_QUEUE;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > 1024)
    reasons.push(reason('CONCURRENCY_INVALID', 'concurrency', concurrency, 'an integer in [1, 1024]'));
  if (!Number.isSafeInteger(lockDurationMs) || lockDurationMs < 100)
    reasons.push(reason('LOCK_DURATION_INVALID', 'lockDurationMs', lockDurationMs, 'an integer ≥ 100 (ms)'));
  if (!Number.isSafeInteger(stalledIntervalMs) || stalledIntervalMs < 100)
    reasons.push(reason('STALLED_INTERVAL_INVALID', 'stalledIntervalMs', stalledIntervalMs, 'an integer ≥ 100 (ms)'));
  if (typeof queue !== 'string' || !/^[\w.-]{1,100}$/.test(queue))
    reasons.push(reason('QUEUE_INVALID', 'queue', queue, 'a name of 1–100 letters, digits, "_", "." or "-"'));
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  return { queue, concurrency, lockDurationMs, stalledIntervalMs };
}

/** One decoder thread per concurrent run, each loading the VAE now rather than on the first tile. */
async function startDecoders(vae: VaeRef, concurrency: number): Promise<LocalGroup[]> {
  const { threads, deviceId } = vae.loadOptions;
  const decoders = Array.from({ length: concurrency }, () =>
    localGroup({
      ranks: 1,
      isolation: 'thread',
      ...(threads !== undefined ? { threadsPerRank: threads } : {}),
      ...(deviceId !== undefined ? { devices: [deviceId] } : {}),
    }),
  );
  try {
    await Promise.all(decoders.map((t) => t.run(DECODE_TILE, [{ vae, latent: null }])));
  } catch (e) {
    await Promise.all(decoders.map((t) => t.close()));
    throw e;
  }
  return decoders;
}

/** What the next tile of a run needs: its latent slice, nothing ('delivered' already), or the run ends ('ended'). */
type TileInput = Buffer | 'delivered' | 'ended';

/** The worker's state and its run jobs' steps: refuse, hand back, decode tile by tile, drain. */
class RunServer implements QueueWorker {
  readonly name: string;
  readonly vaeHash: string;
  tilesDecoded = 0;
  private draining = false;
  private worker!: Worker<RunJobData, RunJobResult>;
  private readonly idleDecoders: LocalGroup[];
  private readonly log: (line: string) => void;

  constructor(
    private readonly options: QueueWorkerOptions,
    private readonly settings: WorkerSettings,
    private readonly redis: Redis,
    private readonly decoders: LocalGroup[],
  ) {
    this.name = options.name ?? `${hostname()}:${process.pid}`;
    this.vaeHash = options.vae.hash;
    this.log = options.log ?? (() => undefined);
    this.idleDecoders = [...decoders];
  }

  attach(worker: Worker<RunJobData, RunJobResult>): void {
    this.worker = worker;
    worker.on('failed', (job, e) => {
      if (job && !(e instanceof WaitingError) && !(e instanceof DelayedError)) this.log(`run ${job.id} failed: ${e.message}`);
    });
    worker.on('error', (e) => this.log(`queue error: ${e.message}`));
  }

  async processRun(job: Job<RunJobData, RunJobResult>, token?: string): Promise<RunJobResult> {
    const started = performance.now();
    this.refuseForeignVae(job.data);
    await this.handBackIfOverBudget(job, token);
    const decoder = this.idleDecoders.pop()!;
    try {
      return await this.decodeRun(job, token, decoder, started);
    } finally {
      this.idleDecoders.push(decoder);
    }
  }

  /** A job naming another VAE fails at once and is never retried. */
  private refuseForeignVae(data: RunJobData): void {
    if (data.vaeHash === this.vaeHash) return;
    throw new UnrecoverableError(
      `worker ${this.name} holds the VAE with content hash ${this.vaeHash.slice(0, 12)}… but the decode needs ${String(data.vaeHash).slice(0, 12)}…: start workers with the coordinator's VAE (same --vae/--config/--family/--seed; for encode --sample, --encoder --moments)`,
    );
  }

  /** A run predicted over this worker's budget goes back to the queue, untouched, for a larger worker. */
  private async handBackIfOverBudget(job: Job<RunJobData, RunJobResult>, token: string | undefined): Promise<void> {
    const budget = this.options.memoryBudget;
    if (!budget) return;
    const { concurrency } = this.settings;
    const predicted = budget.predictRunBytes(job.data.tiles) * concurrency;
    if (predicted <= budget.bytes) return;
    this.log(
      `run ${job.id} handed back: its predicted peak ${(predicted / 2 ** 20).toFixed(0)} MiB (x${concurrency} concurrent runs) exceeds this worker's budget of ${(budget.bytes / 2 ** 20).toFixed(0)} MiB`,
    );
    await job.moveToDelayed(Date.now() + HANDED_BACK_DELAY_MS, token);
    throw new DelayedError();
  }

  private async decodeRun(
    job: Job<RunJobData, RunJobResult>,
    token: string | undefined,
    decoder: LocalGroup,
    started: number,
  ): Promise<RunJobResult> {
    const data = job.data;
    const keys = decodeKeys(this.settings.queue, data.decodeId);
    const result: RunJobResult = { worker: this.name, tiles: [], decoderSeconds: 0, busySeconds: 0, cancelled: false };
    for (const tile of data.tiles) {
      if (this.draining) {
        // The rest of the run goes back to the queue; tiles already delivered are skipped there.
        await job.moveToWait(token);
        throw new WaitingError();
      }
      const input = await this.tileInput(job, token, keys, tile);
      if (input === 'delivered') continue;
      const outcome = input === 'ended' ? 'ended' : await this.decodeTile(decoder, keys, tile, input, data.tileTtlMs, result);
      if (outcome === 'ended') {
        result.cancelled = true;
        break;
      }
      // 'assembled': another attempt of this run delivered the tile first; the rest of the run is still due.
      if (outcome === 'assembled') continue;
      this.tilesDecoded++;
      result.tiles.push(tile.index);
      await job.updateProgress({ tile: tile.index } satisfies RunProgress);
    }
    result.busySeconds = (performance.now() - started) / 1000;
    return result;
  }

  /** Checks that the run is still this worker's and the decode still wants the tile, then reads its latent slice. */
  private async tileInput(
    job: Job<RunJobData, RunJobResult>,
    token: string | undefined,
    keys: DecodeKeys,
    tile: RunTile,
  ): Promise<TileInput> {
    const check = this.redis
      .multi()
      .exists(keys.alive)
      .sismember(keys.done, String(tile.index))
      .exists(keys.output(tile.index))
      .get(`${this.worker.toKey(job.id!)}:lock`);
    const [[, alive], [, done], [, written], [, lock]] = (await check.exec()) as [unknown, unknown][];
    if (token !== undefined && lock !== token) {
      // The lock expired (this worker looked dead): the run is back in the queue or with another
      // worker, which skips what is delivered; going on would only duplicate its work.
      throw new Error(`run ${job.id} was taken from worker ${this.name} (its lock expired); stopping it here`);
    }
    if (alive === 0) return 'ended';
    if (done === 1 || written === 1) return 'delivered';
    const bytes = await this.redis.getBuffer(keys.input(tile.index));
    if (bytes === null) return 'ended';
    if (bytes.byteLength !== elementCount(tile.dims) * 4 || sha256(bytes) !== tile.sha256) {
      throw new UnrecoverableError(
        `the latent slice of tile ${tile.index} in Redis has ${bytes.byteLength} bytes whose SHA-256 is not the coordinator's (expected ${elementCount(tile.dims) * 4} bytes, ${tile.sha256.slice(0, 12)}…)`,
      );
    }
    return bytes;
  }

  /** Decodes one latent slice on the run's decoder thread and writes the tile, while the decode still wants it. */
  private async decodeTile(
    decoder: LocalGroup,
    keys: DecodeKeys,
    tile: RunTile,
    bytes: Buffer,
    ttlMs: number,
    result: RunJobResult,
  ): Promise<'written' | 'ended' | 'assembled'> {
    const [decoded] = await decoder.run<{ tile: Tensor; decoderSeconds: number }>(DECODE_TILE, [
      { vae: this.options.vae, latent: { dims: tile.dims, data: float32Of(bytes) } },
    ]);
    result.decoderSeconds += decoded!.decoderSeconds;
    return await writeTile(this.redis, keys, tile.index, decoded!.tile, ttlMs, this.name);
  }

  async close(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    this.log('draining: finishing the tile in hand, taking no new job');
    await this.closeWorker();
    await Promise.all(this.decoders.map((t) => t.close()));
    this.redis.disconnect();
  }

  /**
   * BullMQ's close waits for Redis without bound; with Redis unreachable there is nothing to hand
   * back, so after a short wait the worker closes by force (its runs' locks expire and another
   * worker takes them).
   */
  private async closeWorker(): Promise<void> {
    const closing = this.worker.close();
    closing.catch(() => undefined);
    const closed = closing.then(
      () => true,
      () => true,
    );
    while ((await Promise.race([closed, sleep(UNREACHABLE_CHECK_MS).then(() => false)])) === false) {
      if (this.redis.status !== 'ready') {
        this.log('Redis is unreachable: closing without handing the run back');
        await Promise.race([this.worker.close(true).catch(() => undefined), sleep(UNREACHABLE_CHECK_MS)]);
        this.worker.disconnect().catch(() => undefined);
        return;
      }
    }
  }
}
