// `distvae encode` end to end on a synthetic full-size TAESD encoder saved as a bare
// .safetensors file (its variant read from the keys) and small PNG images.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PNG } from 'pngjs';
import { loadEncoder } from '../../encode/encoder.js';
import { openImageRows, readAllRows } from '../../io/row-source.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { tae } from '../../families/tae/spec.js';
import { taeRuntime } from '../../families/tae/runtime.js';
import { readImage } from '../../io/image.js';
import { readLatents } from '../../io/latents.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { runCli } from '../main.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-encode-'));
const encoderPath = join(dir, 'taesd_encoder.safetensors');
writeSafetensors(encoderPath, syntheticWeights(taeRuntime.encoder!.params(tae.resolveConfig({ variant: 'taesd' })), 3));

function writePng(name: string, height: number, width: number): string {
  const png = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) png.data.set([(i * 7) % 256, (i * 13) % 256, (i * 29) % 256, 255], i * 4);
  const path = join(dir, name);
  writeFileSync(path, PNG.sync.write(png));
  return path;
}

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['encode', ...args], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), stderrIsTTY: false });
  return { code, stdout, stderr };
}

test('encode writes the latents the library computes, to .npy and .safetensors, with a JSON summary', async () => {
  const image = writePng('photo.png', 16, 24);
  const npy = join(dir, 'z.npy');
  const st = join(dir, 'z.safetensors');
  const run = await cli(['--vae', encoderPath, '--family', 'tae', '--image', image, '--out', npy, '--threads', '1', '--json']);
  assert.equal(run.code, 0, run.stderr);
  const summary = JSON.parse(run.stdout);
  assert.deepEqual(summary.shape, [1, 4, 2, 3]);
  assert.deepEqual(summary.image, { height: 16, width: 24 });
  assert.equal(typeof summary.seconds, 'number');

  const encoder = await loadEncoder(encoderPath, { family: 'tae', threads: 1 });
  try {
    const expected = await encoder.encode(readImage(image));
    assert.deepEqual((await readLatents(npy)).data, expected.data);
    assert.equal((await cli(['--vae', encoderPath, '--family', 'tae', '--image', image, '--out', st, '--threads', '1'])).code, 0);
    assert.deepEqual((await readLatents(st)).data, expected.data);
  } finally {
    await encoder.dispose();
  }
});

test('encode refuses sizes off the ratio (naming the nearest), or crops them with --crop', async () => {
  const image = writePng('odd.png', 20, 27);
  const out = join(dir, 'odd.npy');
  const refused = await cli(['--vae', encoderPath, '--family', 'tae', '--image', image, '--out', out, '--threads', '1']);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /height 20 px is not a multiple of 8 \(nearest: 16 or 24\); crop it to multiples of 8 \(--crop\)/);
  assert.equal(existsSync(out), false);

  const cropped = await cli([
    '--vae',
    encoderPath,
    '--family',
    'tae',
    '--image',
    image,
    '--out',
    out,
    '--crop',
    '--threads',
    '1',
    '--json',
  ]);
  assert.equal(cropped.code, 0, cropped.stderr);
  const summary = JSON.parse(cropped.stdout);
  assert.deepEqual(summary.encoded, { height: 16, width: 24 });
  assert.deepEqual(summary.shape, [1, 4, 2, 3]);
});

