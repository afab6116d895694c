// The encode session's memory policy and band-wise input (issue 28 items 4, 5): a budget under the
// whole encode's bound makes the policy choose tiles — bitwise the library's tiled encode of that
// plan — and one under every plan's bound is refused before any work; a tall PNG encodes in tiles
// holding only the bands of the tiles in flight, bitwise the tiled encode of the image in memory; on
// ranks the policy chooses among every class (row sharding included) as for a decoder, and a
// sample is predicted with its moments.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PNG } from 'pngjs';
import { loadEncoder } from '../encode/encoder.js';
import { isDistVaeError } from '../errors.js';
import { readLatents } from '../io/latents.js';
import { openImageRows, readAllRows } from '../io/row-source.js';
import { CALIBRATIONS } from '../memory/calibration.js';
import { predictMemory } from '../memory/model.js';
import { chooseWithinBudget, describePlan } from '../memory/policy.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../plan/planner.js';
import { encodeFile } from './encode-file.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-encode-budget-'));
// A tiny AutoencoderKL encoder (r = 2, 8 channels, mid-block attention): GroupNorm and attention read every position.
const config = { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };
const vae = { config, weights: 'synthetic' as const, seed: 11 };

function writePng(name: string, height: number, width: number): string {
  const png = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) png.data.set([(i * 7) % 256, (i * 13) % 251, (i * 29) % 241, 255], i * 4);
  const path = join(dir, name);
  writeFileSync(path, PNG.sync.write(png));
  return path;
}

/** The library's tiled encode of the image in memory with this window and overlap. */
async function tiledReference(image: string, window: { height: number; width: number }, overlap: { height: number; width: number }) {
  const encoder = await loadEncoder(vae, { threads: 1 });
  try {
    setTiling(encoder, tileShapePlan(encoder, window.height, window.width)!);
    setTiling(encoder, tileOverlapPlan(encoder, overlap.height, overlap.width)!);
    return await encoder.encode(readAllRows(openImageRows(image, 'signed')));
  } finally {
    await encoder.dispose();
  }
}

test('encode --max-memory: a budget under the whole encode makes the policy tile (bitwise the tiled encode of its plan); one under every plan is refused', async () => {
  const image = writePng('square.png', 96, 96);
  const encoder = await loadEncoder(vae, { threads: 1 });
  const whole = predictMemory(encoder, { strategy: 'whole', ranks: 1 }, { height: 96, width: 96 }, { threads: 1 });
  await encoder.dispose();

  // Ample: the whole encode, exact, as diffusers' encode.
  const ample = await encodeFile({ vae, image, out: join(dir, 'ample.npy'), threads: 1, maxMemory: whole.boundBytes });
  assert.equal(ample.plan, null);
  assert.equal(ample.tiles, 1);
  assert.match(ample.decision!.reason, /exact: the whole decode/);
  assert.equal(ample.memory.predictedPeakBytes, whole.peakBytes);

  // One byte under the whole encode's bound: the fastest blended tiles that fit.
  const out = join(dir, 'tiled.npy');
  const tiled = await encodeFile({ vae, image, out, threads: 1, maxMemory: whole.boundBytes - 1 });
  assert.ok(tiled.plan, 'tiled');
  assert.ok(tiled.tiles > 1);
  assert.ok(tiled.memory.predictedBoundBytes! <= whole.boundBytes - 1);
  assert.ok(tiled.memory.predictedPeakBytes! < whole.peakBytes);
  assert.equal(tiled.reading, 'streamed');
  const expected = await tiledReference(image, tiled.plan.window, tiled.plan.overlap);
  assert.deepEqual((await readLatents(out)).data, expected.data);

  // Under every plan's bound (the runtime's fixed cost alone is more): refused before any work, naming the smallest.
  await assert.rejects(
    encodeFile({ vae, image, out: join(dir, 'refused.npy'), threads: 1, maxMemory: 1024 * 1024 }),
    (e: unknown) => isDistVaeError(e) && e.code === 'BUDGET_EXCEEDED' && /no plan fits a memory budget of 1 MiB/.test(e.message),
  );
  // A requested plan over an explicit budget is refused too.
  await assert.rejects(
    encodeFile({ vae, image, out: join(dir, 'refused.npy'), threads: 1, full: true, maxMemory: whole.boundBytes - 1 }),
    (e: unknown) => isDistVaeError(e) && e.code === 'BUDGET_EXCEEDED' && /the requested plan \(whole\) does not fit/.test(e.message),
  );
});

