// Ranks as worker threads: one onnxruntime session set per thread, messages by postMessage
// (buffers of routed messages are moved, not copied). A thread that throws outside a program,
// calls process.exit or is terminated ends with an 'exit' event, which is how the group learns
// it lost the rank.

import { Worker } from 'node:worker_threads';
import { DistVaeError } from '../../../errors.js';
import { rankEntry, type RankHost, type StartRank } from '../host.js';
import type { FromRank } from '../protocol.js';

const entry = rankEntry(import.meta.url, 'thread-entry');

/**
 * A worker cannot take tsx's --import flag, so under tsx a tiny bootstrap registers tsx's
 * loader inside the thread before importing the TypeScript entry.
 */
function bootstrap(): string {
  const load = `import(${JSON.stringify(entry.url)})`;
  const body = entry.tsx ? `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return ${load}; })` : load;
  return `${body}.catch((e) => { console.error(e); process.exit(70); });`;
}

export const startThreadRank: StartRank = (init, events) =>
  new Promise((resolve, reject) => {
    const worker = new Worker(bootstrap(), { eval: true, workerData: init });
    let ready = false;
    let exited = false;
    let lastError: Error | null = null;
    const gone = new Promise<void>((done) => worker.once('exit', () => done()));
    const host: RankHost = {
      rank: init.rank,
      pid: undefined,
      send: (message, transfer = []) => {
        if (!exited) worker.postMessage(message, transfer);
      },
      hold: (busy) => (busy ? worker.ref() : worker.unref()),
      close: async (graceMs) => {
        if (exited) return;
        worker.postMessage({ type: 'close' });
        const timer = setTimeout(() => void worker.terminate(), graceMs);
        await gone;
        clearTimeout(timer);
      },
      kill: () => void worker.terminate(),
    };
    worker.on('message', (message: FromRank) => {
      if (!ready && message.type === 'ready') {
        ready = true;
        host.hold(false);
        resolve(host);
        return;
      }
      events.onMessage(message);
    });
    worker.on('error', (e) => {
      lastError = e;
    });
    worker.on('exit', (code) => {
      exited = true;
      const cause = lastError ? `thread threw ${lastError.name}: ${lastError.message}` : `thread exited with code ${code}`;
      if (!ready) reject(new DistVaeError('TRANSPORT_FAILED', `rank ${init.rank} (worker thread) failed to start: ${cause}`, { cause: lastError }));
      else events.onExit(cause);
    });
  });
