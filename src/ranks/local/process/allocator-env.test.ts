// The allocator settings distvae gives the processes it starts: added where the parent sets none,
// a value the user set kept, none with DISTVAE_RANK_ALLOCATOR=inherit. (That they make a rank's
// peak repeat is measured, not tested: bench/rank-allocator.ts.)

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RANK_ALLOCATOR_DEFAULTS, RANK_ALLOCATOR_ENV, withAllocatorDefaults } from './allocator-env.js';

test('the glibc settings are added to an environment that sets none, and the parent is not changed', () => {
  const parent = { PATH: '/usr/bin' };
  const env = withAllocatorDefaults(parent);
  assert.equal(env['PATH'], '/usr/bin');
  assert.equal(env['MALLOC_ARENA_MAX'], '1');
  for (const [name, value] of Object.entries(RANK_ALLOCATOR_DEFAULTS)) assert.equal(env[name], value);
  assert.deepEqual(parent, { PATH: '/usr/bin' });
});

test('a value the user set is kept; the settings it did not name are still added', () => {
  const env = withAllocatorDefaults({ MALLOC_ARENA_MAX: '4', MALLOC_MMAP_THRESHOLD_: '' });
  assert.equal(env['MALLOC_ARENA_MAX'], '4');
  // Set, even if empty: the user's, not replaced.
  assert.equal(env['MALLOC_MMAP_THRESHOLD_'], '');
  assert.equal(env['MALLOC_TRIM_THRESHOLD_'], RANK_ALLOCATOR_DEFAULTS['MALLOC_TRIM_THRESHOLD_']);
});

test('DISTVAE_RANK_ALLOCATOR=inherit starts processes with the environment as it is', () => {
  const env = withAllocatorDefaults({ [RANK_ALLOCATOR_ENV]: 'inherit', PATH: '/bin' });
  assert.deepEqual(env, { [RANK_ALLOCATOR_ENV]: 'inherit', PATH: '/bin' });
});
