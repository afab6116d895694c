// Agreement of an arm with the reference: seam bands are E output pixels on each side of every
// crop line, and the seam / interior split partitions the values, checked against a hand-made
// difference whose errors sit only on the seam lines.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import { tileGrid } from '../plan/grid.js';
import { tileOverlapPlan, tileShapePlan, setTiling } from '../plan/planner.js';
import { agreement, seamMask } from './agreement.js';

test('seamMask marks E rows on each side of every crop line inside the axis', () => {
  assert.deepEqual([...seamMask(10, 4, 1)], [0, 0, 0, 1, 1, 0, 0, 1, 1, 0]);
  assert.deepEqual([...seamMask(10, 4, 0)], new Array(10).fill(0));
  // Bands are clipped at the ends and merge when they meet.
  assert.deepEqual([...seamMask(6, 2, 2)], [1, 1, 1, 1, 1, 1]);
  assert.deepEqual([...seamMask(4, 8, 2)], [0, 0, 0, 0]);
});

test('agreement: whole-image max abs and PSNR on the mapped image; identical is PSNR null; errors on seams stay in the seam band', () => {
  const vae = planningVae('autoencoder-kl', { block_out_channels: [16, 32], norm_num_groups: 8, layers_per_block: 1 });
  const sample = { height: 64, width: 64 };
  setTiling(vae, tileShapePlan(vae, 32, 64, { sampleShape: sample })!);
  setTiling(vae, tileOverlapPlan(vae, 8, 0, { sampleShape: sample })!);
  const grid = tileGrid(vae, { height: 32, width: 32, frames: 1 });
  assert.equal(grid.rows.length > 1, true);
  const [H, W] = [64, 64];
  const reference = { dims: [1, 3, H, W], data: new Float32Array(3 * H * W) };
  assert.deepEqual(agreement(reference, reference, 'signed'), { maxAbs: 0, psnr: null, values: 3 * H * W });

  // The crop lines are at multiples of keep; put an error of 0.2 (0.1 on the [0, 1] image) on each.
  const output = { dims: reference.dims, data: reference.data.slice() };
  const keep = grid.keep.height;
  for (let line = keep; line < H; line += keep)
    for (let c = 0; c < 3; c++) for (let x = 0; x < W; x++) output.data[(c * H + line) * W + x] = 0.2;
  const a = agreement(output, reference, 'signed', grid);
  assert.ok(Math.abs(a.maxAbs - 0.2) < 1e-7);
  const band = [...seamMask(H, keep, grid.blend.height)].filter(Boolean).length;
  assert.equal(a.seamBand!.values, 3 * band * W);
  assert.equal(a.interior!.values, 3 * (H - band) * W);
  assert.deepEqual([a.interior!.maxAbs, a.interior!.psnr], [0, null]);
  const lines = Math.ceil(H / keep) - 1;
  const mse = (values: number) => (3 * lines * W * 0.01) / values;
  assert.ok(
    Math.abs(a.seamBand!.psnr! - 10 * Math.log10(1 / mse(a.seamBand!.values))) < 1e-4,
    'float32 rounding of the mapped values only',
  );
  assert.ok(Math.abs(a.psnr! - 10 * Math.log10(1 / mse(3 * H * W))) < 1e-4, 'float32 rounding of the mapped values only');
  // Without a grid (or an untiled one) there is no split.
  assert.equal(agreement(output, reference, 'signed').seamBand, undefined);
});
