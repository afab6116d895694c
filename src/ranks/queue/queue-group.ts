// The coordinator side of the queue transport: a TileJobGroup whose ranks are run jobs on a BullMQ
// queue, taken by whichever `distvae worker` processes listen on it (on any machine). One decode
// is one parent job (in `<queue>-decodes`, which no worker serves) with one child job per
// scheduler run. Latent slices go in as binary keys; workers write raw tiles to binary keys and
// report them as job progress; the coordinator reads them in raster order, checks each payload
// (shape, dtype, SHA-256) and hands it to the caller's streaming assembler, then deletes it.
// Ranks cannot message each other, so assembly is always 'raster'.
//
// Faults: a worker that dies mid-run stops renewing its job lock; another worker's stalled check
// puts the run back in the queue and it is taken again, skipping tiles already delivered (decodes
// are deterministic, so the image is the same). A run that fails (wrong VAE, bad input) fails the
// decode. No progress for `timeoutMs` is a TIMEOUT. Whatever happens, the decode's keys and jobs
// are removed before decodeTiles settles. One decode in flight is a RemoteDecode (remote-decode.ts).

import { randomBytes } from 'node:crypto';
import { FlowProducer, Queue, QueueEvents } from 'bullmq';
import type { Redis, RedisOptions } from 'ioredis';
import { abortedError, DistVaeError } from '../../errors.js';
import type { TileJob, TileJobGroup, TileJobOptions, TileJobResult } from '../group.js';
import { connectRedis, describeServer, redisOptionsOf, type RedisConnection } from './connection.js';
import { DEFAULT_QUEUE, bytesOf, decodeKeys, parentQueueOf, sha256, type DecodeKeys, type RunJobData, type RunTile } from './protocol.js';
import { RemoteDecode, type JobEvent } from './remote-decode.js';

/** Bytes that went through Redis for this group's decodes (payloads only, not BullMQ's bookkeeping). */
export interface QueueTraffic {
  /** Latent slices written. */
  latentBytes: number;
  /** Decoded tiles read back. */
  tileBytes: number;
}

/** Options of `queueGroup`. */
export interface QueueGroupOptions {
  /** A `redis://` / `rediss://` URL (user, password, database in it) or ioredis options. */
  connection: RedisConnection;
  /** Queue the workers serve (default 'distvae'). */
  queue?: string;
  /** Runs (one job each) a decode is dealt into; default: the workers listening when the group connects, at least 2. */
  ranks?: number;
  /** Longest wait (ms) with no tile of a decode taken or finished before it fails with TIMEOUT (default 120000). */
  timeoutMs?: number;
  /** Lifetime (ms) of a decode's keys in Redis, a bound for a coordinator that vanished (default 3600000). */
  tileTtlMs?: number;
  /** Timeout (ms) of the first connection to Redis (default 5000). */
  connectTimeoutMs?: number;
  /** After a failed decode, how long (ms) to wait for workers to let go of its jobs so they can be removed (default 30000). */
  cleanupTimeoutMs?: number;
}

interface Connected {
  redis: Redis;
  queue: Queue;
  parents: Queue;
  flows: FlowProducer;
  events: QueueEvents;
  size: number;
}

/** Ranks as run jobs on a BullMQ queue, served by `distvae worker` processes; made by `queueGroup`, reached by `connect()`. */
export class QueueGroup implements TileJobGroup {
  readonly kind = 'tile-jobs';
  readonly transport = 'queue';
  readonly queueName: string;
  readonly traffic: QueueTraffic = { latentBytes: 0, tileBytes: 0 };
  private readonly redisOptions: RedisOptions;
  private connecting: Promise<Connected> | null = null;
  private connected: Connected | null = null;
  private closed = false;
  /** Event handlers of the run jobs in flight, by job id. */
  private readonly listeners = new Map<string, (event: JobEvent) => void>();

  constructor(private readonly options: QueueGroupOptions) {
    this.queueName = options.queue ?? DEFAULT_QUEUE;
    this.redisOptions = redisOptionsOf(options.connection);
  }

