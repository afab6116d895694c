// What a process holds after a full GC, for the tests that check long runs do not grow
// (src/ranks/queue/soak.test.ts, src/session/soak.test.ts): open handles and timers, the abort
// listeners on a caller's signal, heap and ArrayBuffer bytes — and how a series of them grew,
// allowing for what comes and goes on its own: ioredis' reply parser keeps a buffer pool (up to
// 3x the largest chunked reply) that it shrinks on a 50 ms interval timer of its own, so a
// snapshot may hold that pool and that timer or not; a leak grows with every step instead.

import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

export interface Retained {
  /** Active handles and timers by kind, sorted (one-shot file system requests in flight left out). */
  resources: string[];
  /** Listeners for 'abort' on the signal given. */
  abortListeners: number;
  heapBytes: number;
  arrayBufferBytes: number;
}

/** What this process holds now, after a full GC. */
export function retained(signal?: AbortSignal): Retained {
  // V8 frees dead ArrayBuffers' memory on a background thread after a full GC, and counts it
  // freed only when that sweep ends: under load, a first GC's snapshot still showed 2.6 MiB of
  // one file's dead tiles (CI: "buffers grew by 196 KiB"). A second GC waits for the first sweep.
  gc();
  gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return {
    resources: process
      .getActiveResourcesInfo()
      .filter((r) => !r.startsWith('FSReq'))
      .sort(),
    abortListeners: signal ? getEventListeners(signal, 'abort').length : 0,
    heapBytes: heapUsed,
    arrayBufferBytes: arrayBuffers,
  };
}

/** How much the floor of `key` rose from snapshots [from, from + window) to the last `window`. */
export function floorGrowth(snapshots: readonly Retained[], key: 'heapBytes' | 'arrayBufferBytes', from: number, window = 4): number {
  const floor = (s: readonly Retained[]) => Math.min(...s.map((r) => r[key]));
  return floor(snapshots.slice(-window)) - floor(snapshots.slice(from, from + window));
}

/** Kinds of handle or timer of which `later` holds more than one more than `earlier` (one comes and goes on its own). */
export function grownResources(earlier: Retained, later: Retained): string[] {
  const count = (r: Retained) => r.resources.reduce((m, k) => m.set(k, (m.get(k) ?? 0) + 1), new Map<string, number>());
  const [before, after] = [count(earlier), count(later)];
  return [...after].filter(([kind, n]) => n > (before.get(kind) ?? 0) + 1).map(([kind, n]) => `${kind}: ${before.get(kind) ?? 0} -> ${n}`);
}
