// Band arithmetic (even and odd splits, more ranks than rows, halos that reach past the next
// band) and row slicing of images and of flattened tokens.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { ratio } from '../../graph/ratio.js';
import { seededTensor } from '../../tensor.js';
import { bandRows, haloRows, haloSources, rowsForReader, splitBands } from './bands.js';
import { concatAxis, sliceRows } from './rows.js';

test('bands: as even as possible, taller first, whole latent rows', () => {
  assert.deepEqual(
    splitBands(7, 3, 8).map((b) => [b.start, b.end]),
    [
      [0, 3],
      [3, 5],
      [5, 7],
    ],
  );
  assert.deepEqual(
    splitBands(4, 4, 8).map((b) => [b.start, b.end]),
    [
      [0, 1],
      [1, 2],
      [2, 3],
      [3, 4],
    ],
  );
  assert.deepEqual(
    splitBands(5, 1, 8).map((b) => [b.start, b.end]),
    [[0, 5]],
  );
  // At 8 output rows per latent row the bands' output rows are multiples of 8.
  assert.deepEqual(
    splitBands(7, 3, 8).map((b) => bandRows(b, ratio(8))),
    [
      { from: 0, to: 24 },
      { from: 24, to: 40 },
      { from: 40, to: 56 },
    ],
  );
});

test('more ranks than latent rows is refused, naming both numbers', () => {
  assert.throws(
    () => splitBands(3, 4, 8),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'INVALID_ARGUMENT' &&
      /4 ranks cannot share 3 latent rows \(24 output rows\)/.test(e.message) &&
      e.reasons[0]!.code === 'TOO_MANY_RANKS' &&
      e.reasons[0]!.value === 4,
  );
  assert.throws(() => splitBands(3, 0, 8), /ranks = 0/);
});

test('halos: clamped at the image border, reaching past thin neighbouring bands', () => {
  const bands = splitBands(6, 4, 2); // [0,2) [2,4) [4,5) [5,6)
  assert.deepEqual(haloRows(bands[0]!, ratio(1), 6, ratio(2)), { from: 0, to: 6 });
  assert.deepEqual(haloRows(bands[2]!, ratio(1, 2), 6, ratio(2)), { from: 7, to: 11 });
  // A halo of 2 latent rows around band 2 ([4,5)) needs rows of bands 1 and 3 only (band 0 ends at 2).
  assert.deepEqual(haloSources(bands, bands[2]!, ratio(2)), [1, 3]);
  // Three rows reach band 0's last row too.
  assert.deepEqual(haloSources(bands, bands[2]!, ratio(3)), [0, 1, 3]);
  assert.deepEqual(rowsForReader(bands[0]!, bands[2]!, ratio(3), 6, ratio(1)), { from: 1, to: 2 });
  assert.deepEqual(haloSources(bands, bands[1]!, ratio(0)), []);
  // Half a latent row at 2x is one row of the neighbour.
  assert.deepEqual(rowsForReader(bands[1]!, bands[2]!, ratio(1, 2), 6, ratio(2)), { from: 7, to: 8 });
});

test('rows of images and of flattened tokens slice and join back', () => {
  const image = seededTensor([2, 3, 5, 4], 1);
  const parts = [sliceRows(image, 2, 1, 0, 2), sliceRows(image, 2, 1, 2, 3), sliceRows(image, 2, 1, 3, 5)];
  assert.deepEqual(concatAxis(parts, 2), image);
  // (B, C, H·W) with rows of W = 4 tokens, and (B, H·W, C) with tokens on axis 1.
  const tokens = seededTensor([2, 3, 20], 2);
  assert.deepEqual(concatAxis([sliceRows(tokens, 2, 4, 0, 3), sliceRows(tokens, 2, 4, 3, 5)], 2), tokens);
  const secondRow = Array.from({ length: 6 }, (_, o) => [...tokens.data.slice(o * 20 + 4, o * 20 + 8)]).flat();
  assert.deepEqual(sliceRows(tokens, 2, 4, 1, 2), { dims: [2, 3, 4], data: Float32Array.from(secondRow) });
  const queries = seededTensor([1, 20, 3], 3);
  assert.deepEqual(concatAxis([sliceRows(queries, 1, 4, 0, 1), sliceRows(queries, 1, 4, 1, 5)], 1), queries);
  assert.throws(() => sliceRows(image, 2, 1, 3, 6), /rows \[3, 6\)/);
});
