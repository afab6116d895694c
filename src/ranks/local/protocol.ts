// Messages between the coordinator and the ranks of a local group (threads or processes).
// Every message of a run carries the run number; a rank drops messages of runs other than
// its current one. Rank-to-rank messages travel through the coordinator (one ordered channel
// per rank, so a run's `start` always reaches a rank before anything else of that run), which
// also lets a rank be replaced without rewiring its peers.

import { DistVaeError, type ErrorCode } from '../../errors.js';
import type { ProgramRef } from '../program.js';

/** What a rank is told when it starts (worker data / environment). */
export interface RankInit {
  rank: number;
  threads: number;
  deviceId?: number;
}

export type ToRank =
  | { type: 'start'; run: number; size: number; program: ProgramRef; input: unknown }
  | { type: 'post'; run: number; data: unknown }
  | { type: 'peer'; run: number; from: number; tag: string; data: unknown }
  | { type: 'cancel'; run: number; reason: string }
  | { type: 'close' };

export type FromRank =
  | { type: 'ready' }
  | { type: 'post'; run: number; data: unknown }
  | { type: 'peer'; run: number; to: number; tag: string; data: unknown }
  | { type: 'done'; run: number; result: unknown; peakRssBytes?: number }
  | { type: 'failed'; run: number; error: SerializedError; peakRssBytes?: number };

export interface SerializedError {
  name: string;
  message: string;
  code?: ErrorCode;
  stack?: string;
}

export function serializeError(e: unknown): SerializedError {
  if (e instanceof DistVaeError) return { name: e.name, message: e.message, code: e.code, ...(e.stack ? { stack: e.stack } : {}) };
  if (e instanceof Error) return { name: e.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}) };
  return { name: 'Error', message: String(e) };
}

/** A rank's error as the coordinator sees it: the original code when it had one. */
export function deserializeError(e: SerializedError): Error {
  const err = e.code ? new DistVaeError(e.code, e.message) : new Error(e.message);
  err.name = e.name;
  if (e.stack) err.stack = e.stack;
  return err;
}

/** The ArrayBuffers under the typed arrays in `value` (plain objects and arrays walked), for a transfer list. */
export function transferables(value: unknown, out: Set<ArrayBuffer> = new Set()): ArrayBuffer[] {
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer) out.add(value.buffer);
  } else if (Array.isArray(value)) {
    for (const v of value) transferables(v, out);
  } else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value)) transferables(v, out);
  }
  return [...out];
}

/** Bytes of the typed arrays in `value` (what a message costs on the wire, headers aside). */
export function payloadBytes(value: unknown): number {
  if (ArrayBuffer.isView(value)) return value.byteLength;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + payloadBytes(v), 0);
  if (value !== null && typeof value === 'object') return Object.values(value).reduce((n: number, v) => n + payloadBytes(v), 0);
  return 0;
}
