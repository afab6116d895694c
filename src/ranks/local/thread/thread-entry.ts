// Entry module of a rank running as a worker thread.

import { parentPort, workerData } from 'node:worker_threads';
import { serveRank } from '../rank-runtime.js';
import type { RankInit, ToRank } from '../protocol.js';

const port = parentPort!;
serveRank({
  init: workerData as RankInit,
  send: (message, transfer) => port.postMessage(message, transfer),
  onMessage: (handler) => port.on('message', (message: ToRank) => handler(message)),
  exit: () => process.exit(0),
});
