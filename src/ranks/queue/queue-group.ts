// The coordinator side of the queue transport: a RankGroup whose ranks are run jobs on a BullMQ
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
// are removed before decodeTiles settles.

import { randomBytes } from 'node:crypto';
import { FlowProducer, Queue, QueueEvents } from 'bullmq';
import type { Redis, RedisOptions } from 'ioredis';
import { abortedError, DistVaeError } from '../../errors.js';
import type { DistRankStats, RankFailure, RankGroup, TileJob, TileJobOptions, TileJobResult } from '../group.js';
import { connectRedis, describeServer, redisOptionsOf, type RedisConnection } from './connection.js';
import { DEFAULT_QUEUE, bytesOf, checkTilePayload, decodeKeys, parentQueueOf, readTile, sha256, type DecodeKeys, type RunJobData, type RunJobResult, type RunProgress } from './protocol.js';

/** Bytes that went through Redis for this group's decodes (payloads only, not BullMQ's bookkeeping). */
export interface QueueTraffic {
  /** Latent slices written. */
  latentBytes: number;
  /** Decoded tiles read back. */
  tileBytes: number;
}

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

type JobEvent = { kind: 'active' | 'progress' | 'completed' | 'failed' | 'stalled' | 'waiting'; data?: unknown; reason?: string };

