import assert from 'node:assert/strict';
import { test } from 'node:test';
import { explore, fieldValue, MAX_TILES_DRAWN, type ExplorerInput } from './explorer-model.js';

const base: ExplorerInput = {
  family: 'autoencoder-kl',
  height: 1024,
  width: 1536,
  frames: 1,
  windowHeight: 512,
  windowWidth: 512,
  overlapHeight: 128,
  overlapWidth: 128,
  ranks: 3,
};

test('an accepted request gives the plan report the figure is drawn from', () => {
  const r = explore(base);
  assert.equal(r.kind, 'plan');
  if (r.kind !== 'plan') return;
  assert.deepEqual([r.report.tiles, r.report.rows, r.report.columns, r.report.ranks.length], [12, 3, 4, 3]);
});

test("refusals carry the planner's reasons, window first, then overlap, then ranks", () => {
  const window = explore({ ...base, windowHeight: 100 });
  assert.equal(window.kind, 'refused');
  assert.deepEqual(window.kind === 'refused' && [window.stage, window.reasons.map((r) => [r.code, r.field, r.value])], [
    'window',
    [['WINDOW_NOT_WHOLE_LATENT', 'window.height', 100]],
  ]);
  const overlap = explore({ ...base, width: 512, overlapWidth: 128 });
  assert.deepEqual(overlap.kind === 'refused' && [overlap.stage, overlap.reasons.map((r) => r.code)], [
    'overlap',
    ['OVERLAP_ON_UNTILED_AXIS'],
  ]);
  const ranks = explore({ ...base, ranks: 0 });
  assert.deepEqual(ranks.kind === 'refused' && [ranks.stage, ranks.reasons.map((r) => [r.code, r.value])], [
    'ranks',
    [['RANKS_INVALID', 0]],
  ]);
  const empty = explore({ ...base, height: fieldValue(''), frames: 5 });
  assert.deepEqual(empty.kind === 'refused' && empty.reasons.map((r) => [r.code, r.value]), [
    ['SIZE_INVALID', ''],
    ['FRAMES_ON_IMAGE_FAMILY', 5],
  ]);
});

test('a grid too large to draw reports its geometry only', () => {
  const r = explore({ ...base, height: 4096, width: 4096, windowHeight: 64, windowWidth: 64, overlapHeight: 16, overlapWidth: 16 });
  assert.equal(r.kind, 'too-many-tiles');
  assert.ok(r.kind === 'too-many-tiles' && r.metrics.tiles > MAX_TILES_DRAWN);
});

test('fields are numbers when they read as numbers, text otherwise', () => {
  assert.equal(fieldValue('512'), 512);
  assert.equal(fieldValue(' 1.5 '), 1.5);
  assert.equal(fieldValue(''), '');
  assert.equal(fieldValue('abc'), 'abc');
});
