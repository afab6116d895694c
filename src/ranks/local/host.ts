// The coordinator's handle on one rank of a local group, whatever runs it (a worker thread or
// a child process), the start handshake both share (ready, or the cause it died of), and how a
// rank's entry module is found: next to the transport's own
// module, as a .ts source under tsx (tests, development) or as compiled .js (the package).

import { DistVaeError } from '../../errors.js';
import type { FromRank, RankInit, ToRank } from './protocol.js';

export interface RankHost {
  readonly rank: number;
  /** OS process id of the rank (process isolation); undefined for threads. */
  readonly pid: number | undefined;
  /** Sends a message; `transfer` moves the listed buffers where the transport can (threads). */
  send(message: ToRank, transfer?: ArrayBuffer[]): void;
  /** Whether the rank keeps this process alive (only while a run is in flight). */
  hold(busy: boolean): void;
  /**
   * Asks the rank to end, and ends it forcibly after `graceMs`; resolves once it is gone. The
   * rank holds this process until then, whatever hold() said last: a close awaited past its
   * grace timer must not be left pending by an emptied event loop.
   */
  close(graceMs: number): Promise<void>;
  /** Ends the rank now (SIGKILL / terminate). */
  kill(): void;
}

export interface RankHostEvents {
  onMessage(message: FromRank): void;
  /** Called once when the rank ends for any reason, with the reason in words. */
  onExit(cause: string): void;
}

/** Starts a rank and resolves once it reported ready (rejects when it dies first); `signal` ends a rank still starting. */
export type StartRank = (init: RankInit, events: RankHostEvents, signal?: AbortSignal) => Promise<RankHost>;

/** The entry module `name` next to `base` (an import.meta.url), and the tsx loader it needs when it is a source file. */
export function rankEntry(base: string, name: string): { url: string; tsx: boolean } {
  const tsx = base.endsWith('.ts');
  return { url: new URL(`./${name}.${tsx ? 'ts' : 'js'}`, base).href, tsx };
}

/** What a transport reports about a rank it started: each message, and its exit once. */
export interface RankEnds {
  message(message: FromRank): void;
  /** The rank ended, `cause` in words; `error` is what the transport saw, if anything. */
  exit(cause: string, error: Error | null): void;
}

/**
 * Starts a rank with `spawn` (which builds its host and wires its messages and exit to the ends
 * given) and resolves once the rank reported ready: the first 'ready' lets go of this process,
 * every later message goes to `events`; an exit before 'ready' rejects with TRANSPORT_FAILED
 * naming `what` ran the rank, a later one is reported to `events`. Aborting `signal` before
 * 'ready' ends the rank at once (a group closed while its ranks still load: a coordinator
 * interrupted then need not wait for them).
 */
export function startRank(
  init: RankInit,
  what: string,
  events: RankHostEvents,
  spawn: (ends: RankEnds) => RankHost,
  signal?: AbortSignal,
): Promise<RankHost> {
  return new Promise((resolve, reject) => {
    let ready = false;
    const onAbort = () => {
      if (!ready) host.kill();
    };
    const host: RankHost = spawn({
      message: (message) => {
        if (!ready && message.type === 'ready') {
          ready = true;
          signal?.removeEventListener('abort', onAbort);
          host.hold(false);
          resolve(host);
          return;
        }
        events.onMessage(message);
      },
      exit: (cause, error) => {
        signal?.removeEventListener('abort', onAbort);
        if (!ready) reject(new DistVaeError('TRANSPORT_FAILED', `rank ${init.rank} (${what}) failed to start: ${cause}`, { cause: error }));
        else events.onExit(cause);
      },
    });
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}
