// `queueGroup`: ranks as run jobs on a BullMQ queue in Redis, served by `distvae worker`
// processes on any number of machines. Options (and the Redis URL) are checked here, before
// anything connects.

import { reason, type Reason, refuse } from '../../errors.js';
import { QueueGroup, type QueueGroupOptions } from './queue-group.js';

/**
 * Ranks as run jobs on a BullMQ queue in Redis, served by `distvae worker` processes (or
 * `startQueueWorker`) on any number of machines. Options and the URL are checked here, before
 * anything connects; `connect()` reaches Redis (TRANSPORT_FAILED when it cannot).
 *
 * @example
 * const group = queueGroup({ connection: 'redis://:secret@10.0.0.5:6379', ranks: 4, timeoutMs: 120_000 });
 * await group.connect();
 */
export function queueGroup(options: QueueGroupOptions): QueueGroup {
  const reasons: Reason[] = [];
  const { ranks, queue, timeoutMs, tileTtlMs, connectTimeoutMs, cleanupTimeoutMs } = options;
  if (ranks !== undefined && (!Number.isSafeInteger(ranks) || ranks < 1 || ranks > 1024))
    reasons.push(reason('RANKS_INVALID', 'ranks', ranks, 'an integer in [1, 1024]'));
  if (queue !== undefined && (typeof queue !== 'string' || !/^[\w.-]{1,100}$/.test(queue)))
    reasons.push(reason('QUEUE_INVALID', 'queue', queue, 'a name of 1–100 letters, digits, "_", "." or "-"'));
  const durations = { timeoutMs, tileTtlMs, connectTimeoutMs, cleanupTimeoutMs };
  for (const [field, value] of Object.entries(durations)) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1))
      reasons.push(reason('DURATION_INVALID', field, value, 'a whole number of milliseconds ≥ 1'));
  }
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  return new QueueGroup(options);
}
