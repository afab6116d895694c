// Refuses a local rank count this machine cannot run: every rank loads its own copy of the VAE
// (weights in JS and in onnxruntime), so ranks × that must fit the memory budget, and far more
// ranks than cores only queue on them.

import { availableParallelism } from 'node:os';
import { reason, refuse, type Reason } from '../errors.js';
import type { LoadOptions } from '../decode/vae.js';
import type { VaeSpec } from '../families/types.js';
import { decoderWeightBytes } from '../families/registry.js';
import { defaultMemoryBudget, formatBytes } from '../runtime/memory-budget.js';

/** Resident bytes of a rank before its VAE: node, the rank runtime and onnxruntime (measured: about 60 MiB for a thread, 110 MiB for a process). */
const RANK_FIXED_BYTES = 64 * 2 ** 20;
/** Copies of the weights a decoding rank holds: its JS tensors and the session's initialisers. */
const RANK_WEIGHT_COPIES = 2;
/** Ranks per core beyond which more ranks only wait for cores. */
const RANKS_PER_CORE = 8;

/**
 * Throws INVALID_ARGUMENT when `ranks` ranks of `vae` (the `requested` ones, capped at one per
 * tile) exceed this machine's cores or memory budget; `field` names the ranks option in the reasons.
 */
export function checkRankMemory(
  vae: VaeSpec,
  ranks: number,
  requested: number,
  loadOptions: LoadOptions,
  budget = defaultMemoryBudget(),
  field = 'ranks',
): void {
  if (ranks <= 1) return;
  const cores = availableParallelism();
  const maxByCores = Math.max(16, RANKS_PER_CORE * cores);
  const perRank = RANK_FIXED_BYTES + RANK_WEIGHT_COPIES * decoderWeightBytes(vae);
  const reasons: Reason[] = [];
  if (ranks > maxByCores) {
    reasons.push(
      reason(
        'RANKS_TOO_MANY',
        field,
        requested,
        `at most ${maxByCores} on ${cores} core(s)`,
        `${field} ${requested}: ${ranks} ranks${ranks < requested ? ' (one per tile)' : ''} would share ${cores} core(s); at most ${maxByCores} here`,
      ),
    );
  }
  if (ranks * perRank > budget && loadOptions.provider === undefined) {
    const fit = Math.max(1, Math.floor(budget / perRank));
    reasons.push(
      reason(
        'RANKS_OVER_BUDGET',
        field,
        requested,
        `at most ${fit} rank(s) of about ${formatBytes(perRank)} each`,
        `${field} ${requested}: each of ${ranks} ranks loads its own VAE (about ${formatBytes(perRank)}), ${formatBytes(ranks * perRank)} in all, more than the memory budget of ${formatBytes(budget)}; at most ${fit} rank(s) fit`,
      ),
    );
  }
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
}
