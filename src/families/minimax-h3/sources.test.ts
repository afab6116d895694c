// MiniMax-H3 loaded as users hold it: a diffusers VAE folder whose config.json `_class_name`
// (AutoencoderKLMiniMaxH3) picks the family, its encoder and quant_conv tensors in the same file
// ignored by strict binding; and the `vae/` component of a pipeline in the local Hugging Face cache,
// by repo id, with an fp16 `--variant`. Each decodes bitwise as the same weights given in memory do.
// (MiniMax ships no original single-file layout of its own for this VAE: its release is the
// diffusers folder, so there is no other layout to read.)

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from '../../weights/halfprecision.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { miniMaxDecoderParams } from './graph.js';
import { miniMaxH3Runtime } from './runtime.js';
import { miniMaxH3 } from './spec.js';
import { MINIMAX_H3_TINY } from './testing/configs.js';

const root = mkdtempSync(join(tmpdir(), 'distvae-minimax-h3-'));
after(() => rmSync(root, { recursive: true, force: true }));

const config = resolveFamilyConfig(miniMaxH3, MINIMAX_H3_TINY);
const decoder = syntheticWeights(miniMaxDecoderParams(config), 4);
// What a full checkpoint carries beside the decoder (never read by a decode).
const others: [string, Tensor][] = [
  ['encoder.conv_in.weight', { dims: [16, 3, 3, 3, 3], data: new Float32Array(16 * 81).fill(0.5) }],
  ['quant_conv.weight', { dims: [48, 48, 1, 1, 1], data: new Float32Array(48 * 48).fill(0.25) }],
];
const z = seededTensor([1, 24, 3, 4, 5], 7);

/** The decoder run on weights held in memory (no source, no binding from a file). */
async function inMemory(weights: ReadonlyMap<string, Tensor>): Promise<Tensor> {
  const runner = await miniMaxH3Runtime.createTileRunner(config, weights, { intraOpThreads: 1 });
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

test('a diffusers folder: _class_name picks minimax-h3, encoder and quant_conv tensors are ignored, the decode is the in-memory one', async () => {
  const dir = join(root, 'vae-folder');
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(MINIMAX_H3_TINY));
  writeSafetensors(join(dir, 'diffusion_pytorch_model.safetensors'), new Map([...decoder, ...others]));
  const fromFolder = await decodeOf(dir);
  assert.equal(fromFolder.family, 'minimax-h3');
  assertSameBits(fromFolder.out, await inMemory(decoder), 'folder vs in-memory weights');
});

test('a pipeline in the Hub cache, by repo id with --variant fp16: the vae/ component decodes with the half-rounded weights', async () => {
  const cache = join(root, 'hub');
  const repo = join(cache, 'models--MiniMaxAI--MiniMax-H3');
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
            _class_name: 'MiniMaxH3Pipeline',
            vae: ['diffusers', 'AutoencoderKLMiniMaxH3'],
            transformer: ['diffusers', 'MiniMaxH3Transformer3DModel'],
          }),
        ),
    ],
    ['vae/config.json', (p) => writeFileSync(p, JSON.stringify(MINIMAX_H3_TINY))],
    ['vae/diffusion_pytorch_model.fp16.safetensors', (p) => writeSafetensors(p, new Map([...decoder, ...others]), { dtype: 'F16' })],
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
    const fromHub = await decodeOf({ path: 'MiniMaxAI/MiniMax-H3', variant: 'fp16' });
    assert.equal(fromHub.family, 'minimax-h3');
    const half = new Map(
      [...decoder].map(([k, t]) => [k, { dims: t.dims, data: t.data.map((v) => float16BitsToFloat32(float32ToFloat16Bits(v))) }]),
    );
    assertSameBits(fromHub.out, await inMemory(half), 'Hub cache fp16 vs in-memory half-rounded weights');
  } finally {
    if (saved === undefined) delete process.env['HF_HUB_CACHE'];
    else process.env['HF_HUB_CACHE'] = saved;
  }
});
