// Ranks as child processes: a crash, an out-of-memory kill or a SIGKILL takes down only that
// rank, and each rank's peak memory can be measured. Messages travel over the IPC channel with
// V8 serialisation (typed arrays stay binary). A rank exits on its own when its parent goes
// away (the channel disconnects, or its parent watcher sees it re-parented while its thread is
// busy), so a dead coordinator leaves no orphans.

import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { forwardFilteredStderr } from '../../../runtime/native-output.js';
import { rankEntry, startRank, type StartRank } from '../host.js';
import { withAllocatorDefaults } from './allocator-env.js';

const entry = rankEntry(import.meta.url, 'process-entry');

/** The environment variable a rank process reads its RankInit from. */
export const RANK_INIT_ENV = 'DISTVAE_RANK_INIT';
/** The environment variable holding the coordinator's pid: a rank ends itself once that is no longer its parent. */
export const RANK_PARENT_ENV = 'DISTVAE_RANK_PARENT';

/**
 * Rank processes alive now. A rank busy in a decoder call reads its channel only when the call
 * returns, so it would outlive a coordinator that exits on a signal: the exit handler kills them.
 */
const liveRanks = new Set<ReturnType<typeof fork>>();

/** Kills every rank process of this process at once (a coordinator that must exit now, e.g. on a signal). */
export function killRankProcesses(): void {
  for (const child of liveRanks) child.kill('SIGKILL');
}
process.on('exit', killRankProcesses);

export const startProcessRank: StartRank = (init, events, signal) =>
  startRank(
    init,
    'child process',
    events,
    (ends) => {
      const child = fork(fileURLToPath(entry.url), [], {
        execArgv: entry.tsx ? ['--import', import.meta.resolve('tsx')] : [],
        serialization: 'advanced',
        // The allocator settings that make a rank's peak repeat (allocator-env.ts).
        env: { ...withAllocatorDefaults(process.env), [RANK_INIT_ENV]: JSON.stringify(init), [RANK_PARENT_ENV]: String(process.pid) },
        // stderr through a filter: a GPU provider's native layers (Dawn, the Vulkan loader, Mesa)
        // print their own lines there, shown only on request (runtime/native-output.ts).
        stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      });
      if (child.stderr) forwardFilteredStderr(child.stderr, (text) => process.stderr.write(text));
      let exited = false;
      let spawnError: Error | null = null;
      liveRanks.add(child);
      const gone = new Promise<void>((done) => child.once('exit', () => done()));
      child.on('message', ends.message);
      child.on('error', (e) => {
        spawnError = e;
      });
      child.on('exit', (code, signal) => {
        exited = true;
        liveRanks.delete(child);
        // A send to a dying child raises EPIPE before its exit is seen: the exit (code or signal)
        // is the cause then; an error is the cause only when the process never started.
        const cause =
          spawnError && child.pid === undefined
            ? `process failed: ${spawnError.message}`
            : signal
              ? `process killed by ${signal}`
              : code !== null
                ? `process exited with code ${code}`
                : `process failed: ${spawnError?.message ?? 'no exit code'}`;
        ends.exit(cause, spawnError);
      });
      return {
        rank: init.rank,
        pid: child.pid,
        send: (message) => {
          // A send racing the child's death fails with EPIPE in the callback; its exit reports the cause.
          if (!exited && child.connected) child.send(message, undefined, {}, () => undefined);
        },
        hold: (busy) => {
          // The stderr pipe holds the event loop like the channel does.
          const pipe = child.stderr as (NodeJS.ReadableStream & { ref?: () => void; unref?: () => void }) | null;
          if (busy) {
            child.ref();
            child.channel?.ref();
            pipe?.ref?.();
          } else {
            child.unref();
            child.channel?.unref();
            pipe?.unref?.();
          }
        },
        close: async (graceMs) => {
          if (exited) return;
          // An idle rank no longer holds the event loop (hold(false)): without this, a rank that
          // outlives the grace (a 2 GiB rank freeing its memory on a loaded machine) is killed,
          // the timer is done, the loop empties before its exit is seen, and the close never settles.
          child.ref();
          if (child.connected) child.send({ type: 'close' }, undefined, {}, () => undefined);
          const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
          await gone;
          clearTimeout(timer);
        },
        kill: () => {
          if (!exited) child.kill('SIGKILL');
        },
      };
    },
    signal,
  );
