// One decode in flight on the queue, seen from the coordinator: the state its run jobs' events
// move (tiles reported, runs completed, stalled or failed), the raster-order reading of finished
// tiles out of Redis, the idle timeout, and the one way it settles. QueueGroup writes the inputs
// and adds the jobs; this owns everything between that and the result.

import type { Redis } from 'ioredis';
import { abortedError, DistVaeError } from '../../errors.js';
import type { DistRankStats, RankFailure, TileJob, TileJobOptions, TileJobResult } from '../group.js';
import { checkTilePayload, readTile, type DecodeKeys, type RunJobResult, type RunProgress } from './protocol.js';
import type { QueueTraffic } from './queue-group.js';

/** An event of a run job, routed from BullMQ's events stream by job id. */
export type JobEvent = { kind: 'active' | 'progress' | 'completed' | 'failed' | 'stalled' | 'waiting'; data?: unknown; reason?: string };

/** Where a decode runs: its Redis keys and the facts its messages name. */
export interface RemoteDecodeContext {
  redis: Redis;
  keys: DecodeKeys;
  /** Rank of every tile (raster index → rank). */
  owner: readonly number[];
  /** Ranks of the group: idle ones are reported with no tiles. */
  size: number;
  ttlMs: number;
  timeoutMs: number;
  /** The lock key of a rank's run job (held while a worker lives and works on it). */
  lockKeyOf(rank: number): string;
  /** The queue and server, as messages name them. */
  queueName: string;
  server: string;
  traffic: QueueTraffic;
}

export class RemoteDecode {
  /** Settles once: with every rank's accounting, or with the first error. */
  readonly result: Promise<TileJobResult>;
  /** Ranks dealt at least one tile (only they get a run job). */
  readonly runsWithTiles: number[];
  private resolve!: (result: TileJobResult) => void;
  private reject!: (error: DistVaeError) => void;
  private settled = false;
  /** The next tile, in raster order, to hand to the assembler. */
  private next = 0;
  private pumping = false;
  /** Tiles reported done and not yet read. */
  private readonly ready = new Set<number>();
  private readonly completed = new Map<number, RunJobResult>();
  private readonly failures: RankFailure[] = [];
  private readonly redealt = new Set<number>();
  private readonly delivered: number[][];
  private idle: NodeJS.Timeout | null = null;
  private readonly onAbort = () => this.finish(abortedError(this.options.signal!));

  constructor(
    private readonly job: TileJob,
    private readonly options: TileJobOptions,
    private readonly ctx: RemoteDecodeContext,
  ) {
    this.result = new Promise<TileJobResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.delivered = job.schedule.ranks.map(() => []);
    this.runsWithTiles = job.schedule.ranks.flatMap((t, r) => (t.length > 0 ? [r] : []));
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.armIdle();
  }

  /** Handles an event of rank `rank`'s run job. */
  onEvent(rank: number, event: JobEvent): void {
    if (this.settled) return;
    this.armIdle();
    const mine = this.job.schedule.ranks[rank]!;
    if (event.kind === 'progress') {
      const tile = (event.data as RunProgress | undefined)?.tile;
      if (typeof tile !== 'number' || !mine.includes(tile))
        return this.finish(
          new DistVaeError(
            'RANK_FAILED',
            `rank ${rank} reported tile ${String(tile)}, which is not a tile of its run; its result is rejected`,
          ),
        );
      this.ready.add(tile);
      void this.pump();
    } else if (event.kind === 'completed') {
      // Progress events precede completion in the stream; a tile of a completed run that was
      // never reported is read anyway, and reading it fails if it is not in Redis.
      for (const t of mine) if (t >= this.next) this.ready.add(t);
      this.completed.set(rank, event.data as RunJobResult);
      void this.pump();
    } else if (event.kind === 'failed') {
      this.finish(new DistVaeError('RANK_FAILED', `rank ${rank} failed on a worker: ${event.reason ?? 'no reason given'}`));
    } else if (event.kind === 'stalled') {
      this.failures.push({
        rank,
        cause: 'its worker stopped renewing the job lock (lost or killed); the run went back to the queue and was taken again',
      });
      for (const t of mine) if (!this.ready.has(t) && t >= this.next) this.redealt.add(t);
    }
  }

  /** Fails the decode (a no-op once it has settled). */
  fail(error: DistVaeError): void {
    this.finish(error);
  }

  private finish(error: DistVaeError | null): void {
    if (this.settled) return;
    this.settled = true;
    if (this.idle) clearTimeout(this.idle);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    if (error) this.reject(error);
    else this.resolve(this.accounting());
  }

