// `localGroup`: ranks on this machine, as worker threads or child processes, behind the
// RankGroup contract (and SPMD rank programs with a communicator). Options are checked here,
// before any rank starts.

import { reason, type Reason, refuse } from '../../errors.js';
import { LocalGroup, type LocalGroupOptions } from './local-group.js';
import { startProcessRank } from './process/process-host.js';
import { startThreadRank } from './thread/thread-host.js';

/** How a local rank runs: a worker thread, or a child process (a crash stays in its rank; per-rank peak RSS). */
export const ISOLATIONS = ['thread', 'process'] as const;

/**
 * A group of `ranks` ranks on this machine (threads by default). Options are checked here
 * (INVALID_ARGUMENT with reasons); ranks start on `start()` or the first decode, and end on
 * `close()`.
 *
 * @example
 * const group = localGroup({ ranks: 4, isolation: 'process', threadsPerRank: 2 });
 */
export function localGroup(options: LocalGroupOptions): LocalGroup {
  const reasons: Reason[] = [];
  const { ranks, isolation = 'thread', threadsPerRank, devices } = options;
  if (!Number.isSafeInteger(ranks) || ranks < 1 || ranks > 1024)
    reasons.push(reason('RANKS_INVALID', 'ranks', ranks, 'an integer in [1, 1024]'));
  if (!(ISOLATIONS as readonly string[]).includes(isolation))
    reasons.push(reason('ISOLATION_INVALID', 'isolation', isolation, `one of ${ISOLATIONS.join(', ')}`));
  if (threadsPerRank !== undefined && (!Number.isSafeInteger(threadsPerRank) || threadsPerRank < 1 || threadsPerRank > 1024)) {
    reasons.push(reason('THREADS_INVALID', 'threadsPerRank', threadsPerRank, 'an integer in [1, 1024]'));
  }
  if (devices !== undefined) {
    if (!Array.isArray(devices) || devices.length > ranks)
      reasons.push(reason('DEVICES_INVALID', 'devices', devices, `an array of at most ${ranks} device ids (one per rank)`));
    else
      devices.forEach((d, i) => {
        if (d !== undefined && (!Number.isSafeInteger(d) || d < 0))
          reasons.push(reason('DEVICE_INVALID', `devices[${i}]`, d, 'a non-negative integer device id (or undefined)'));
      });
  }
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  return new LocalGroup(options, isolation === 'process' ? startProcessRank : startThreadRank);
}
