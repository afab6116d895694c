// `distvae encode`'s inputs and outputs (issue 28 items 5, 6) end to end on a synthetic TAESD
// encoder: a .npy input encodes like the PNG it holds, a PNG is streamed, latents go to a ComfyUI
// .latent, --latents-scaled writes scaleLatents of the mean, --sample --seed draws (on a synthetic
// KL encoder, which has a distribution), and the refusals come before work.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { tae } from '../../families/tae/spec.js';
import { taeRuntime } from '../../families/tae/runtime.js';
import { encodePng, readImage } from '../../io/image.js';
import { latentScalingOf, scaleLatents } from '../../io/latent-scaling.js';
import { readLatents } from '../../io/latents.js';
import { writeNpy } from '../../io/npy.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { cli } from '../testing/in-process.js';
import { encodeFile } from '../../session/encode-file.js';
import { difference } from '../../graph/testing/compare.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-encode-io-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const encoderPath = join(dir, 'taesd_encoder.safetensors');
writeSafetensors(encoderPath, syntheticWeights(taeRuntime.encoder!.params(tae.resolveConfig({ variant: 'taesd' })), 3));
const [height, width] = [16, 24];
const pixels = Float32Array.from({ length: 3 * height * width }, (_, i) => ((i * 37) % 256) / 255);
const png = join(dir, 'photo.png');
writeFileSync(png, encodePng(pixels, 3, height, width));
const encode = (...rest: string[]) => cli('encode', '--vae', encoderPath, '--family', 'tae', '--threads', '1', ...rest);

test('a PNG is streamed, a .npy of the same pixels encodes to the same latents, and a ComfyUI .latent holds them', async () => {
  const fromPng = await encode('--image', png, '--out', join(dir, 'a.npy'), '--json');
  assert.equal(fromPng.code, 0, fromPng.stderr);
  assert.equal(JSON.parse(fromPng.stdout).reading, 'streamed');
  const npyInput = join(dir, 'photo.npy');
  writeNpy(npyInput, readImage(png));
  assert.equal((await encode('--image', npyInput, '--out', join(dir, 'b.latent'))).code, 0);
  const [a, b] = [await readLatents(join(dir, 'a.npy')), await readLatents(join(dir, 'b.latent'))];
  assert.deepEqual(b, a);
  assert.deepEqual(a.dims, [1, 4, 2, 3]);
});

test('--latents-scaled writes scaleLatents of the mean with the config the encoder was read with', async () => {
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ _class_name: 'AutoencoderTiny', scaling_factor: 0.5 }));
  const out = join(dir, 'scaled.safetensors');
  const run = await encode('--config', config, '--image', png, '--out', out, '--latents-scaled');
  assert.equal(run.code, 0, run.stderr);
  const mean = await readLatents(join(dir, 'a.npy'));
  assert.deepEqual(await readLatents(out), scaleLatents(mean, latentScalingOf({ scaling_factor: 0.5 }, 'tae')));
});

test('refused before any work: a scaled .latent, --sample for tae, --seed with --vae but without --sample, --out over --image', async () => {
  const latent = join(dir, 'x.latent');
  const scaledLatent = await encode('--image', png, '--out', latent, '--latents-scaled');
  assert.equal(scaledLatent.code, 2);
  assert.match(scaledLatent.stderr, /ComfyUI \.latent, which holds raw latents/);
  assert.equal(existsSync(latent), false);
  const sample = await encode('--image', png, '--out', join(dir, 's.npy'), '--sample', '--seed', '3');
  assert.equal(sample.code, 2);
  assert.match(sample.stderr, /--sample: the tae encoder returns its latents directly/);
  const seed = await encode('--image', png, '--out', join(dir, 's.npy'), '--seed', '3');
  assert.equal(seed.code, 2);
  assert.match(seed.stderr, /--seed seeds synthetic weights; it does nothing with --vae/);
  const npyInput = join(dir, 'self.npy');
  writeNpy(npyInput, readImage(png));
  const over = await encode('--image', npyInput, '--out', npyInput);
  assert.equal(over.code, 2);
  assert.match(over.stderr, /--out .*self\.npy is the --image file: writing would overwrite the input/);
});

test('distvae encode --sample --seed 3 (a KL encoder) writes what encodeFile draws with seed 3, says so, and differs from the mean', async () => {
  const config = join(dir, 'kl.json');
  const kl = { _class_name: 'AutoencoderKL', block_out_channels: [8, 16], layers_per_block: 1, norm_num_groups: 4, sample_size: 32 };
  writeFileSync(config, JSON.stringify(kl));
  const klEncode = (out: string, ...rest: string[]) =>
    cli('encode', '--synthetic', '--family', 'autoencoder-kl', '--config', config, '--image', png, '--out', out, '--threads', '1', ...rest);
  const sampled = await klEncode(join(dir, 'kl-s.npy'), '--sample', '--seed', '3');
  assert.equal(sampled.code, 0, sampled.stderr);
  assert.match(sampled.stdout, /sampled from the latent distribution with seed 3/);
  const direct = join(dir, 'kl-direct.npy');
  await encodeFile({
    vae: { family: 'autoencoder-kl', config: kl, weights: 'synthetic', seed: 3 },
    image: png,
    out: direct,
    sample: true,
    seed: 3,
    threads: 1,
  });
  const sample = await readLatents(join(dir, 'kl-s.npy'));
  assert.deepEqual(sample, await readLatents(direct));
  assert.equal((await klEncode(join(dir, 'kl-mean.npy'), '--seed', '3')).code, 0);
  assert.ok(difference(sample, await readLatents(join(dir, 'kl-mean.npy'))).maxAbs > 0.01, 'the draw is not the mean');
});
