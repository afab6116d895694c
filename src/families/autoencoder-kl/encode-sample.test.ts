// --sample's distribution against diffusers: the KL encoder built with `moments` returns mean and
// log-variance, whole and tiled (the moments blended across tiles, as diffusers' `_tiled_encode`
// blends them before forming the distribution); its std = exp(clamp(logvar, −30, 20) / 2) is
// compared with difref's `--save-std` (diffusers 58eb52c0, the tiny config and seeds of
// encode-golden.test.ts; commands in testing/goldens/README.md), its mean half with the mode()
// goldens. Then encodeFile's draw is exactly mean + std·ε(seed) of those moments, bitwise the
// same with tiles dealt to local ranks, within 1e-4 row-sharded (the ranks run the moments graph).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { difference } from '../../graph/testing/compare.js';
import { latentMean, latentStd, normalStream, sampleLatents } from '../../io/latent-sample.js';
import { readLatents } from '../../io/latents.js';
import { readNpy, writeNpy } from '../../io/npy.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { encodeFile } from '../../session/encode-file.js';
import { FAMILIES, runtimeOf } from '../registry.js';
import { seededTensor, type Tensor } from '../../tensor.js';

const CONFIG = {
  _class_name: 'AutoencoderKL',
  act_fn: 'silu',
  block_out_channels: [16, 32],
  layers_per_block: 1,
  mid_block_add_attention: true,
  norm_num_groups: 8,
  in_channels: 3,
  out_channels: 3,
  sample_size: 128,
  latent_channels: 4,
};
const SOURCE = { family: 'autoencoder-kl', config: CONFIG, weights: 'synthetic', seed: 4 } as const;
const golden = (name: string) => readNpy(fileURLToPath(new URL(`../testing/goldens/${name}.npy`, import.meta.url)));
const image = seededTensor([1, 3, 32, 48], 11);
const dir = mkdtempSync(join(tmpdir(), 'distvae-encode-sample-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function moments(tiled: boolean): Promise<Tensor> {
  const encoder = await loadEncoder(SOURCE, { threads: 1, moments: true });
  try {
    if (tiled) {
      setTiling(encoder, tileShapePlan(encoder, 32, 32)!);
      setTiling(encoder, tileOverlapPlan(encoder, 8, 8)!);
    }
    return await encoder.encode(image);
  } finally {
    await encoder.dispose();
  }
}

test("the KL encoder's moments give diffusers' std (≤ 1e-4 relative) and mean, whole and tiled", async () => {
  const stds: Tensor[] = [];
  for (const label of ['whole', 'tiled'] as const) {
    const m = await moments(label === 'tiled');
    assert.deepEqual(m.dims, [1, 8, 16, 24], label);
    const std = latentStd(m);
    const expected = golden(`kl-encode-std-${label}`);
    assert.deepEqual(std.dims, expected.dims, label);
    let worst = 0;
    for (let i = 0; i < std.data.length; i++) worst = Math.max(worst, Math.abs(std.data[i]! - expected.data[i]!) / expected.data[i]!);
    assert.ok(worst <= 1e-4, `${label}: std relative error ${worst}`);
    const mode = golden(`kl-encode-${label}`);
    const scale = mode.data.reduce((a, v) => Math.max(a, Math.abs(v)), 0);
    assert.ok(difference(latentMean(m), mode).maxAbs <= 1e-4 * scale, `${label}: mean half`);
    stds.push(std);
  }
  // The tiled std is the blend of the tiles' log-variances: it must differ from the whole one, or the tiled golden proves nothing.
  assert.ok(difference(stds[0]!, stds[1]!).maxAbs > 1e-3, 'tiling must change the std');
});

test('encodeFile --sample draws mean + std·ε(seed) of the moments exactly; same seed same bits, another seed differs; the default is the mean', async () => {
  const input = join(dir, 'x.npy');
  writeNpy(input, image);
  const whole = await moments(false);
  const run = async (name: string, extra: { sample?: boolean; seed?: number }) => {
    const out = join(dir, name);
    await encodeFile({ vae: SOURCE, image: input, out, threads: 1, ...extra });
    return readLatents(out);
  };
  const a = await run('a.npy', { sample: true, seed: 3 });
  assert.deepEqual(a, sampleLatents(whole, 3));
  // Independently: mean + fround(std)·ε in float64, rounded once.
  const eps = normalStream(3, a.data.length);
  const std = latentStd(whole);
  for (let i = 0; i < a.data.length; i++) assert.equal(a.data[i], Math.fround(whole.data[i]! + std.data[i]! * eps[i]!), `element ${i}`);
  assert.deepEqual(await run('b.npy', { sample: true, seed: 3 }), a, 'same seed, same bits');
  assert.ok(difference(await run('c.npy', { sample: true, seed: 4 }), a).maxAbs > 0.1, 'another seed, another draw');
  assert.deepEqual(await run('mean.npy', {}), latentMean(whole), 'without sample: the mean half of the same moments');
});

test('--sample is refused before work where it cannot be drawn: a family whose encoder here gives the mean only', async () => {
  const input = join(dir, 'y.npy');
  writeNpy(input, image);
  // A family with a distribution whose encoder here returns the mean only (while one is left).
  const meanOnly = FAMILIES.find(
    (f) =>
      (f.latentDistribution ?? 'diagonal-gaussian') === 'diagonal-gaussian' &&
      runtimeOf(f).encoder?.moments !== true &&
      runtimeOf(f).encoder,
  );
  if (meanOnly)
    await assert.rejects(
      encodeFile({ vae: { family: meanOnly.name, weights: 'synthetic', seed: 0 }, image: input, out: join(dir, 'h.npy'), sample: true }),
      {
        code: 'UNSUPPORTED',
        message: new RegExp(`the ${meanOnly.name} encoder here returns the latent mean only`),
      },
    );
});

test('encodeFile --sample with tiles dealt to 2 local ranks: bitwise the one-process tiled draw (the ranks load the moments)', async () => {
  const input = join(dir, 'z.npy');
  writeNpy(input, image);
  const plan = { window: { height: 32, width: 32 }, overlap: { height: 0, width: 8 } };
  const one = join(dir, 'one.npy');
  const two = join(dir, 'two.npy');
  await encodeFile({ vae: SOURCE, image: input, out: one, sample: true, seed: 5, threads: 1, ...plan });
  const report = await encodeFile({ vae: SOURCE, image: input, out: two, sample: true, seed: 5, threads: 1, ranks: 2, ...plan });
  assert.equal(report.tiles, 2);
  assert.deepEqual(
    report.ranks.map((r) => r.tiles.length),
    [1, 1],
  );
  assert.deepEqual(await readLatents(two), await readLatents(one));
});

test('encodeFile --sample row-sharded on 1 and 2 local ranks (the ranks run the moments graph): within 1e-4 of the one-process whole draw', async () => {
  const input = join(dir, 's.npy');
  writeNpy(input, image);
  const whole = join(dir, 'whole-s.npy');
  await encodeFile({ vae: SOURCE, image: input, out: whole, sample: true, seed: 6, threads: 1, full: true });
  const expected = await readLatents(whole);
  const scale = expected.data.reduce((a, v) => Math.max(a, Math.abs(v)), 0);
  for (const ranks of [1, 2]) {
    const out = join(dir, `shard-${ranks}.npy`);
    const report = await encodeFile({ vae: SOURCE, image: input, out, sample: true, seed: 6, threads: 1, ranks, strategy: 'shard' });
    assert.equal(report.strategy, 'shard');
    assert.equal(report.ranks.length, ranks);
    const got = await readLatents(out);
    assert.deepEqual(got.dims, expected.dims);
    assert.ok(difference(got, expected).maxAbs <= 1e-4 * scale, `${ranks} rank(s): ${difference(got, expected).maxAbs} (scale ${scale})`);
  }
  // The mean would not pass: the shard really drew (the std is ~1 here).
  assert.ok(difference(await readLatents(whole), latentMean(await moments(false))).maxAbs > 0.1, 'a draw, not the mean');
});

test('encodeFile --sample with halo-exact tiles: refused for the GroupNorm in the moments graph, as without --sample (never for sampling)', async () => {
  const input = join(dir, 'e.npy');
  writeNpy(input, image);
  const plan = { window: { height: 32, width: 32 }, overlap: { height: 0, width: 8 } };
  const refusal = async (sample: boolean) => {
    const e = await encodeFile({
      vae: SOURCE,
      image: input,
      out: join(dir, 'e-out.npy'),
      sample,
      threads: 1,
      strategy: 'exact-tile',
      ...plan,
    }).then(
      () => null,
      (err: unknown) => err as Error & { code: string },
    );
    assert.ok(e, `exact-tile${sample ? ' --sample' : ''} must be refused for this encoder`);
    return e;
  };
  const withSample = await refusal(true);
  const without = await refusal(false);
  assert.equal(withSample.code, without.code);
  assert.match(withSample.message, /GroupNormalization|group ?norm/i);
  assert.doesNotMatch(withSample.message, /sample/);
});
