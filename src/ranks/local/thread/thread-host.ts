// Ranks as worker threads: one onnxruntime session set per thread, messages by postMessage
// (buffers of routed messages are moved, not copied). A thread that throws outside a program,
// calls process.exit or is terminated ends with an 'exit' event, which is how the group learns
// it lost the rank.

import { Worker } from 'node:worker_threads';
import { rankEntry, startRank, type StartRank } from '../host.js';

const entry = rankEntry(import.meta.url, 'thread-entry');

/**
 * V8's young generation of a rank thread (MiB; 3 semi-spaces of 1 MiB). A rank's JS allocates
 * little besides tile buffers, which live outside the heap; left to V8 the young generation grew
 * towards its 48 MiB default over the first dozens of files of a `decode --out-dir`, which read
 * as +35 MiB of RSS between the 5th file and the 50th (bench/results/soak.json).
 */
const RANK_YOUNG_GENERATION_MB = 3;

/**
 * A worker cannot take tsx's --import flag, so under tsx a tiny bootstrap registers tsx's
 * loader inside the thread before importing the TypeScript entry.
 */
function bootstrap(): string {
  const load = `import(${JSON.stringify(entry.url)})`;
  const body = entry.tsx
    ? `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return ${load}; })`
    : load;
  return `${body}.catch((e) => { console.error(e); process.exit(70); });`;
}

export const startThreadRank: StartRank = (init, events, signal) =>
  startRank(
    init,
    'worker thread',
    events,
    (ends) => {
      const worker = new Worker(bootstrap(), {
        eval: true,
        workerData: init,
        resourceLimits: { maxYoungGenerationSizeMb: RANK_YOUNG_GENERATION_MB },
      });
      let exited = false;
      let lastError: Error | null = null;
      const gone = new Promise<void>((done) => worker.once('exit', () => done()));
      worker.on('message', ends.message);
      worker.on('error', (e) => {
        lastError = e;
      });
      worker.on('exit', (code) => {
        exited = true;
        ends.exit(lastError ? `thread threw ${lastError.name}: ${lastError.message}` : `thread exited with code ${code}`, lastError);
      });
      return {
        rank: init.rank,
        pid: undefined,
        send: (message, transfer = []) => {
          if (!exited) worker.postMessage(message, transfer);
        },
        hold: (busy) => (busy ? worker.ref() : worker.unref()),
        close: async (graceMs) => {
          if (exited) return;
          // Held until it is gone, as a process rank is (process-host.ts): a terminate past the
          // grace is otherwise awaited by nothing that keeps the event loop alive.
          worker.ref();
          worker.postMessage({ type: 'close' });
          const timer = setTimeout(() => void worker.terminate(), graceMs);
          await gone;
          clearTimeout(timer);
        },
        kill: () => void worker.terminate(),
      };
    },
    signal,
  );
