// The one output check: NON_FINITE_OUTPUT (a runtime failure) naming the piece and the first bad
// value's (b, c, [f,] y, x), within the piece or, given a window, in output rows and columns.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isRuntimeFailure } from '../errors.js';
import { checkFiniteOutput } from './finite.js';

const piece = (dims: number[], bad: number, value: number) => {
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(0.5);
  data[bad] = value;
  return { dims, data };
};

test('a finite piece passes; NaN and ±Infinity fail as NON_FINITE_OUTPUT, a runtime failure, at their (b, c, [f,] y, x)', () => {
  checkFiniteOutput({ dims: [1, 3, 4, 5], data: new Float32Array(60).fill(-3e38) }, 'tile 0');
  assert.ok(isRuntimeFailure('NON_FINITE_OUTPUT'));
  // (b, c, y, x) = (1, 2, 3, 4) of a [2, 3, 4, 5] piece: ((1·3 + 2)·4 + 3)·5 + 4.
  assert.throws(() => checkFiniteOutput(piece([2, 3, 4, 5], ((1 * 3 + 2) * 4 + 3) * 5 + 4, NaN), 'tile 7 (rank 1)'), {
    code: 'NON_FINITE_OUTPUT',
    message: /^tile 7 \(rank 1\) came out non-finite: NaN at \(b, c, y, x\) = \(1, 2, 3, 4\) of tile 7 \(rank 1\);/,
  });
  // (b, c, f, y, x) = (0, 1, 2, 0, 3) of a [1, 2, 3, 2, 4] piece.
  assert.throws(() => checkFiniteOutput(piece([1, 2, 3, 2, 4], ((1 * 3 + 2) * 2 + 0) * 4 + 3, -Infinity), 'temporal chunk 2'), {
    code: 'NON_FINITE_OUTPUT',
    message: /^temporal chunk 2 came out non-finite: -Infinity at \(b, c, f, y, x\) = \(0, 1, 2, 0, 3\)/,
  });
});

test('with a window only the rows and columns that land are checked, and the position is in output rows and columns', () => {
  // A 6 × 6 tile whose core is rows [1, 5) × cols [2, 6), landing at output (10, 20).
  const core = { sy: 1, sx: 2, h: 4, w: 4, y: 10, x: 20 };
  checkFiniteOutput(piece([1, 1, 6, 6], 0 * 6 + 0, Infinity), 'tile 3', core);
  assert.throws(() => checkFiniteOutput(piece([1, 1, 6, 6], 3 * 6 + 4, Infinity), 'tile 3', core), {
    code: 'NON_FINITE_OUTPUT',
    message: /^tile 3 came out non-finite: Infinity at \(b, c, y, x\) = \(0, 0, 12, 22\) of the output/,
  });
});
