// The coordinator's handle on one rank of a local group, whatever runs it (a worker thread or
// a child process), and how a rank's entry module is found: next to the transport's own
// module, as a .ts source under tsx (tests, development) or as compiled .js (the package).

import type { FromRank, RankInit, ToRank } from './protocol.js';

export interface RankHost {
  readonly rank: number;
  /** OS process id of the rank (process isolation); undefined for threads. */
  readonly pid: number | undefined;
  /** Sends a message; `transfer` moves the listed buffers where the transport can (threads). */
  send(message: ToRank, transfer?: ArrayBuffer[]): void;
  /** Whether the rank keeps this process alive (only while a run is in flight). */
  hold(busy: boolean): void;
  /** Asks the rank to end, and ends it forcibly after `graceMs`; resolves once it is gone. */
  close(graceMs: number): Promise<void>;
  /** Ends the rank now (SIGKILL / terminate). */
  kill(): void;
}

export interface RankHostEvents {
  onMessage(message: FromRank): void;
  /** Called once when the rank ends for any reason, with the reason in words. */
  onExit(cause: string): void;
}

/** Starts a rank and resolves once it reported ready (rejects when it dies first). */
export type StartRank = (init: RankInit, events: RankHostEvents) => Promise<RankHost>;

/** The entry module `name` next to `base` (an import.meta.url), and the tsx loader it needs when it is a source file. */
export function rankEntry(base: string, name: string): { url: string; tsx: boolean } {
  const tsx = base.endsWith('.ts');
  return { url: new URL(`./${name}.${tsx ? 'ts' : 'js'}`, base).href, tsx };
}
