// A group of ranks on this machine (worker threads or child processes) that runs SPMD rank
// programs with a communicator (a ProgramGroup of the RankGroup contract). One run at a time; a run's outcome on every rank is 'done', 'failed' (the program threw) or 'lost'
// (the rank died). Lost ranks are started again by the next run. Ranks are started lazily and
// keep the process alive only while a run is in flight.

import { availableParallelism } from 'node:os';
import { abortedError, DistVaeError, invalidArgument } from '../../errors.js';
import { rankFailed, type LaunchOptions, type ProgramGroup, type RankOutcome, type RankRun } from '../group.js';
import type { ProgramRef } from '../program.js';
import type { RankHost, StartRank } from './host.js';
import { deserializeError, transferables, type FromRank, type RankInit } from './protocol.js';

/** How local ranks run: worker threads, or child processes (a crash stays in its rank). */
export type Isolation = 'thread' | 'process';

/** Options of `localGroup`. */
export interface LocalGroupOptions {
  /** Number of ranks (≥ 1). */
  ranks: number;
  /** 'thread' (worker_threads, default) or 'process' (child processes: crash isolation, per-rank peak RSS). */
  isolation?: Isolation;
  /** Intra-op threads of each rank's decoder; default: this machine's cores / ranks (at least 1). */
  threadsPerRank?: number;
  /** Execution-provider device id per rank (several GPUs); absent entries use the VAE's own. */
  devices?: readonly (number | undefined)[];
}

/** How long a cancelled rank may take to finish the decoder call in hand before it is ended. */
const CANCEL_GRACE_MS = 60_000;
/** How long close() waits for a rank to exit on request before ending it. */
const CLOSE_GRACE_MS = 5_000;

interface ActiveRun {
  id: number;
  options: LaunchOptions;
  outcomes: (RankOutcome | null)[];
  finish: (outcomes: RankOutcome[]) => void;
  escalation: NodeJS.Timeout | null;
}

/** Ranks on this machine (threads or processes) that message each other; made by `localGroup`, started by `start()`, ended by `close()`. */
export class LocalGroup implements ProgramGroup {
  readonly kind = 'programs';
  readonly size: number;
  readonly isolation: Isolation;
  readonly transport: string;
  readonly threadsPerRank: number;
  private readonly devices: readonly (number | undefined)[];
  private readonly hosts: (RankHost | null)[];
  private readonly starting: (Promise<RankHost> | null)[];
  private active: ActiveRun | null = null;
  private tail: Promise<void> = Promise.resolve();
  private runs = 0;
  private closed = false;
  /** Aborted by close(): ranks still starting are ended instead of awaited. */
  private readonly closing = new AbortController();

  constructor(
    options: LocalGroupOptions,
    private readonly startRank: StartRank,
  ) {
    this.size = options.ranks;
    this.isolation = options.isolation ?? 'thread';
    this.transport = `local-${this.isolation}`;
    this.threadsPerRank = options.threadsPerRank ?? Math.max(1, Math.floor(availableParallelism() / options.ranks));
    this.devices = options.devices ?? [];
    this.hosts = new Array<RankHost | null>(this.size).fill(null);
    this.starting = new Array<Promise<RankHost> | null>(this.size).fill(null);
  }

  /** OS process ids of the ranks now running (process isolation; undefined for threads and ranks not started). */
  pids(): (number | undefined)[] {
    return this.hosts.map((h) => h?.pid);
  }

  /** Starts every rank that is not running (runs do this themselves). */
  async start(): Promise<void> {
    this.checkOpen();
    await Promise.all(this.hosts.map((_, rank) => this.ensureRank(rank)));
  }

  /**
   * Starts `program` on every rank (after the previous run has ended). The returned run
   * streams posts and outcomes through the options; see `run` for the plain SPMD form.
   */
  async launch(program: ProgramRef, options: LaunchOptions): Promise<RankRun> {
    this.checkOpen();
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise((r) => (release = r));
    await previous;
    let inputs: unknown[];
    try {
      this.checkOpen();
      if (options.signal?.aborted) throw abortedError(options.signal);
      await this.start();
      inputs = Array.from({ length: this.size }, (_, rank) => options.input(rank));
    } catch (e) {
      release();
      throw e;
    }
    const id = ++this.runs;
    let finish!: (outcomes: RankOutcome[]) => void;
    const settled = new Promise<RankOutcome[]>((r) => (finish = r));
    const active: ActiveRun = { id, options, outcomes: new Array<RankOutcome | null>(this.size).fill(null), finish, escalation: null };
    this.active = active;
    const cancel = (reason: string) => {
      if (this.active !== active) return;
      for (const host of this.hosts) host?.send({ type: 'cancel', run: id, reason });
      active.escalation ??= setTimeout(() => {
        active.outcomes.forEach((o, rank) => {
          if (o === null) this.hosts[rank]?.kill();
        });
      }, CANCEL_GRACE_MS);
    };
    const onAbort = () => cancel(options.signal?.reason instanceof Error ? options.signal.reason.message : 'aborted');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    void settled.then(() => {
      options.signal?.removeEventListener('abort', onAbort);
      if (active.escalation) clearTimeout(active.escalation);
      if (this.active === active) this.active = null;
      for (const host of this.hosts) host?.hold(false);
      release();
    });
    for (const host of this.hosts) host!.hold(true);
    for (let rank = 0; rank < this.size; rank++)
      this.hosts[rank]!.send({ type: 'start', run: id, size: this.size, program, input: inputs[rank] });
    return {
      id,
      running: (rank) => this.active === active && active.outcomes[rank] === null && this.hosts[rank] !== null,
      post: (rank, data) => {
        if (this.active === active && active.outcomes[rank] === null) this.hosts[rank]?.send({ type: 'post', run: id, data });
      },
      cancel,
      settled,
    };
  }

