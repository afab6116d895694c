// Sources a user's disk already holds: a diffusers pipeline folder, a Hub repo in a fake local
// cache (refs → snapshots, files symlinked to blobs, as huggingface_hub lays them out), weight
// variants with diffusers' rule for a missing one, and misses that name every path searched.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { klDecoderParams } from '../families/autoencoder-kl/graph.js';
import { getFamily } from '../families/registry.js';
import type { RawConfig } from '../families/types.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from '../weights/halfprecision.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { hubCacheDirs, locateVae, parseRepoId, withVariant } from './locate.js';
import { readVaeSource, vaeSpecOfSource } from './vae-source.js';

const TINY: RawConfig = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [8, 16],
  layers_per_block: 1,
  norm_num_groups: 4,
  latent_channels: 4,
};
const params = klDecoderParams(getFamily('autoencoder-kl').resolveConfig(TINY));
const plainWeights = syntheticWeights(params, 1);
const fp16Weights = syntheticWeights(params, 2);
const root = mkdtempSync(join(tmpdir(), 'distvae-locate-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A pipeline folder: model_index.json, a vae/ component (plain and optionally fp16 weights), a unet/ component. */
function pipeline(dir: string, options: { fp16: boolean }): string {
  mkdirSync(join(dir, 'vae'), { recursive: true });
  mkdirSync(join(dir, 'unet'), { recursive: true });
  writeFileSync(
    join(dir, 'model_index.json'),
    JSON.stringify({
      _class_name: 'StableDiffusionPipeline',
      _diffusers_version: '0.30.0',
      vae: ['diffusers', 'AutoencoderKL'],
      unet: ['diffusers', 'UNet2DConditionModel'],
      safety_checker: [null, null],
    }),
  );
  writeFileSync(join(dir, 'vae', 'config.json'), JSON.stringify(TINY));
  writeSafetensors(join(dir, 'vae', 'diffusion_pytorch_model.safetensors'), plainWeights);
  if (options.fp16) writeSafetensors(join(dir, 'vae', 'diffusion_pytorch_model.fp16.safetensors'), fp16Weights, { dtype: 'F16' });
  return dir;
}

/** Moves every file of `snapshot` into blobs/ and leaves a relative symlink, as the Hub cache does. */
function intoCache(cache: string, repo: string, commit: string, build: (snapshot: string) => void, ref = 'main'): void {
  const repoRoot = join(cache, `models--${repo.replace('/', '--')}`);
  const snapshot = join(repoRoot, 'snapshots', commit);
  build(snapshot);
  mkdirSync(join(repoRoot, 'blobs'), { recursive: true });
  mkdirSync(join(repoRoot, 'refs'), { recursive: true });
  writeFileSync(join(repoRoot, 'refs', ref), commit);
  let n = 0;
  for (const file of [
    'model_index.json',
    'vae/config.json',
    'vae/diffusion_pytorch_model.safetensors',
    'vae/diffusion_pytorch_model.fp16.safetensors',
  ]) {
    const path = join(snapshot, file);
    const blob = join(repoRoot, 'blobs', `blob${n++}`);
    try {
      renameSync(path, blob);
    } catch {
      continue;
    }
    symlinkSync(relative(join(path, '..'), blob), path);
  }
}

const halfRounded = (data: Float32Array) => data.map((v) => float16BitsToFloat32(float32ToFloat16Bits(v)));

test('a pipeline folder loads its vae component; --subfolder picks another; a pipeline without one lists its components', async () => {
  const dir = pipeline(join(root, 'pipe'), { fp16: false });
  const read = await readVaeSource({ path: dir });
  assert.equal(read.family.name, 'autoencoder-kl');
  assert.deepEqual(read.weights.get('decoder.conv_in.weight')!.data, plainWeights.get('decoder.conv_in.weight')!.data);
  assert.equal(vaeSpecOfSource({ path: dir })!.family.name, 'autoencoder-kl');
  assert.deepEqual(locateVae(dir, { subfolder: 'vae' }), {
    kind: 'folder',
    folder: join(dir, 'vae'),
    weightsPath: join(dir, 'vae', 'diffusion_pytorch_model.safetensors'),
    notes: [],
  });
  assert.throws(() => locateVae(dir, { subfolder: 'unet' }), {
    code: 'FILE_NOT_FOUND',
    message: /the pipeline .* has no unet\/config\.json/,
  });
  assert.throws(() => locateVae(dir, { subfolder: '../x' }), { code: 'INVALID_ARGUMENT' });
  const novae = join(root, 'novae');
  mkdirSync(novae);
  writeFileSync(
    join(novae, 'model_index.json'),
    JSON.stringify({ _class_name: 'P', unet: ['diffusers', 'UNet2DConditionModel'], vae_decoder: ['diffusers', 'AutoencoderKL'] }),
  );
  assert.throws(() => locateVae(novae), {
    code: 'FILE_NOT_FOUND',
    message: /pipeline without a "vae" component \(components: unet, vae_decoder\); pick one with --subfolder/,
  });
});

test('variants: fp16 weights are read and widened exactly; a pipeline lacking the variant falls back, a VAE folder lacking it is refused', async () => {
  const withFp16 = pipeline(join(root, 'pipe16'), { fp16: true });
  const read = await readVaeSource({ path: withFp16, variant: 'fp16' });
  const w = read.weights.get('decoder.conv_in.weight')!;
  assert.deepEqual(w.data, halfRounded(fp16Weights.get('decoder.conv_in.weight')!.data));
  const without = pipeline(join(root, 'pipe-nofp16'), { fp16: false });
  const fallback = locateVae(without, { variant: 'fp16' });
  assert.equal(fallback.weightsPath, join(without, 'vae', 'diffusion_pytorch_model.safetensors'));
  assert.equal(fallback.notes.length, 2);
  assert.match(fallback.notes[0]!, /is a diffusers pipeline: loading its vae\/ component/);
  assert.match(fallback.notes[1]!, /has no diffusion_pytorch_model\.fp16\.safetensors; loading diffusion_pytorch_model\.safetensors/);
  assert.throws(() => locateVae(join(without, 'vae'), { variant: 'fp16' }), {
    code: 'FILE_NOT_FOUND',
    message: /has none of diffusion_pytorch_model\.fp16\.safetensors, diffusion_pytorch_model\.fp16\.bin/,
  });
  assert.throws(() => locateVae(without, { variant: '../x' }), { code: 'INVALID_ARGUMENT' });
  assert.equal(withVariant('diffusion_pytorch_model.safetensors', 'bf16'), 'diffusion_pytorch_model.bf16.safetensors');
});

test('a repo id resolves through refs/<revision> to its snapshot in the local cache, blobs behind symlinks', async () => {
  const cache = join(root, 'hub');
  const commit = 'a'.repeat(40);
  const other = 'b'.repeat(40);
  intoCache(cache, 'org/pipe', commit, (s) => pipeline(s, { fp16: true }));
  intoCache(cache, 'org/pipe', other, (s) => pipeline(s, { fp16: false }), 'v2');
  const env = { HF_HUB_CACHE: cache };
  assert.equal(
    locateVae('org/pipe', { env }).weightsPath,
    join(cache, 'models--org--pipe', 'snapshots', commit, 'vae', 'diffusion_pytorch_model.safetensors'),
  );
  assert.equal(
    locateVae('org/pipe@v2', { env }).weightsPath,
    join(cache, 'models--org--pipe', 'snapshots', other, 'vae', 'diffusion_pytorch_model.safetensors'),
  );
  assert.equal(
    locateVae(`org/pipe@${other}`, { env }).weightsPath,
    join(cache, 'models--org--pipe', 'snapshots', other, 'vae', 'diffusion_pytorch_model.safetensors'),
  );
  assert.equal(
    locateVae('org/pipe', { env, variant: 'fp16' }).weightsPath,
    join(cache, 'models--org--pipe', 'snapshots', commit, 'vae', 'diffusion_pytorch_model.fp16.safetensors'),
  );
  const saved = process.env['HF_HUB_CACHE'];
  process.env['HF_HUB_CACHE'] = cache;
  try {
    const read = await readVaeSource({ path: 'org/pipe', variant: 'fp16' });
    assert.deepEqual(read.weights.get('decoder.conv_out.bias')!.data, halfRounded(fp16Weights.get('decoder.conv_out.bias')!.data));
  } finally {
    if (saved === undefined) delete process.env['HF_HUB_CACHE'];
    else process.env['HF_HUB_CACHE'] = saved;
  }
  assert.throws(
    () => locateVae('org/absent@dev', { env }),
    (e: unknown) =>
      e instanceof Error &&
      (e as { code?: string }).code === 'FILE_NOT_FOUND' &&
      e.message.includes(join(cache, 'models--org--absent', 'refs', 'dev')) &&
      /nothing is downloaded/.test(e.message),
  );
});

test('the cache cannot lead outside itself: refs, snapshot links and subfolders must resolve inside the repo; a sane cache loads', () => {
  const cache = join(root, 'hostile-hub');
  const commit = 'c'.repeat(40);
  intoCache(cache, 'org/sane', commit, (s) => pipeline(s, { fp16: false }));
  const env = { HF_HUB_CACHE: cache };
  const sane = locateVae('org/sane', { env });
  assert.equal(sane.weightsPath, join(cache, 'models--org--sane', 'snapshots', commit, 'vae', 'diffusion_pytorch_model.safetensors'));
  assert.equal(locateVae('org/sane', { env, subfolder: 'vae' }).kind, 'folder');

  // A pipeline outside the cache, which each hostile ref / link below points at.
  const outside = pipeline(join(root, 'outside-pipe'), { fp16: false });
  const refusedAs = (code: string, reasonCode: string, path: RegExp) => (e: unknown) => {
    const err = e as { code?: string; reasons?: { code: string }[]; message?: string };
    return err.code === code && err.reasons?.[0]?.code === reasonCode && path.test(err.message ?? '');
  };
  const repo = (name: string, ref: string) => {
    const repoRoot = join(cache, `models--org--${name}`);
    mkdirSync(join(repoRoot, 'refs'), { recursive: true });
    mkdirSync(join(repoRoot, 'snapshots'), { recursive: true });
    writeFileSync(join(repoRoot, 'refs', 'main'), ref);
    return repoRoot;
  };
  repo('dotted', relative(join(cache, 'models--org--dotted', 'snapshots'), outside));
  assert.throws(() => locateVae('org/dotted', { env }), refusedAs('FILE_INVALID', 'CACHE_PATH_ESCAPES', /refs\/main holds "\.\.\//));
  repo('absolute', outside);
  assert.throws(
    () => locateVae('org/absolute', { env }),
    refusedAs('FILE_INVALID', 'CACHE_PATH_ESCAPES', /refs\/main holds ".*outside-pipe"/),
  );
  repo('dangling', 'd'.repeat(40));
  assert.throws(
    () => locateVae('org/dangling', { env }),
    refusedAs('FILE_NOT_FOUND', 'NOT_IN_CACHE', new RegExp(`names the snapshot d{40}, but .*snapshots/d{40} is not a folder`)),
  );
  // A snapshot folder that is itself a link out of snapshots/.
  const linkedSnap = repo('linked-snapshot', 'e'.repeat(40));
  symlinkSync(outside, join(linkedSnap, 'snapshots', 'e'.repeat(40)));
  assert.throws(
    () => locateVae('org/linked-snapshot', { env }),
    refusedAs('FILE_INVALID', 'CACHE_PATH_ESCAPES', /outside its repo's snapshots/),
  );

  // A repo folder that is a link out of the cache.
  const away = join(root, 'away-repo');
  intoCache(away, 'org/away', commit, (s) => pipeline(s, { fp16: false }));
  symlinkSync(join(away, 'models--org--away'), join(cache, 'models--org--away'));
  assert.throws(() => locateVae('org/away', { env }), refusedAs('FILE_INVALID', 'CACHE_PATH_ESCAPES', /outside the Hugging Face cache/));

  // Snapshot files that link outside the repo's blobs/: the weights, the config, the pipeline index, the component folder.
  for (const [i, file] of ['vae/diffusion_pytorch_model.safetensors', 'vae/config.json', 'model_index.json'].entries()) {
    const name = `escape${i}`;
    intoCache(cache, `org/${name}`, commit, (s) => pipeline(s, { fp16: false }));
    const link = join(cache, `models--org--${name}`, 'snapshots', commit, file);
    rmSync(link);
    symlinkSync(join(outside, file), link);
    assert.throws(
      () => locateVae(`org/${name}`, { env }),
      refusedAs(
        'FILE_INVALID',
        'CACHE_PATH_ESCAPES',
        new RegExp(`${file.replace('.', '\\.')} in the Hugging Face cache resolves to .*outside-pipe`),
      ),
      file,
    );
  }
  intoCache(cache, 'org/escape-folder', commit, (s) => pipeline(s, { fp16: false }));
  const vaeLink = join(cache, 'models--org--escape-folder', 'snapshots', commit, 'vae');
  rmSync(vaeLink, { recursive: true });
  symlinkSync(join(outside, 'vae'), vaeLink);
  assert.throws(() => locateVae('org/escape-folder', { env }), refusedAs('FILE_INVALID', 'CACHE_PATH_ESCAPES', /outside its snapshot/));

  // Subfolder and variant names are one folder / one name: no `..`, no separators.
  for (const subfolder of ['..', '../vae', 'vae/../vae', '/etc', 'a\\b', '.', ''])
    assert.throws(
      () => locateVae('org/sane', { env, subfolder }),
      refusedAs('INVALID_ARGUMENT', 'SUBFOLDER_INVALID', /subfolder/),
      subfolder,
    );
  for (const variant of ['..', '../fp16', 'fp16/x', 'a\\b'])
    assert.throws(() => locateVae('org/sane', { env, variant }), refusedAs('INVALID_ARGUMENT', 'VARIANT_INVALID', /variant/), variant);
});

test('the cache folder follows huggingface_hub: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub', () => {
  assert.deepEqual(hubCacheDirs({ HF_HUB_CACHE: '/a', HF_HOME: '/b' }), ['/a']);
  assert.deepEqual(hubCacheDirs({ HF_HOME: '/b' }), ['/b/hub']);
  assert.deepEqual(hubCacheDirs({ XDG_CACHE_HOME: '/x' }), ['/x/huggingface/hub']);
  assert.deepEqual(parseRepoId('stabilityai/sd-vae-ft-mse@main'), { org: 'stabilityai', name: 'sd-vae-ft-mse', revision: 'main' });
  assert.equal(parseRepoId('./relative/path'), null);
  assert.equal(parseRepoId('a/b/c'), null);
  assert.throws(() => locateVae(join(root, 'no', 'such', 'folder')), { code: 'FILE_NOT_FOUND', message: /VAE not found/ });
});
