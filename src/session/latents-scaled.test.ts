// decode --latents-scaled undoes exactly what io/latent-scaling.ts's scaleLatents does (what an
// img2img pipeline does after vae.encode), for the scalings the config declares: Flux.2's
// batch-norm statistics read from its checkpoint (the latents patchified 2x2), and Wan/Qwen-Image's
// latents_mean / latents_std (checked through the same pair in io/latent-scaling.test.ts).

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { getFamily, runtimeOf } from '../families/registry.js';
import { KL_SMALL } from '../families/testing/config-files.js';
import { latentScalingOf, scaleLatents } from '../io/latent-scaling.js';
import { readNpy, writeNpy } from '../io/npy.js';
import { seededTensor } from '../tensor.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { cli } from '../cli/testing/in-process.js';
import { readLatentBatchNorm } from '../sources/latent-statistics.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-scaled-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const CONFIG = { ...KL_SMALL, _class_name: 'AutoencoderKLFlux2', batch_norm_eps: 1e-4, patch_size: [2, 2] };
const folder = join(dir, 'flux2-vae');
mkdirSync(folder);
writeFileSync(join(folder, 'config.json'), JSON.stringify(CONFIG));
const family = getFamily('flux2');
const weights = syntheticWeights(runtimeOf(family).decoderParams(family.resolveConfig(CONFIG)), 3);
const bn = { mean: seededTensor([16], 4), variance: seededTensor([16], 5, 0.5) };
bn.variance.data.forEach((v, i) => (bn.variance.data[i] = v + 1));
writeSafetensors(
  join(folder, 'diffusion_pytorch_model.safetensors'),
  new Map([...weights, ['bn.running_mean', bn.mean], ['bn.running_var', bn.variance]]),
);

test("Flux.2: the checkpoint's bn statistics are read, and decode --latents-scaled of scaled latents equals the plain decode", async () => {
  const read = await readLatentBatchNorm({ path: folder });
  assert.deepEqual(read, { mean: bn.mean.data, variance: bn.variance.data });
  const z = seededTensor([1, 4, 4, 6], 9);
  const scaled = scaleLatents(z, latentScalingOf(family.resolveConfig(CONFIG).fields, 'flux2', { batchNorm: read! }));
  assert.deepEqual(scaled.dims, [1, 16, 2, 3]);
  writeNpy(join(dir, 'z.npy'), z);
  writeNpy(join(dir, 'scaled.npy'), scaled);
  const plain = await cli('decode', '--vae', folder, '--latents', join(dir, 'z.npy'), '--out', join(dir, 'plain.npy'), '--threads', '1');
  assert.equal(plain.code, 0, plain.stderr);
  const viaFlag = await cli(
    'decode',
    '--vae',
    folder,
    '--latents',
    join(dir, 'scaled.npy'),
    '--latents-scaled',
    '--out',
    join(dir, 'flag.npy'),
    '--threads',
    '1',
  );
  assert.equal(viaFlag.code, 0, viaFlag.stderr);
  const [a, b] = [readNpy(join(dir, 'plain.npy')), readNpy(join(dir, 'flag.npy'))];
  assert.deepEqual(a.dims, b.dims);
  // The round trip (x - m) / s * s + m is within a float32 rounding of x: the decodes agree to that.
  const max = Math.max(...a.data.map(Math.abs));
  a.data.forEach((v, i) => assert.ok(Math.abs(v - b.data[i]!) <= 1e-5 * max, `index ${i}`));
});

test('Flux.2 without bn statistics in the checkpoint: --latents-scaled is refused naming them', async () => {
  const bare = join(dir, 'flux2-bare');
  mkdirSync(bare);
  writeFileSync(join(bare, 'config.json'), JSON.stringify(CONFIG));
  writeSafetensors(join(bare, 'diffusion_pytorch_model.safetensors'), weights);
  writeNpy(join(dir, 'z16.npy'), seededTensor([1, 16, 2, 3], 1));
  const run = await cli(
    'decode',
    '--vae',
    bare,
    '--latents',
    join(dir, 'z16.npy'),
    '--latents-scaled',
    '--out',
    join(dir, 'x.npy'),
    '--threads',
    '1',
  );
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /bn\.running_mean \/ bn\.running_var/);
});
