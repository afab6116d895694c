// The contract of a rank program: an SPMD function every rank of a local group runs with its
// own input, a communicator for point-to-point messages and collectives among the ranks, a
// message channel to the coordinator, and a per-rank cache of loaded VAEs. Programs are named
// by module URL and export name (functions cannot cross threads or processes). Writing one:
//
//   // bands.ts — runs on every rank
//   export async function bandDecode(ctx: RankContext, input: BandInput): Promise<Band> {
//     const vae = await ctx.loadVae(input.vae);                  // loaded once per rank, cached
//     const sums = await ctx.comm.allReduce(localSums, 'sum');    // the same bits on every rank
//     const { previous, next } = await ctx.comm.neighbourExchange(firstRows, lastRows);
//     ctx.post({ done: 1 });                                      // to the coordinator's onPost
//     return band;                                                // one result per rank
//   }
//   // coordinator
//   const bands = await group.run<Band>(programRef(new URL('../dist/bands.js', import.meta.url), 'bandDecode'),
//     (rank) => ({ vae: { source: vae.source, loadOptions: vae.loadOptions, hash: vae.contentHash() }, rows: rowsOf(rank) }),
//     { signal, onPost: (rank, data) => ... });
//
// A rank that throws or dies fails `run` with RANK_FAILED naming it (the others are cancelled:
// their pending `recv`s reject with ABORTED); `group.launch` gives the lower-level handle
// (per-rank outcomes, posts to running ranks) the tile decode uses to re-deal lost work.

import type { LoadOptions, Vae } from '../decode/vae.js';
import type { Encoder } from '../encode/encoder.js';
import type { VaeSource } from '../sources/vae-source.js';

/** Where a rank finds a program: an ES module URL (file:) and the name of its export. */
export interface ProgramRef {
  module: string;
  export: string;
}

/**
 * A program reference from the URL of the module that defines it, e.g.
 * `programRef(new URL('../dist/bands.js', import.meta.url), 'bandDecode')`. Under tsx the `.js`
 * URL of a TypeScript source resolves to the `.ts` file, exactly like a static import.
 */
export function programRef(module: URL | string, exportName: string): ProgramRef {
  return { module: typeof module === 'string' ? module : module.href, export: exportName };
}

/** One ProgramRef per export named, keyed by that name (a module of several rank programs). */
export function programRefs<N extends string>(module: URL | string, exportNames: readonly N[]): Record<N, ProgramRef> {
  return Object.fromEntries(exportNames.map((name) => [name, programRef(module, name)])) as Record<N, ProgramRef>;
}

/** A VAE a rank can load: plain data plus the content hash the loaded VAE must have. */
export interface VaeRef {
  source: VaeSource;
  loadOptions: LoadOptions;
  hash: string;
  /** Which half: the decoder (absent) or the encoder (`ctx.loadEncoder`; encoder tiles go through the same tile program). */
  part?: 'encoder';
}

/** Calls and payload bytes (typed-array bytes) a rank sent, by kind of operation. */
export type CommCounters = Record<CommKind, { calls: number; bytes: number }>;
export type CommKind = 'send' | 'broadcast' | 'allGather' | 'allReduce' | 'neighbourExchange' | 'barrier';

/**
 * Messages among the ranks of one run. Payloads are structured-cloneable values (typed arrays
 * travel as binary). Every rank must call the collectives in the same order (SPMD); results
 * are deterministic: reductions combine contributions in rank order, so every rank gets the
 * same bits on every run.
 */
export interface Communicator {
  readonly rank: number;
  readonly size: number;
  /** Sends `data` to rank `to` (a copy; the sender keeps its own). */
  send(to: number, data: unknown, tag?: string): void;
  /** The next message from rank `from` with `tag` (FIFO per sender and tag). */
  recv(from: number, tag?: string): Promise<unknown>;
  /** Hands every message with `tag` to `handler` as it arrives (instead of `recv`), including ones already waiting. */
  listen(tag: string, handler: (from: number, data: unknown) => void): void;
  /** `data` of rank `root` on every rank. */
  broadcast(data: unknown, root: number): Promise<unknown>;
  /** Every rank's `data`, indexed by rank. */
  allGather(data: unknown): Promise<unknown[]>;
  /** Element-wise reduction of equally long arrays over all ranks, combined in rank order. */
  allReduce(data: Float64Array, op?: 'sum' | 'max' | 'min'): Promise<Float64Array>;
  /** Sends to rank − 1 and rank + 1 and returns what they sent back (null past either end). */
  neighbourExchange(toPrevious: unknown, toNext: unknown): Promise<{ previous: unknown; next: unknown }>;
  barrier(): Promise<void>;
  /** What this rank sent so far in this run. */
  counters(): CommCounters;
}

export interface RankContext {
  readonly rank: number;
  readonly size: number;
  /** Intra-op threads and device id this rank runs decoders with (the group's settings). */
  readonly threads: number;
  readonly deviceId: number | undefined;
  readonly comm: Communicator;
  /** Aborted when the coordinator cancels the run (abort, a failed rank, close). */
  readonly signal: AbortSignal;
  /** Sends a message to the coordinator; typed arrays in it are moved, not copied (do not reuse them). */
  post(data: unknown): void;
  /** Receives the coordinator's messages in order (also those that arrived before the call). */
  onMessage(handler: (data: unknown) => void): void;
  /**
   * The VAE `ref` names, loaded with this rank's threads and device and cached across runs;
   * refuses one whose content hash differs from `ref.hash`.
   */
  loadVae(ref: VaeRef): Promise<Vae>;
  /** The encoder `ref` names (`ref.part` 'encoder'), loaded and cached as `loadVae` loads a decoder. */
  loadEncoder(ref: VaeRef): Promise<Encoder>;
}

/** A rank program: runs on every rank of a run; its result goes back to the coordinator. */
export type RankProgram<I = unknown, O = unknown> = (ctx: RankContext, input: I) => Promise<O>;
