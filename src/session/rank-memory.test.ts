// The per-rank memory check of local ranks: rank counts this machine cannot hold are refused.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import { checkRankMemory } from './rank-memory.js';

test('rank counts the machine cannot hold are refused with the per-rank memory and the budget', () => {
  const vae = planningVae('autoencoder-kl', undefined);
  assert.throws(
    () => checkRankMemory(vae, 1024, 1024, {}, 2 ** 30, '--ranks'),
    (e: Error & { reasons?: { code: string }[] }) =>
      e.reasons!.some((r) => r.code === 'RANKS_OVER_BUDGET') &&
      /--ranks 1024: each of 1024 ranks loads its own VAE \(about \d+ MiB\)/.test(e.message),
  );
  assert.doesNotThrow(() => checkRankMemory(vae, 1, 1024, {}, 2 ** 30));
});