  /**
   * Runs an SPMD program on every rank and returns the results by rank. Any rank that throws
   * or dies fails the run (RANK_FAILED naming it; the others are cancelled); the group stays
   * usable. The signal cancels the run (ABORTED).
   */
  async run<O = unknown>(
    program: ProgramRef,
    inputs: readonly unknown[] | ((rank: number) => unknown),
    options: { signal?: AbortSignal; onPost?: (rank: number, data: unknown) => void } = {},
  ): Promise<O[]> {
    if (Array.isArray(inputs) && inputs.length !== this.size)
      invalidArgument('inputs.length', inputs.length, `one input per rank (${this.size})`);
    const input = typeof inputs === 'function' ? inputs : (rank: number) => (inputs as readonly unknown[])[rank];
    let failure: DistVaeError | null = null;
    let run: RankRun | null = null;
    let rejectEarly!: (e: unknown) => void;
    const early = new Promise<never>((_, reject) => (rejectEarly = reject));
    early.catch(() => undefined);
    const onAbort = () => rejectEarly(abortedError(options.signal!));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      run = await this.launch(program, {
        input,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onPost ? { onPost: options.onPost } : {}),
        onOutcome: (o) => {
          if (o.status === 'done' || failure) return;
          if (o.status === 'failed' && o.error instanceof DistVaeError && o.error.code === 'ABORTED' && options.signal?.aborted) return;
          failure = rankFailed(o);
          run?.cancel(`rank ${o.rank} failed`);
          rejectEarly(failure);
        },
      });
      const outcomes = await Promise.race([run.settled, early]);
      return outcomes.map((o) => (o as Extract<RankOutcome, { status: 'done' }>).result as O);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Cancels a run in flight, ends every rank and waits until they are gone. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const active = this.active;
    if (active) for (const host of this.hosts) host?.send({ type: 'cancel', run: active.id, reason: 'the group is closing' });
    this.closing.abort();
    await Promise.allSettled(this.starting.map((s) => s));
    await Promise.all(this.hosts.map((h) => h?.close(CLOSE_GRACE_MS)));
  }

  private checkOpen(): void {
    if (this.closed) throw new DistVaeError('TRANSPORT_FAILED', `this ${this.transport} group of ${this.size} ranks is closed`);
  }

  private ensureRank(rank: number): Promise<RankHost> {
    const host = this.hosts[rank];
    if (host) return Promise.resolve(host);
    let starting = this.starting[rank];
    if (!starting) {
      const device = this.devices[rank];
      const init: RankInit = { rank, threads: this.threadsPerRank, ...(device !== undefined ? { deviceId: device } : {}) };
      starting = this.startRank(
        init,
        {
          onMessage: (message) => this.onMessage(rank, message),
          onExit: (cause) => this.onExit(rank, cause),
        },
        this.closing.signal,
      ).then(
        (h) => {
          this.hosts[rank] = h;
          this.starting[rank] = null;
          return h;
        },
        (e: unknown) => {
          this.starting[rank] = null;
          throw e;
        },
      );
      this.starting[rank] = starting;
    }
    return starting;
  }

  private onMessage(rank: number, message: FromRank): void {
    const active = this.active;
    if (message.type === 'ready' || !active || message.run !== active.id || active.outcomes[rank] !== null) return;
    switch (message.type) {
      case 'post':
        active.options.onPost?.(rank, message.data);
        return;
      case 'peer': {
        const target = this.hosts[message.to];
        if (target && active.outcomes[message.to] === null) {
          target.send({ type: 'peer', run: active.id, from: rank, tag: message.tag, data: message.data }, transferables(message.data));
        }
        return;
      }
      case 'done':
        this.settle(active, { rank, status: 'done', result: message.result, ...peak(message) });
        return;
      case 'failed':
        this.settle(active, { rank, status: 'failed', error: deserializeError(message.error), ...peak(message) });
        return;
    }
  }

  private onExit(rank: number, cause: string): void {
    this.hosts[rank] = null;
    const active = this.active;
    if (active && active.outcomes[rank] === null) this.settle(active, { rank, status: 'lost', cause });
  }

  private settle(active: ActiveRun, outcome: RankOutcome): void {
    if (active.outcomes[outcome.rank] !== null) return;
    active.outcomes[outcome.rank] = outcome;
    active.options.onOutcome?.(outcome);
    if (active.outcomes.every((o) => o !== null)) active.finish(active.outcomes as RankOutcome[]);
  }
}

function peak(message: { peakRssBytes?: number }): { peakRssBytes?: number } {
  return message.peakRssBytes !== undefined ? { peakRssBytes: message.peakRssBytes } : {};
}
