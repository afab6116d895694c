// DC-AE loaded as users hold it: a diffusers VAE folder whose config.json `_class_name`
// (AutoencoderDC) picks the family, its encoder tensors in the same file ignored by
// strict binding; and the `vae/` component of a pipeline in the local Hugging Face cache, by repo
// id, with an fp16 `--variant`; a single .safetensors of diffusers keys with `--family dc-ae`. Each
// decodes bitwise as the same weights given in memory do. The original mit-han-lab layout
// (`decoder.project_in.conv`, `decoder.stages.*.op_list`, a fused `qkv.conv` that diffusers'
// converter splits into to_q / to_k / to_v) is not read: it is refused by strict binding, naming keys.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { loadVae } from '../../decode/vae.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from '../../weights/halfprecision.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { dcaeDecoderParams } from './graph.js';
import { dcaeRuntime } from './runtime.js';
import { dcae } from './spec.js';
import { DCAE_TINY } from './testing/configs.js';

const root = mkdtempSync(join(tmpdir(), 'distvae-dc-ae-'));
after(() => rmSync(root, { recursive: true, force: true }));

const config = resolveFamilyConfig(dcae, DCAE_TINY);
const decoder = syntheticWeights(dcaeDecoderParams(config), 4);
// What a full checkpoint carries beside the decoder (never read by a decode).
const encoder: [string, Tensor][] = [['encoder.conv_in.weight', { dims: [16, 3, 3, 3], data: new Float32Array(16 * 27).fill(0.5) }]];
const z = seededTensor([1, 32, 5, 6], 7);

/** The decoder run on weights held in memory (no source, no binding from a file). */
async function inMemory(weights: ReadonlyMap<string, Tensor>): Promise<Tensor> {
  const runner = await dcaeRuntime.createTileRunner(config, weights, { intraOpThreads: 1 });
  try {
    return await runner.decode(z);
  } finally {
    await runner.dispose();
  }
}

async function decodeOf(source: Parameters<typeof loadVae>[0]): Promise<{ family: string; out: Tensor }> {
  const vae = await loadVae(source, { threads: 1 });
  try {
    return { family: vae.family.name, out: await vae.decode(z) };
  } finally {
    await vae.dispose();
  }
}

test('a diffusers folder: _class_name picks dc-ae, encoder tensors are ignored, the decode is the in-memory one', async () => {
  const dir = join(root, 'vae-folder');
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(DCAE_TINY));
  writeSafetensors(join(dir, 'diffusion_pytorch_model.safetensors'), new Map([...decoder, ...encoder]));
  const fromFolder = await decodeOf(dir);
  assert.equal(fromFolder.family, 'dc-ae');
  assertSameBits(fromFolder.out, await inMemory(decoder), 'folder vs in-memory weights');
});

test('a pipeline in the Hub cache, by repo id with --variant fp16: the vae/ component decodes with the half-rounded weights', async () => {
  const cache = join(root, 'hub');
  const repo = join(cache, 'models--Efficient-Large-Model--Sana_1600M_1024px_diffusers');
  const commit = 'c0ffee'.padEnd(40, '0');
  const snapshot = join(repo, 'snapshots', commit);
  mkdirSync(join(snapshot, 'vae'), { recursive: true });
  mkdirSync(join(repo, 'blobs'), { recursive: true });
  mkdirSync(join(repo, 'refs'), { recursive: true });
  writeFileSync(join(repo, 'refs', 'main'), commit);
  const files: [string, (path: string) => void][] = [
    [
      'model_index.json',
      (p) =>
        writeFileSync(
          p,
          JSON.stringify({
            _class_name: 'SanaPipeline',
            vae: ['diffusers', 'AutoencoderDC'],
            transformer: ['diffusers', 'SanaTransformer2DModel'],
          }),
        ),
    ],
    ['vae/config.json', (p) => writeFileSync(p, JSON.stringify(DCAE_TINY))],
    ['vae/diffusion_pytorch_model.fp16.safetensors', (p) => writeSafetensors(p, new Map([...decoder, ...encoder]), { dtype: 'F16' })],
  ];
  // As the Hub cache stores them: blobs, and relative symlinks in the snapshot.
  for (const [i, [file, write]] of files.entries()) {
    const blob = join(repo, 'blobs', `blob${i}`);
    write(blob);
    const path = join(snapshot, file);
    symlinkSync(relative(join(path, '..'), blob), path);
  }
  const saved = process.env['HF_HUB_CACHE'];
  process.env['HF_HUB_CACHE'] = cache;
  try {
    const fromHub = await decodeOf({ path: 'Efficient-Large-Model/Sana_1600M_1024px_diffusers', variant: 'fp16' });
    assert.equal(fromHub.family, 'dc-ae');
    const half = new Map(
      [...decoder].map(([k, t]) => [k, { dims: t.dims, data: t.data.map((v) => float16BitsToFloat32(float32ToFloat16Bits(v))) }]),
    );
    assertSameBits(fromHub.out, await inMemory(half), 'Hub cache fp16 vs in-memory half-rounded weights');
  } finally {
    if (saved === undefined) delete process.env['HF_HUB_CACHE'];
    else process.env['HF_HUB_CACHE'] = saved;
  }
});

test('a single .safetensors of diffusers keys with --family dc-ae and its config decodes as the in-memory weights', async () => {
  const file = join(root, 'dcae.safetensors');
  writeSafetensors(file, new Map([...decoder, ...encoder]));
  const single = await decodeOf({ path: file, family: 'dc-ae', config: DCAE_TINY });
  assert.equal(single.family, 'dc-ae');
  assertSameBits(single.out, await inMemory(decoder), 'single file vs in-memory weights');
});

test('the original (mit-han-lab) single-file layout is refused before decoding, naming the keys it lacks', async () => {
  const file = join(root, 'original.safetensors');
  const original = new Map<string, Tensor>([
    ['decoder.project_in.conv.weight', { dims: [32, 32, 3, 3], data: new Float32Array(32 * 32 * 9) }],
    ['decoder.stages.2.op_list.0.context_module.qkv.conv.weight', { dims: [96, 32, 1, 1], data: new Float32Array(96 * 32) }],
  ]);
  writeSafetensors(file, original);
  await assert.rejects(
    () => loadVae({ path: file, family: 'dc-ae', config: DCAE_TINY }, { threads: 1 }),
    (e) => e instanceof DistVaeError && e.code === 'WEIGHTS_MISMATCH' && /decoder\.conv_in\.weight/.test(e.message),
  );
});
