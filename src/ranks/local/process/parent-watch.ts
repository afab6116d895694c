// A rank process ends itself when its coordinator is gone, even while its own thread is inside a
// decoder call or a VAE load: onnxruntime runs synchronously, so the IPC 'disconnect' event is
// seen only when the call returns (minutes at 2048²). A small watcher thread notices the parent
// change (the rank is re-parented to init or a subreaper) and kills the whole process.

import { Worker } from 'node:worker_threads';

/** How often the watcher looks at the parent pid; a dead coordinator's ranks are gone within about this long. */
export const PARENT_WATCH_MS = 200;

// CommonJS source for an eval'd worker: no module resolution, so it runs the same under tsx and compiled.
const WATCHER = `
const { workerData } = require('node:worker_threads');
setInterval(() => {
  if (process.ppid !== workerData.parent) process.kill(process.pid, 'SIGKILL');
}, workerData.intervalMs);
`;

/**
 * Starts the watcher for `parent` (the coordinator's pid, given by the host: a parent already
 * gone when this rank starts is noticed too); it never keeps the process alive.
 */
export function watchParent(parent: number, intervalMs = PARENT_WATCH_MS): void {
  const watcher = new Worker(WATCHER, { eval: true, workerData: { parent, intervalMs } });
  watcher.unref();
}
