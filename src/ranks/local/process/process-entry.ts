// Entry module of a rank running as a child process. Its peak memory is read from
// /proc/self/status (VmHWM), reset at the start of every run through /proc/self/clear_refs
// where Linux allows it, else the process's lifetime peak. It ends with its parent: on the IPC
// channel's disconnect, or through the parent watcher while its thread is busy.

import { readFileSync, writeFileSync } from 'node:fs';
import { serveRank } from '../rank-runtime.js';
import type { FromRank, RankInit, ToRank } from '../protocol.js';
import { watchParent } from './parent-watch.js';
import { RANK_INIT_ENV, RANK_PARENT_ENV } from './process-host.js';

function resetPeakRss(): void {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // Not Linux, or not permitted: the lifetime peak is reported instead.
  }
}

function peakRssBytes(): number {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // Fall through to the portable lifetime peak.
  }
  return process.resourceUsage().maxRSS * 1024;
}

process.on('disconnect', () => process.exit(0));
watchParent(Number(process.env[RANK_PARENT_ENV]));
serveRank({
  init: JSON.parse(process.env[RANK_INIT_ENV]!) as RankInit,
  // A parent that is gone (killed, interrupted) closes the channel under a send in flight: the
  // callback takes that EPIPE, which would otherwise be an unhandled 'error' event; the
  // 'disconnect' handler then ends this rank.
  send: (message: FromRank) => {
    if (process.connected) process.send!(message, undefined, {}, () => undefined);
  },
  onMessage: (handler) => process.on('message', (message: ToRank) => handler(message)),
  peakRss: { reset: resetPeakRss, read: peakRssBytes },
  exit: () => process.disconnect(),
});
