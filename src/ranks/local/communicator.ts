// The rank-side communicator of one run: point-to-point messages matched by sender and tag
// (FIFO), and collectives built on them. Collectives use reserved tags numbered by call order,
// which is the same on every rank of an SPMD program; all-gather sends to every peer directly
// and all-reduce combines the gathered arrays in rank order, so every rank computes the same
// bits on every run.

import { abortedError, DistVaeError } from '../../errors.js';
import type { CommCounters, CommKind, Communicator } from '../program.js';
import { payloadBytes } from './protocol.js';

/** Tags of collectives start with a character user tags are refused to contain. */
const RESERVED = '\u0000';

type Waiter = { resolve: (data: unknown) => void; reject: (e: unknown) => void };

export class RankCommunicator implements Communicator {
  private readonly queued = new Map<string, unknown[]>();
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly listeners = new Map<string, (from: number, data: unknown) => void>();
  private sequence = 0;
  private readonly sent: CommCounters = {
    send: { calls: 0, bytes: 0 },
    broadcast: { calls: 0, bytes: 0 },
    allGather: { calls: 0, bytes: 0 },
    allReduce: { calls: 0, bytes: 0 },
    neighbourExchange: { calls: 0, bytes: 0 },
    barrier: { calls: 0, bytes: 0 },
  };

  constructor(
    readonly rank: number,
    readonly size: number,
    private readonly transmit: (to: number, tag: string, data: unknown) => void,
    private readonly signal: AbortSignal,
  ) {
    signal.addEventListener('abort', () => {
      for (const list of this.waiting.values()) for (const w of list) w.reject(abortedError(signal, 'run'));
      this.waiting.clear();
    });
  }

  /** A message from a peer (called by the rank runtime). */
  deliver(from: number, tag: string, data: unknown): void {
    const listener = this.listeners.get(tag);
    if (listener) return listener(from, data);
    const key = keyOf(from, tag);
    const waiter = this.waiting.get(key)?.shift();
    if (waiter) return waiter.resolve(data);
    const queue = this.queued.get(key) ?? [];
    queue.push(data);
    this.queued.set(key, queue);
  }

  send(to: number, data: unknown, tag = ''): void {
    checkUserTag(tag);
    this.count('send', payloadBytes(data));
    this.sendTagged(to, tag, data);
  }

  recv(from: number, tag = ''): Promise<unknown> {
    checkUserTag(tag);
    this.checkPeer(from, 'from');
    return this.recvTagged(from, tag);
  }

  listen(tag: string, handler: (from: number, data: unknown) => void): void {
    checkUserTag(tag);
    this.listeners.set(tag, handler);
    for (const [key, queue] of this.queued) {
      const [from, t] = splitKey(key);
      if (t !== tag) continue;
      this.queued.delete(key);
      for (const data of queue) handler(from, data);
    }
  }

  async broadcast(data: unknown, root: number): Promise<unknown> {
    this.checkPeer(root, 'root');
    const tag = this.nextTag('broadcast');
    this.count('broadcast', this.rank === root ? payloadBytes(data) * (this.size - 1) : 0);
    if (this.rank !== root) return this.recvTagged(root, tag);
    for (let r = 0; r < this.size; r++) if (r !== root) this.sendTagged(r, tag, data);
    return data;
  }

  allGather(data: unknown): Promise<unknown[]> {
    return this.gatherAll('allGather', data);
  }

  async allReduce(data: Float64Array, op: 'sum' | 'max' | 'min' = 'sum'): Promise<Float64Array> {
    if (!(data instanceof Float64Array))
      throw new DistVaeError('INVALID_ARGUMENT', `allReduce takes a Float64Array, got ${Object.prototype.toString.call(data)}`);
    const parts = (await this.gatherAll('allReduce', data)) as Float64Array[];
    parts.forEach((p, r) => {
      if (!(p instanceof Float64Array) || p.length !== data.length) {
        throw new DistVaeError(
          'INVALID_ARGUMENT',
          `allReduce: rank ${r} contributed ${p instanceof Float64Array ? p.length : typeof p} values, rank ${this.rank} ${data.length}; every rank must pass an array of the same length`,
        );
      }
    });
    const out = new Float64Array(parts[0]!);
    for (let r = 1; r < parts.length; r++) {
      const p = parts[r]!;
      if (op === 'sum') for (let i = 0; i < out.length; i++) out[i]! += p[i]!;
      else if (op === 'max') for (let i = 0; i < out.length; i++) out[i] = Math.max(out[i]!, p[i]!);
      else for (let i = 0; i < out.length; i++) out[i] = Math.min(out[i]!, p[i]!);
    }
    return out;
  }