  /** Ranks (runs) a decode is dealt into: the `ranks` option, else the workers found by `connect()` (at least 2). */
  get size(): number {
    if (this.options.ranks !== undefined) return this.options.ranks;
    if (!this.connected)
      throw new DistVaeError(
        'TRANSPORT_FAILED',
        'the queue group has not connected yet: await group.connect() (or pass ranks) before reading its size',
      );
    return this.connected.size;
  }

  /** Connects to Redis (fails fast with TRANSPORT_FAILED when it is unreachable) and starts listening for job events. */
  async connect(): Promise<void> {
    await this.ensureConnected();
  }

  private ensureConnected(): Promise<Connected> {
    if (this.closed) return Promise.reject(new DistVaeError('TRANSPORT_FAILED', 'the queue group is closed'));
    this.connecting ??= this.open();
    return this.connecting;
  }

  private async open(): Promise<Connected> {
    const redis = await connectRedis(this.redisOptions, this.options.connectTimeoutMs);
    const connection = { ...this.redisOptions, maxRetriesPerRequest: null };
    const queue = new Queue(this.queueName, { connection });
    const parents = new Queue(parentQueueOf(this.queueName), { connection });
    const flows = new FlowProducer({ connection });
    // Events are read from the stream's current end, fixed now, so none of a decode's is missed.
    const last = (await redis.xrevrange(queue.keys.events!, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    const events = new QueueEvents(this.queueName, { connection, lastEventId: last });
    // Connection errors surface as failed commands; the listeners keep them from crashing the process.
    queue.on('error', () => undefined);
    parents.on('error', () => undefined);
    flows.on('error', () => undefined);
    events.on('error', () => undefined);
    const route = (kind: JobEvent['kind']) => (args: { jobId: string; data?: unknown; returnvalue?: unknown; failedReason?: string }) => {
      this.listeners.get(args.jobId)?.({
        kind,
        data: kind === 'completed' ? args.returnvalue : args.data,
        ...(args.failedReason !== undefined ? { reason: args.failedReason } : {}),
      });
    };
    for (const kind of ['active', 'progress', 'completed', 'failed', 'stalled', 'waiting'] as const) events.on(kind, route(kind) as never);
    await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
    const workers = this.options.ranks === undefined ? await queue.getWorkersCount().catch(() => 0) : 0;
    this.connected = { redis, queue, parents, flows, events, size: this.options.ranks ?? Math.max(2, workers) };
    return this.connected;
  }

  async decodeTiles(job: TileJob, options: TileJobOptions): Promise<TileJobResult> {
    const c = await this.ensureConnected();
    if (options.signal?.aborted) throw abortedError(options.signal);
    if (job.assembly !== 'raster')
      throw new DistVaeError(
        'INVALID_ARGUMENT',
        `the queue transport returns raw tiles: the job must use 'raster' assembly, not ${JSON.stringify(job.assembly)}`,
      );
    const tileCount = job.work.length;
    const owner = new Array<number>(tileCount).fill(-1);
    job.schedule.ranks.forEach((tiles, rank) => tiles.forEach((t) => (owner[t] = rank)));
    if (owner.some((o) => o < 0 || o >= this.size) || job.schedule.ranks.length > this.size) {
      throw new DistVaeError('INVALID_ARGUMENT', `the schedule must deal each of the ${tileCount} tiles to one of ${this.size} ranks`);
    }
    // A letter first: BullMQ refuses a job id that parses as an integer, which 16 hex digits are
    // about once in 1850 decodes.
    const decodeId = `d${randomBytes(8).toString('hex')}`;
    const keys = decodeKeys(this.queueName, decodeId);
    const runIds = job.schedule.ranks.map((_, rank) => `${decodeId}-r${rank}`);
    const ttl = this.options.tileTtlMs ?? 3_600_000;
    try {
      return await this.run(c, job, options, { decodeId, keys, runIds, owner, ttl });
    } finally {
      await this.cleanUp(
        c,
        keys,
        tileCount,
        decodeId,
        runIds.filter((_, r) => (job.schedule.ranks[r] ?? []).length > 0),
      );
    }
  }

  private async run(
    c: Connected,
    job: TileJob,
    options: TileJobOptions,
    d: { decodeId: string; keys: DecodeKeys; runIds: string[]; owner: number[]; ttl: number },
  ): Promise<TileJobResult> {
    const tiles = await this.writeInputs(c, job, d.keys, d.ttl);
    const decode = new RemoteDecode(job, options, {
      redis: c.redis,
      keys: d.keys,
      owner: d.owner,
      size: this.size,
      ttlMs: d.ttl,
      timeoutMs: this.options.timeoutMs ?? 120_000,
      lockKeyOf: (rank) => `${c.queue.toKey(d.runIds[rank]!)}:lock`,
      queueName: this.queueName,
      server: describeServer(this.redisOptions),
      traffic: this.traffic,
    });
    for (const rank of decode.runsWithTiles) this.listeners.set(d.runIds[rank]!, (event) => decode.onEvent(rank, event));
    try {
      // Inputs first, then the jobs that name them.
      this.addJobs(c, job, d, tiles, decode.runsWithTiles).catch((e: unknown) =>
        decode.fail(
          new DistVaeError('TRANSPORT_FAILED', `adding the decode's jobs to queue "${this.queueName}" failed: ${(e as Error).message}`, {
            cause: e,
          }),
        ),
      );
      return await decode.result;
    } finally {
      for (const id of d.runIds) this.listeners.delete(id);
    }
  }

  /** Writes every tile's latent slice to its key (with the decode's alive key); returns the tiles as run jobs name them. */
  private async writeInputs(c: Connected, job: TileJob, keys: DecodeKeys, ttl: number): Promise<RunTile[]> {
    const write = c.redis.multi().set(keys.alive, '1', 'PX', ttl);
    const tiles = job.work.map((_, index) => {
      const latent = job.latentOf(index);
      const bytes = bytesOf(latent.data);
      write.set(keys.input(index), bytes, 'PX', ttl);
      this.traffic.latentBytes += bytes.byteLength;
      return { index, dims: [...latent.dims], sha256: sha256(bytes) };
    });
    await write.exec();
    return tiles;
  }

  /** Adds the decode's parent job with one child run job per rank that has tiles. */
  private async addJobs(
    c: Connected,
    job: TileJob,
    d: { decodeId: string; runIds: string[]; ttl: number },
    tiles: RunTile[],
    runsWithTiles: number[],
  ): Promise<void> {
    await c.flows.add({
      name: 'decode',
      queueName: parentQueueOf(this.queueName),
      opts: { jobId: d.decodeId },
      data: { tiles: tiles.length, runs: runsWithTiles.length },
      children: runsWithTiles.map((rank) => ({
        name: 'run',
        queueName: this.queueName,
        opts: { jobId: d.runIds[rank]!, removeOnComplete: true, removeOnFail: true, attempts: 1 },
        data: {
          decodeId: d.decodeId,
          rank,
          vaeHash: job.vae.hash,
          tiles: job.schedule.ranks[rank]!.map((t) => tiles[t]!),
          tileTtlMs: d.ttl,
        } satisfies RunJobData,
      })),
    });
  }

  /** Removes every key and job of a decode; jobs a worker still holds are waited for (bounded). */
  private async cleanUp(c: Connected, keys: DecodeKeys, tileCount: number, decodeId: string, runIds: string[]): Promise<void> {
    // Without the alive key no worker writes a tile any more, and a run still held ends at its next tile.
    const indices = Array.from({ length: tileCount }, (_, i) => i);
    await c.redis.del(keys.alive, keys.done, ...indices.map(keys.input), ...indices.map(keys.output)).catch(() => undefined);
    const deadline = Date.now() + (this.options.cleanupTimeoutMs ?? 30_000);
    let pending = [...runIds];
    while (pending.length > 0) {
      const left: string[] = [];
      for (const id of pending) {
        const removed = await c.queue.remove(id, { removeChildren: false }).catch(() => 0);
        if (removed === 0 && (await c.queue.getJob(id).catch(() => null))) left.push(id);
      }
      pending = left;
      if (pending.length === 0 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await c.parents.remove(decodeId).catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const c = await this.connecting?.catch(() => null);
    if (!c) return;
    await Promise.allSettled([c.events.close(), c.flows.close(), c.queue.close(), c.parents.close()]);
    c.redis.disconnect();
  }
}