  /** Every rank's tiles and times. Workers load their VAE when they start, never inside a decode: loadSeconds is 0. */
  private accounting(): TileJobResult {
    const ranks: DistRankStats[] = this.job.schedule.ranks.map((_, rank) => {
      const r = this.completed.get(rank);
      const tiles = [...this.delivered[rank]!].sort((a, b) => a - b);
      return {
        rank,
        tiles,
        load: tiles.reduce((s, t) => s + this.job.work[t]!, 0),
        seconds: r?.busySeconds ?? 0,
        decoderSeconds: r?.decoderSeconds ?? 0,
        loadSeconds: 0,
      };
    });
    while (ranks.length < this.ctx.size)
      ranks.push({ rank: ranks.length, tiles: [], load: 0, seconds: 0, decoderSeconds: 0, loadSeconds: 0 });
    return { ranks, failures: this.failures, redealt: [...this.redealt].sort((a, b) => a - b), edgeRedecodes: [] };
  }

  private finishIfDone(): void {
    if (this.next === this.job.work.length && this.runsWithTiles.every((r) => this.completed.has(r))) this.finish(null);
  }

  /**
   * A decode times out after `timeoutMs` without a tile taken or finished — unless a worker still
   * holds one of its runs (a long tile): its job lock, renewed while it lives, says so.
   */
  private armIdle(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = setTimeout(() => void this.checkIdle(), this.ctx.timeoutMs);
  }

  private async checkIdle(): Promise<void> {
    const { ctx } = this;
    const locks = this.runsWithTiles.filter((r) => !this.completed.has(r)).map((r) => ctx.lockKeyOf(r));
    let held: number;
    try {
      held = locks.length > 0 ? await ctx.redis.exists(...locks) : 0;
    } catch (e) {
      return this.finish(
        new DistVaeError('TRANSPORT_FAILED', `Redis stopped answering during the decode: ${(e as Error).message}`, { cause: e }),
      );
    }
    if (this.settled) return;
    if (held > 0) return this.armIdle();
    this.finish(
      new DistVaeError(
        'TIMEOUT',
        `no worker on queue "${ctx.queueName}" at ${ctx.server} took or finished a tile for ${ctx.timeoutMs} ms (${this.next} of ${this.job.work.length} tile(s) assembled): start workers with \`distvae worker --redis URL --queue ${ctx.queueName}\` and the same VAE`,
      ),
    );
  }

  /** Reads ready tiles in raster order, so the coordinator holds at most what the assembler buffers. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.settled && this.ready.has(this.next)) {
        if (!(await this.deliver(this.next))) return;
        this.next++;
      }
      this.finishIfDone();
    } catch (e) {
      this.finish(
        e instanceof DistVaeError
          ? e
          : new DistVaeError('TRANSPORT_FAILED', `reading tile ${this.next} from Redis failed: ${(e as Error).message}`, { cause: e }),
      );
    } finally {
      this.pumping = false;
    }
    if (!this.settled && this.ready.has(this.next)) void this.pump();
  }

  /** Reads, checks and hands one tile to the assembler, then deletes its key; false once the decode has settled. */
  private async deliver(index: number): Promise<boolean> {
    const { ctx } = this;
    const rank = ctx.owner[index]!;
    const payload = await readTile(ctx.redis, ctx.keys, index);
    if (this.settled) return false;
    if (!payload)
      throw new DistVaeError(
        'RANK_FAILED',
        `tile ${index} of rank ${rank} was reported done but its key is gone (expired after ${ctx.ttlMs} ms, or removed)`,
      );
    const checked = checkTilePayload(payload, this.job.layout.extents[index]!);
    const from = `rank ${rank} (worker ${payload.worker ?? 'unknown'})`;
    if (typeof checked === 'string')
      throw new DistVaeError('RANK_FAILED', `${from} returned a wrong result for tile ${index}, rejected: ${checked}`);
    try {
      this.options.onResult({ index, rank, kind: 'raw', leading: checked.leading, planes: checked.planes });
    } catch (e) {
      // Output that came out non-finite is the network's doing, not a worker's wrong result.
      if (e instanceof DistVaeError && e.code === 'NON_FINITE_OUTPUT') throw e;
      throw new DistVaeError('RANK_FAILED', `${from} returned a wrong result for tile ${index}, rejected: ${(e as Error).message}`, {
        cause: e,
      });
    }
    ctx.traffic.tileBytes += payload.data!.byteLength;
    this.delivered[rank]!.push(index);
    await ctx.redis.multi().sadd(ctx.keys.done, String(index)).del(ctx.keys.output(index)).exec();
    return true;
  }
}