  async neighbourExchange(toPrevious: unknown, toNext: unknown): Promise<{ previous: unknown; next: unknown }> {
    const tag = this.nextTag('neighbourExchange');
    const hasPrevious = this.rank > 0;
    const hasNext = this.rank + 1 < this.size;
    if (hasPrevious) this.sendTagged(this.rank - 1, `${tag}:up`, toPrevious);
    if (hasNext) this.sendTagged(this.rank + 1, `${tag}:down`, toNext);
    this.count('neighbourExchange', (hasPrevious ? payloadBytes(toPrevious) : 0) + (hasNext ? payloadBytes(toNext) : 0));
    const [previous, next] = await Promise.all([
      hasPrevious ? this.recvTagged(this.rank - 1, `${tag}:down`) : null,
      hasNext ? this.recvTagged(this.rank + 1, `${tag}:up`) : null,
    ]);
    return { previous, next };
  }

  async barrier(): Promise<void> {
    await this.gatherAll('barrier', null);
  }

  counters(): CommCounters {
    return structuredClone(this.sent);
  }

  private async gatherAll(kind: CommKind, data: unknown): Promise<unknown[]> {
    const tag = this.nextTag(kind);
    this.count(kind, payloadBytes(data) * (this.size - 1));
    for (let r = 0; r < this.size; r++) if (r !== this.rank) this.sendTagged(r, tag, data);
    const out = await Promise.all(Array.from({ length: this.size }, (_, r) => (r === this.rank ? data : this.recvTagged(r, tag))));
    return out;
  }

  private nextTag(kind: CommKind): string {
    return `${RESERVED}${kind}:${this.sequence++}`;
  }

  private count(kind: CommKind, bytes: number): void {
    this.sent[kind].calls++;
    this.sent[kind].bytes += bytes;
  }

  private sendTagged(to: number, tag: string, data: unknown): void {
    this.checkPeer(to, 'to');
    if (this.signal.aborted) throw abortedError(this.signal, 'run');
    if (to === this.rank) this.deliver(this.rank, tag, structuredClone(data));
    else this.transmit(to, tag, data);
  }

  private recvTagged(from: number, tag: string): Promise<unknown> {
    if (this.signal.aborted) return Promise.reject(abortedError(this.signal, 'run'));
    const key = keyOf(from, tag);
    const queue = this.queued.get(key);
    if (queue && queue.length > 0) {
      const data = queue.shift();
      if (queue.length === 0) this.queued.delete(key);
      return Promise.resolve(data);
    }
    return new Promise((resolve, reject) => {
      const list = this.waiting.get(key) ?? [];
      list.push({ resolve, reject });
      this.waiting.set(key, list);
    });
  }

  private checkPeer(r: number, field: string): void {
    if (!Number.isInteger(r) || r < 0 || r >= this.size) {
      throw new DistVaeError('INVALID_ARGUMENT', `${field} = ${r} is not a rank of this run: expected an integer in [0, ${this.size - 1}]`);
    }
  }
}

function keyOf(from: number, tag: string): string {
  return `${from}|${tag}`;
}

function splitKey(key: string): [number, string] {
  const bar = key.indexOf('|');
  return [Number(key.slice(0, bar)), key.slice(bar + 1)];
}

function checkUserTag(tag: string): void {
  if (typeof tag !== 'string' || tag.startsWith(RESERVED)) {
    throw new DistVaeError(
      'INVALID_ARGUMENT',
      `message tag ${JSON.stringify(tag)} is invalid: expected a string not starting with U+0000 (reserved for collectives)`,
    );
  }
}