test('encode refuses a bad --out before reading anything, and a missing --image', async () => {
  const bad = await cli(['--vae', join(dir, 'absent.pth'), '--image', join(dir, 'absent.png'), '--out', join(dir, 'z.png'), '--json']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--out .* must end in \.npy, \.safetensors, \.latent/);
  assert.equal(JSON.parse(bad.stdout).error.code, 'INVALID_ARGUMENT');
  const missing = await cli(['--vae', encoderPath, '--family', 'tae', '--out', join(dir, 'z.npy')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /encode needs --image or --video/);
});

test('encode takes the decode options: a KL encoder (PNG mapped to [-1, 1]) tiled by --window/--overlap on 2 ranks = the library tiled encode, bitwise', async () => {
  const image = writePng('kl.png', 24, 40);
  const config = join(dir, 'kl-config.json');
  const raw = { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };
  writeFileSync(config, JSON.stringify(raw));
  const out = join(dir, 'kl.npy');
  const args = ['--synthetic', '--config', config, '--seed', '5', '--image', image, '--out', out, '--threads', '1'];
  const run = await cli([...args, '--window', '16x16', '--overlap', '4x4', '--ranks', '2', '--json']);
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  assert.equal(report.tiles, 8);
  assert.deepEqual(report.plan, { window: { height: 16, width: 16 }, overlap: { height: 4, width: 4 } });
  assert.equal(report.ranks.length, 2);
  assert.ok(report.ranks.every((r: { tiles: number[] }) => r.tiles.length > 0));

  const encoder = await loadEncoder({ config: raw, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    setTiling(encoder, tileShapePlan(encoder, 16, 16)!);
    setTiling(encoder, tileOverlapPlan(encoder, 4, 4)!);
    const expected = await encoder.encode(readAllRows(openImageRows(image, 'signed')));
    assert.deepEqual((await readLatents(out)).data, expected.data);
  } finally {
    await encoder.dispose();
  }
  const refused = await cli([...args, '--window', '15x16']);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /window\.height = 15 px is not a whole number of latent units/);
  // Row sharding: bands of whole latent rows on 2 ranks, equal to the whole encode.
  const shard = await cli([...args, '--strategy', 'shard', '--ranks', '2', '--json']);
  assert.equal(shard.code, 0, shard.stderr);
  const sharded = JSON.parse(shard.stdout);
  assert.equal(sharded.strategy, 'shard');
  assert.equal(sharded.ranks.length, 2);
  const whole = await loadEncoder({ config: raw, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    const expected = await whole.encode(readAllRows(openImageRows(image, 'signed')));
    const got = await readLatents(out);
    assert.deepEqual(got.dims, expected.dims);
    const maxAbs = got.data.reduce((m, v, i) => Math.max(m, Math.abs(v - expected.data[i]!)), 0);
    assert.ok(maxAbs <= 1e-4, `max abs ${maxAbs}`);
  } finally {
    await whole.dispose();
  }
  // More ranks than the image's 12 latent rows: refused before any rank starts, naming both numbers.
  const many = await cli([...args, '--strategy', 'shard', '--ranks', '13']);
  assert.equal(many.code, 2);
  assert.match(many.stderr, /13 ranks cannot share 12 latent rows \(24 input rows\)/);
  // Halo-exact tiles need a local encoder: the KL encoder's GroupNorms are named.
  const exact = await cli([...args, '--strategy', 'exact-tile', '--window', '16x16']);
  assert.equal(exact.code, 2);
  assert.match(exact.stderr, /halo-exact tiling refused: the encoder has nonlocal ops: .*GroupNorm/);
});

test('encode --json lists every rank process measured peak for row-sharded and halo-exact encodes (no prediction for them)', async () => {
  type Memory = { measuredPeakBytes: number | null; coordinator: { measuredPeakBytes: number | null } };
  type Ranks = { rank: number; predictedPeakBytes: number | null; measuredPeakBytes: number | null }[];
  const check = (run: { code: number; stdout: string; stderr: string }, what: string) => {
    assert.equal(run.code, 0, run.stderr);
    const memory = (JSON.parse(run.stdout) as { memory: Memory & { ranks: Ranks } }).memory;
    assert.deepEqual(
      memory.ranks.map((r) => r.rank),
      [0, 1],
      what,
    );
    for (const r of memory.ranks) assert.ok((r.measuredPeakBytes ?? 0) > 10 * 2 ** 20, `${what} rank ${r.rank}: ${r.measuredPeakBytes}`);
    // The total is the coordinator's peak plus both ranks'.
    const sum = memory.coordinator.measuredPeakBytes! + memory.ranks.reduce((s, r) => s + r.measuredPeakBytes!, 0);
    assert.equal(memory.measuredPeakBytes, sum, what);
  };
  // Row sharding of a KL encoder on 2 rank processes.
  const image = writePng('kl-peaks.png', 24, 40);
  const config = join(dir, 'kl-peaks-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      _class_name: 'AutoencoderKL',
      block_out_channels: [8, 8],
      layers_per_block: 1,
      norm_num_groups: 4,
      latent_channels: 4,
    }),
  );
  const kl = ['--synthetic', '--config', config, '--seed', '5', '--image', image, '--out', join(dir, 'kl-peaks.npy'), '--threads', '1'];
  check(await cli([...kl, '--strategy', 'shard', '--ranks', '2', '--isolation', 'process', '--json']), 'shard');
  // Halo-exact tiles of the (local) TAE encoder on 2 rank processes.
  const tae = ['--vae', encoderPath, '--family', 'tae', '--image', writePng('tae-peaks.png', 64, 64), '--out', join(dir, 'tae-peaks.npy')];
  check(
    await cli([
      ...tae,
      '--strategy',
      'exact-tile',
      '--window',
      '32x32',
      '--ranks',
      '2',
      '--isolation',
      'process',
      '--threads',
      '1',
      '--json',
    ]),
    'exact-tile',
  );
});