export class QueueGroup implements RankGroup {
  readonly transport = 'queue';
  readonly rankToRank = false;
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
    if (!this.connected) throw new DistVaeError('TRANSPORT_FAILED', 'the queue group has not connected yet: await group.connect() (or pass ranks) before reading its size');
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
      this.listeners.get(args.jobId)?.({ kind, data: kind === 'completed' ? args.returnvalue : args.data, ...(args.failedReason !== undefined ? { reason: args.failedReason } : {}) });
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
    if (job.assembly !== 'raster') throw new DistVaeError('INVALID_ARGUMENT', `the queue transport returns raw tiles: the job must use 'raster' assembly, not ${JSON.stringify(job.assembly)}`);
    const tileCount = job.latents.length;
    const owner = new Array<number>(tileCount).fill(-1);
    job.schedule.ranks.forEach((tiles, rank) => tiles.forEach((t) => (owner[t] = rank)));
    if (owner.some((o) => o < 0 || o >= this.size) || job.schedule.ranks.length > this.size) {
      throw new DistVaeError('INVALID_ARGUMENT', `the schedule must deal each of the ${tileCount} tiles to one of ${this.size} ranks`);
    }
    const decodeId = randomBytes(8).toString('hex');
    const keys = decodeKeys(this.queueName, decodeId);
    const runIds = job.schedule.ranks.map((_, rank) => `${decodeId}-r${rank}`);
    const ttl = this.options.tileTtlMs ?? 3_600_000;
    try {
      return await this.run(c, job, options, { decodeId, keys, runIds, owner, ttl });
    } finally {
      await this.cleanUp(c, keys, tileCount, decodeId, runIds.filter((_, r) => (job.schedule.ranks[r] ?? []).length > 0));
    }
  }

  private async run(c: Connected, job: TileJob, options: TileJobOptions, d: { decodeId: string; keys: DecodeKeys; runIds: string[]; owner: number[]; ttl: number }): Promise<TileJobResult> {
    const { keys, runIds, owner } = d;
    const tileCount = job.latents.length;
    const timeoutMs = this.options.timeoutMs ?? 120_000;

    // Inputs first, then the jobs that name them.
    const write = c.redis.multi().set(keys.alive, '1', 'PX', d.ttl);
    const tiles = job.latents.map((latent, index) => {
      const bytes = bytesOf(latent.data);
      write.set(keys.input(index), bytes, 'PX', d.ttl);
      this.traffic.latentBytes += bytes.byteLength;
      return { index, dims: [...latent.dims], sha256: sha256(bytes) };
    });
    await write.exec();

    return new Promise<TileJobResult>((resolve, reject) => {
      let settled = false;
      let next = 0;
      let pumping = false;
      const ready = new Set<number>();
      const completed = new Map<number, RunJobResult>();
      const failures: RankFailure[] = [];
      const redealt = new Set<number>();
      const delivered = job.schedule.ranks.map(() => [] as number[]);
      const runsWithTiles = job.schedule.ranks.flatMap((t, r) => (t.length > 0 ? [r] : []));
      let idle: NodeJS.Timeout | null = null;

      const finish = (error: DistVaeError | null) => {
        if (settled) return;
        settled = true;
        if (idle) clearTimeout(idle);
        options.signal?.removeEventListener('abort', onAbort);
        for (const id of runIds) this.listeners.delete(id);
        if (error) return reject(error);
        // Workers load their VAE when they start, never inside a decode: loadSeconds is 0.
        const ranks: DistRankStats[] = job.schedule.ranks.map((_, rank) => {
          const r = completed.get(rank);
          const tiles = [...delivered[rank]!].sort((a, b) => a - b);
          return { rank, tiles, load: tiles.reduce((s, t) => s + job.work[t]!, 0), seconds: r?.busySeconds ?? 0, decoderSeconds: r?.decoderSeconds ?? 0, loadSeconds: 0 };
        });
        while (ranks.length < this.size) ranks.push({ rank: ranks.length, tiles: [], load: 0, seconds: 0, decoderSeconds: 0, loadSeconds: 0 });
        resolve({ ranks, failures, redealt: [...redealt].sort((a, b) => a - b), edgeRedecodes: [] });
      };
      const maybeDone = () => {
        if (next === tileCount && runsWithTiles.every((r) => completed.has(r))) finish(null);
      };
      // A decode times out after `timeoutMs` without a tile taken or finished — unless a worker
      // still holds one of its runs (a long tile): its job lock, renewed while it lives, says so.
      const armIdle = () => {
        if (idle) clearTimeout(idle);
        idle = setTimeout(() => {
          const locks = runsWithTiles.filter((r) => !completed.has(r)).map((r) => `${c.queue.toKey(runIds[r]!)}:lock`);
          (locks.length > 0 ? c.redis.exists(...locks) : Promise.resolve(0)).then(
            (held) => {
              if (settled) return;
              if (held > 0) return armIdle();
              finish(
                new DistVaeError(
                  'TIMEOUT',
                  `no worker on queue "${this.queueName}" at ${describeServer(this.redisOptions)} took or finished a tile for ${timeoutMs} ms (${next} of ${tileCount} tile(s) assembled): start workers with \`distvae worker --redis URL --queue ${this.queueName}\` and the same VAE`,
                ),
              );
            },
            (e: unknown) => finish(new DistVaeError('TRANSPORT_FAILED', `Redis stopped answering during the decode: ${(e as Error).message}`, { cause: e })),
          );
        }, timeoutMs);
      };
      const onAbort = () => finish(abortedError(options.signal!));
      options.signal?.addEventListener('abort', onAbort, { once: true });

      // Tiles are read in raster order, so the coordinator holds at most what the assembler buffers.
      const pump = async () => {
        if (pumping) return;
        pumping = true;
        try {
          while (!settled && ready.has(next)) {
            const index = next;
            const rank = owner[index]!;
            const payload = await readTile(c.redis, keys, index);
            if (settled) return;
            if (!payload) throw new DistVaeError('RANK_FAILED', `tile ${index} of rank ${rank} was reported done but its key is gone (expired after ${d.ttl} ms, or removed)`);
            const checked = checkTilePayload(payload, job.layout.extents[index]!);
            const from = `rank ${rank} (worker ${payload.worker ?? 'unknown'})`;
            if (typeof checked === 'string') throw new DistVaeError('RANK_FAILED', `${from} returned a wrong result for tile ${index}, rejected: ${checked}`);
            try {
              options.onResult({ index, rank, kind: 'raw', leading: checked.leading, planes: checked.planes });
            } catch (e) {
              throw new DistVaeError('RANK_FAILED', `${from} returned a wrong result for tile ${index}, rejected: ${(e as Error).message}`, { cause: e });
            }
            this.traffic.tileBytes += payload.data!.byteLength;
            delivered[rank]!.push(index);
            await c.redis.multi().sadd(keys.done, String(index)).del(keys.output(index)).exec();
            next++;
          }
          maybeDone();
        } catch (e) {
          finish(e instanceof DistVaeError ? e : new DistVaeError('TRANSPORT_FAILED', `reading tile ${next} from Redis failed: ${(e as Error).message}`, { cause: e }));
        } finally {
          pumping = false;
        }
        if (!settled && ready.has(next)) void pump();
      };

      const onEvent = (rank: number) => (event: JobEvent) => {
        if (settled) return;
        armIdle();
        const mine = job.schedule.ranks[rank]!;
        if (event.kind === 'progress') {
          const tile = (event.data as RunProgress | undefined)?.tile;
          if (typeof tile !== 'number' || !mine.includes(tile)) return finish(new DistVaeError('RANK_FAILED', `rank ${rank} reported tile ${String(tile)}, which is not a tile of its run; its result is rejected`));
          ready.add(tile);
          void pump();
        } else if (event.kind === 'completed') {
          const result = event.data as RunJobResult;
          // Progress events precede completion in the stream; a tile of a completed run that was
          // never reported is read anyway, and reading it fails if it is not in Redis.
          for (const t of mine) if (t >= next) ready.add(t);
          completed.set(rank, result);
          void pump();
        } else if (event.kind === 'failed') {
          finish(new DistVaeError('RANK_FAILED', `rank ${rank} failed on a worker: ${event.reason ?? 'no reason given'}`));
        } else if (event.kind === 'stalled') {
          failures.push({ rank, cause: 'its worker stopped renewing the job lock (lost or killed); the run went back to the queue and was taken again' });
          for (const t of mine) if (!ready.has(t) && t >= next) redealt.add(t);
        }
      };
      runsWithTiles.forEach((rank) => this.listeners.set(runIds[rank]!, onEvent(rank)));
      armIdle();

      c.flows
        .add({
          name: 'decode',
          queueName: parentQueueOf(this.queueName),
          opts: { jobId: d.decodeId },
          data: { tiles: tileCount, runs: runsWithTiles.length },
          children: runsWithTiles.map((rank) => ({
            name: 'run',
            queueName: this.queueName,
            opts: { jobId: runIds[rank]!, removeOnComplete: true, removeOnFail: true, attempts: 1 },
            data: { decodeId: d.decodeId, rank, vaeHash: job.vae.hash, tiles: job.schedule.ranks[rank]!.map((t) => tiles[t]!), tileTtlMs: d.ttl } satisfies RunJobData,
          })),
        })
        .catch((e: unknown) => finish(new DistVaeError('TRANSPORT_FAILED', `adding the decode's jobs to queue "${this.queueName}" failed: ${(e as Error).message}`, { cause: e })));
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
