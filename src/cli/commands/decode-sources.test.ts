// `distvae decode` from the files users have: a pipeline in the local Hugging Face cache named
// by repo id (the README's quick start), a ComfyUI .latent, and a pipeline's scaled latents
// with --latents-scaled — each the same sample as the plain equivalent.

import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { klDecoderParams } from '../../families/autoencoder-kl/graph.js';
import { getFamily } from '../../families/registry.js';
import { seededTensor } from '../../tensor.js';
import { readNpy, writeNpy } from '../../io/npy.js';
import { tensor } from '../../tensor.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { KL_SMALL } from '../../families/testing/config-files.js';
import { cliWithEnv } from '../testing/in-process.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-cli-sources-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const CONFIG = { ...KL_SMALL, scaling_factor: 0.5, shift_factor: 0.25 };
const COMMIT = 'c'.repeat(40);
const cache = join(dir, 'hub');
const snapshot = join(cache, 'models--org--tiny-pipe', 'snapshots', COMMIT);
mkdirSync(join(snapshot, 'vae'), { recursive: true });
mkdirSync(join(cache, 'models--org--tiny-pipe', 'refs'), { recursive: true });
writeFileSync(join(cache, 'models--org--tiny-pipe', 'refs', 'main'), COMMIT);
writeFileSync(
  join(snapshot, 'model_index.json'),
  JSON.stringify({ _class_name: 'StableDiffusionPipeline', vae: ['diffusers', 'AutoencoderKL'] }),
);
writeFileSync(join(snapshot, 'vae', 'config.json'), JSON.stringify(CONFIG));
writeSafetensors(
  join(snapshot, 'vae', 'diffusion_pytorch_model.safetensors'),
  syntheticWeights(klDecoderParams(getFamily('autoencoder-kl').resolveConfig(CONFIG)), 3),
);

const z = seededTensor([1, 4, 4, 4], 9);
const Z = join(dir, 'z.npy');
writeNpy(Z, z);

const cli = cliWithEnv({ HF_HUB_CACHE: cache });

/** `decode --vae org/tiny-pipe --latents <latents>` (the pipeline in the cache) and the options a test adds. */
const fromRepo = (latents: string, ...rest: string[]) => cli('decode', '--vae', 'org/tiny-pipe', '--latents', latents, ...rest);

