// HunyuanVideo 1.5 loaded as users hold it: a diffusers VAE folder whose config.json `_class_name`
// (AutoencoderKLHunyuanVideo15) picks the family, its encoder tensors in the same file ignored by
// strict binding; the `vae/` component of a pipeline in the local Hugging Face cache, by repo id,
// with an fp16 `--variant`; and Tencent's original `vae/diffusion_pytorch_model.safetensors` (the
// names diffusers' convert_hunyuan_video1_5_to_diffusers.py renames), as a bare file with the
// family named — its config read from its shapes. Each decodes bitwise as the same weights given
// in memory do.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from '../../weights/halfprecision.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { hunyuanVideo15DecoderParams } from './graph.js';
import { hunyuanVideo15Runtime } from './runtime.js';
import { hunyuanVideo15 } from './spec.js';
import { HUNYUAN_VIDEO_15_TINY } from './testing/configs.js';

const root = mkdtempSync(join(tmpdir(), 'distvae-hunyuan-video-15-'));
after(() => rmSync(root, { recursive: true, force: true }));

const config = resolveFamilyConfig(hunyuanVideo15, HUNYUAN_VIDEO_15_TINY);
const decoder = syntheticWeights(hunyuanVideo15DecoderParams(config), 4);
// What a full checkpoint carries beside the decoder (never read by a decode).
const encoder: [string, Tensor][] = [
  ['encoder.conv_in.conv.weight', { dims: [16, 3, 3, 3, 3], data: new Float32Array(16 * 81).fill(0.5) }],
];
const z = seededTensor([1, 32, 2, 5, 6], 7);

/** The decoder run on weights held in memory (no source, no binding from a file). */
async function inMemory(weights: ReadonlyMap<string, Tensor>): Promise<Tensor> {
  const runner = await hunyuanVideo15Runtime.createTileRunner(config, weights, { intraOpThreads: 1 });
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

test('a diffusers folder: _class_name picks hunyuan-video-1.5, encoder tensors are ignored, the decode is the in-memory one', async () => {
  const dir = join(root, 'vae-folder');
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(HUNYUAN_VIDEO_15_TINY));
  writeSafetensors(join(dir, 'diffusion_pytorch_model.safetensors'), new Map([...decoder, ...encoder]));
  const fromFolder = await decodeOf(dir);
  assert.equal(fromFolder.family, 'hunyuan-video-1.5');
  assert.deepEqual(fromFolder.out.dims, [1, 3, 5, 20, 24]);
  assertSameBits(fromFolder.out, await inMemory(decoder), 'folder vs in-memory weights');
});

test('a pipeline in the Hub cache, by repo id with --variant fp16: the vae/ component decodes with the half-rounded weights', async () => {
  const cache = join(root, 'hub');
  const repo = join(cache, 'models--hunyuanvideo-community--HunyuanVideo-1.5-Diffusers-480p_t2v');
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
            _class_name: 'HunyuanVideo15Pipeline',
            vae: ['diffusers', 'AutoencoderKLHunyuanVideo15'],
            transformer: ['diffusers', 'HunyuanVideo15Transformer3DModel'],
          }),
        ),
    ],
    ['vae/config.json', (p) => writeFileSync(p, JSON.stringify(HUNYUAN_VIDEO_15_TINY))],
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
    const fromHub = await decodeOf({ path: 'hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-480p_t2v', variant: 'fp16' });
    assert.equal(fromHub.family, 'hunyuan-video-1.5');
    const half = new Map(
      [...decoder].map(([k, t]) => [k, { dims: t.dims, data: t.data.map((v) => float16BitsToFloat32(float32ToFloat16Bits(v))) }]),
    );
    assertSameBits(fromHub.out, await inMemory(half), 'Hub cache fp16 vs in-memory half-rounded weights');
  } finally {
    if (saved === undefined) delete process.env['HF_HUB_CACHE'];
    else process.env['HF_HUB_CACHE'] = saved;
  }
});

/** The original name of a diffusers decoder key, spelled from diffusers' conversion script (the inverse of what it renames). */
function originalKey(key: string): string {
  return key
    .replace(/^decoder\.mid_block\.resnets\.(\d)\./, (_, i: string) => `decoder.mid.block_${Number(i) + 1}.`)
    .replace(/^decoder\.mid_block\.attentions\.0\.to_(q|k|v)\./, 'decoder.mid.attn_1.$1.')
    .replace(/^decoder\.mid_block\.attentions\.0\./, 'decoder.mid.attn_1.')
    .replace(/^decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\./, 'decoder.up.$1.block.$2.')
    .replace(/^decoder\.up_blocks\.(\d+)\.upsamplers\.0\./, 'decoder.up.$1.upsample.');
}

test("Tencent's original layout as a bare file with --family: keys renamed as diffusers converts them, config from the shapes", async () => {
  const original = new Map([...decoder].map(([k, t]) => [originalKey(k), t]));
  assert.ok(original.has('decoder.mid.attn_1.q.weight') && original.has('decoder.up.1.upsample.conv.conv.weight'));
  assert.ok(original.has('decoder.mid.block_2.norm1.gamma') && original.has('decoder.up.0.block.1.conv2.conv.bias'));
  const file = join(root, 'hunyuanvideo15-vae.safetensors');
  writeSafetensors(file, new Map([...original, ...encoder]));
  const fromFile = await decodeOf({ path: file, family: 'hunyuan-video-1.5' });
  assert.equal(fromFile.family, 'hunyuan-video-1.5');
  assertSameBits(fromFile.out, await inMemory(decoder), 'original layout vs in-memory weights');
  // Its keys alone do not name the family (no single-file layout detection for it): a bare file needs --family.
  await assert.rejects(
    decodeOf(file),
    (e: unknown) => e instanceof DistVaeError && e.code === 'INVALID_ARGUMENT' && e.reasons[0]?.code === 'FAMILY_REQUIRED',
  );
});
