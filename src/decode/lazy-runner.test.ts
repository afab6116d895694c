import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Tensor } from '../tensor.js';
import { LazyTileRunner } from './lazy-runner.js';
import type { TileRunner } from '../families/runtime-types.js';

function countingRunner(log: string[]): TileRunner {
  return {
    decode: async (t: Tensor) => {
      log.push('decode');
      return t;
    },
    dispose: async () => {
      log.push('dispose');
    },
  };
}

const tile: Tensor = { dims: [1, 1, 1, 1], data: new Float32Array([2]) };

test('builds once, on the first decode, and disposes what it built', async () => {
  const log: string[] = [];
  const runner = new LazyTileRunner(async () => {
    log.push('create');
    return countingRunner(log);
  });
  assert.equal(runner.built, false);
  await runner.dispose();
  assert.deepEqual(log, []);
  await Promise.all([runner.decode(tile), runner.decode(tile)]);
  assert.equal(runner.built, true);
  await runner.dispose();
  assert.deepEqual(log, ['create', 'decode', 'decode', 'dispose']);
});

test('a failed build is reported by the decode and tried again by the next one', async () => {
  let attempts = 0;
  const runner = new LazyTileRunner(async () => {
    attempts++;
    if (attempts === 1) throw new Error('no session');
    return countingRunner([]);
  });
  await assert.rejects(runner.decode(tile), /no session/);
  assert.equal(runner.built, false);
  assert.deepEqual(await runner.decode(tile), tile);
  assert.equal(attempts, 2);
});