test('a repo id in the local cache decodes like its snapshot folder; a ComfyUI .latent like its tensor', async () => {
  const byRepo = join(dir, 'repo.npy');
  const byFolder = join(dir, 'folder.npy');
  const byComfy = join(dir, 'comfy.npy');
  const repo = await fromRepo(Z, '--out', byRepo, '--threads', '1');
  assert.equal(repo.code, 0);
  // diffusers' pipeline notes, one line each on stderr: the vae/ component, a missing variant's fallback.
  assert.match(
    repo.stderr,
    /^note: org\/tiny-pipe is a diffusers pipeline: loading its vae\/ component, as diffusers' pipelines do \(--subfolder picks another\)$/m,
  );
  const fp16 = await fromRepo(Z, '--variant', 'fp16', '--out', join(dir, 'fp16.npy'), '--threads', '1');
  assert.equal(fp16.code, 0);
  assert.equal(fp16.stderr.split('\n').filter((l) => l.startsWith('note: ')).length, 2, fp16.stderr);
  assert.match(
    fp16.stderr,
    /^note: .*has no diffusion_pytorch_model\.fp16\.safetensors; loading diffusion_pytorch_model\.safetensors as diffusers' pipelines do/m,
  );
  const folder = await cli('decode', '--vae', join(snapshot, 'vae'), '--latents', Z, '--out', byFolder, '--threads', '1');
  assert.equal(folder.code, 0);
  assert.doesNotMatch(folder.stderr, /note:/);
  writeSafetensors(join(dir, 'z.latent'), { latent_tensor: z, latent_format_version_0: tensor([0]) });
  assert.equal((await fromRepo(join(dir, 'z.latent'), '--out', byComfy, '--threads', '1')).code, 0);
  assert.deepEqual(readNpy(byRepo), readNpy(byFolder));
  assert.deepEqual(readNpy(byComfy), readNpy(byFolder));
  const miss = await cli('decode', '--vae', 'org/absent', '--latents', Z, '--out', join(dir, 'x.npy'), '--json');
  assert.equal(miss.code, 2);
  assert.match(
    JSON.parse(miss.stdout).error.message,
    /org\/absent@main is not a local path and not in the local Hugging Face cache \(searched .*models--org--absent/,
  );
});

test('a ref that leads outside the cache is refused (exit 2, naming the ref); nothing is decoded or written', async () => {
  // A pipeline outside the cache, and a repo whose refs/main walks up to it.
  const elsewhere = join(dir, 'elsewhere');
  cpSync(snapshot, elsewhere, { recursive: true });
  const repoRoot = join(cache, 'models--org--escape');
  mkdirSync(join(repoRoot, 'refs'), { recursive: true });
  mkdirSync(join(repoRoot, 'snapshots'), { recursive: true });
  writeFileSync(join(repoRoot, 'refs', 'main'), '../../../elsewhere');
  const out = join(dir, 'escape.npy');
  const r = await cli('decode', '--vae', 'org/escape', '--latents', Z, '--out', out);
  assert.equal(r.code, 2, r.stderr);
  assert.match(
    r.stderr,
    /the ref .*models--org--escape\/refs\/main holds "\.\.\/\.\.\/\.\.\/elsewhere", not the name of a snapshot folder/,
  );
  assert.ok(!existsSync(out));
});

test('--latents-scaled divides by scaling_factor and adds shift_factor before decoding', async () => {
  const scaled = tensor(
    z.dims,
    z.data.map((v) => (v - 0.25) * 0.5),
  );
  const unscaled = tensor(
    z.dims,
    scaled.data.map((v) => Math.fround(v / 0.5) + Math.fround(0.25)),
  );
  writeNpy(join(dir, 'scaled.npy'), scaled);
  writeNpy(join(dir, 'unscaled.npy'), unscaled);
  const viaFlag = join(dir, 'flag.npy');
  const direct = join(dir, 'direct.npy');
  assert.equal((await fromRepo(join(dir, 'scaled.npy'), '--latents-scaled', '--out', viaFlag, '--threads', '1')).code, 0);
  assert.equal((await fromRepo(join(dir, 'unscaled.npy'), '--out', direct, '--threads', '1')).code, 0);
  assert.deepEqual(readNpy(viaFlag), readNpy(direct));
});

test('a folder or glob of latents decodes with one load into --out-dir, each like its own decode', async () => {
  const many = join(dir, 'many');
  mkdirSync(many);
  const a = seededTensor([1, 4, 4, 4], 1);
  const b = seededTensor([1, 4, 6, 4], 2);
  writeNpy(join(many, 'a.npy'), a);
  writeSafetensors(join(many, 'b.safetensors'), { latents: b });
  writeFileSync(join(many, 'notes.txt'), 'ignored');
  const outDir = join(dir, 'outs');
  mkdirSync(outDir);
  assert.equal((await fromRepo(many, '--out-dir', outDir, '--out-format', 'npy', '--threads', '1')).code, 0);
  for (const [name, latents] of [
    ['a', a],
    ['b', b],
  ] as const) {
    const single = join(dir, `single-${name}.npy`);
    writeNpy(join(dir, `in-${name}.npy`), latents);
    assert.equal((await fromRepo(join(dir, `in-${name}.npy`), '--out', single, '--threads', '1')).code, 0);
    assert.deepEqual(readNpy(join(outDir, `${name}.npy`)), readNpy(single));
  }
  const globbed = join(dir, 'globbed');
  mkdirSync(globbed);
  assert.equal((await fromRepo(join(many, '*.npy'), '--out-dir', globbed, '--threads', '1')).code, 0);
  assert.deepEqual(readdirSync(globbed), ['a.png']);
  const refused = await fromRepo(many, '--out', join(dir, 'x.png'), '--json');
  assert.equal(refused.code, 2);
  assert.match(JSON.parse(refused.stdout).error.message, /names 2 files: give --out-dir DIR/);
});