test('a tall PNG encodes in tiles holding only the bands of its tiles, bitwise the tiled encode of the image in memory', async () => {
  const height = 1024;
  const width = 32;
  const image = writePng('tall.png', height, width);
  const window = { height: 32, width: 32 };
  const overlap = { height: 8, width: 0 };
  for (const ranks of [1, 2]) {
    const out = join(dir, `tall-${ranks}.npy`);
    const report = await encodeFile({ vae, image, out, threads: 1, window, overlap, ranks });
    assert.equal(report.reading, 'streamed');
    assert.ok(report.tiles >= 40, `${report.tiles} tiles`);
    // The float image is 3 × 1024 × 32 × 4 = 384 KiB; a band is one tile row's 32 rows (12 KiB),
    // held once as the PNG source decoded it and once as the tiles' band. Ranks take their tiles
    // a few ahead of each other, so a few bands may be held at once.
    const imageBytes = 3 * height * width * 4;
    const bandBytes = 3 * window.height * width * 4;
    assert.ok(report.bandBytes >= 2 * bandBytes, `${report.bandBytes} bytes of bands held`);
    assert.ok(report.bandBytes <= (ranks === 1 ? 2 : 8) * bandBytes, `${report.bandBytes} bytes of bands held (${ranks} ranks)`);
    assert.ok(report.bandBytes < imageBytes / 4);
    const expected = await tiledReference(image, window, overlap);
    assert.deepEqual((await readLatents(out)).data, expected.data);
  }
});

test('encode --ranks 2 without plan options: row sharding is an exact plan the policy offers, but the session takes the whole encode while it fits (the time model ranks a sharded encode faster than measured)', async () => {
  const image = writePng('ranks.png', 64, 64);
  const size = { height: 64, width: 64 };
  const encoder = await loadEncoder(vae, { threads: 1 });
  const options = { ranks: 2, threads: 1, bands: true, devices: 'shared' as const, more: 100 };
  const shard = predictMemory(encoder, { strategy: 'shard', ranks: 2 }, size, { threads: 1 });
  const whole = predictMemory(encoder, { strategy: 'whole', ranks: 1 }, size, { threads: 1 });
  // Every exact plan fits: the policy offers row sharding beside the whole encode; the session takes the whole one.
  const ample = Math.max(shard.boundBytes, whole.boundBytes);
  const offered = chooseWithinBudget(encoder, size, { bytes: ample }, options);
  assert.ok(offered.alternatives.some((a) => a.plan.strategy === 'shard' && a.class === 'exact' && a.fits));
  const expected = chooseWithinBudget(encoder, size, { bytes: ample }, { ...options, strategies: ['tile'] });
  await encoder.dispose();
  assert.equal(expected.choice?.plan.strategy, 'whole');
  const out = join(dir, 'ranks.npy');
  const report = await encodeFile({ vae, image, out, threads: 1, ranks: 2, maxMemory: ample });
  assert.equal(report.decision?.plan, describePlan(expected.choice!.plan));
  assert.equal(report.strategy, 'tile');
  assert.equal(report.memory.predictedPeakBytes, expected.choice!.prediction.peakBytes);
  const reference = await encodeFile({ vae, image, out: join(dir, 'ranks-whole.npy'), threads: 1, full: true });
  assert.equal(reference.tiles, 1);
  const got = (await readLatents(out)).data;
  const want = (await readLatents(join(dir, 'ranks-whole.npy'))).data;
  const scale = Math.max(...Array.from(want, Math.abs));
  assert.ok(Math.max(...Array.from(got, (v, i) => Math.abs(v - want[i]!))) <= 1e-4 * scale);
});

test('encode --sample: the whole encode while it fits (ranks load the moments too), predicted with twice the latents out', async () => {
  const image = writePng('sample.png', 64, 64);
  const report = await encodeFile({
    vae,
    image,
    out: join(dir, 'sample.npy'),
    threads: 1,
    ranks: 2,
    sample: true,
    maxMemory: 64 * 2 ** 30,
  });
  assert.equal(report.strategy, 'tile');
  assert.match(report.decision!.plan, /^whole/);
  const encoder = await loadEncoder(vae, { threads: 1 });
  const plan = { strategy: 'whole' as const, ranks: 1, threads: 2 };
  const mean = predictMemory(encoder, plan, { height: 64, width: 64 }, { threads: 1, bands: true });
  await encoder.dispose();
  // 4 latent channels of 32 x 32: the moments are 8 (one more latent out), and the sample drawn is one more buffer.
  const latent = 4 * 4 * 32 * 32;
  const extra = CALIBRATIONS['cpu']!.outputCopies * latent + latent;
  assert.ok(
    Math.abs(report.memory.predictedPeakBytes! - mean.peakBytes - extra) <= 1,
    `${report.memory.predictedPeakBytes! - mean.peakBytes} vs ${extra}`,
  );
});
