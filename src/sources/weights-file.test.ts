import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { tensor } from '../tensor.js';
import { readWeights } from './weights-file.js';
import { buildPth } from '../weights/pth-fixture.js';
import { writeSafetensors } from '../weights/safetensors.js';

test('picks the format from the content, not the extension', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-load-'));
  try {
    const pth = join(dir, 'model.bin');
    writeFileSync(
      pth,
      buildPth({ storages: { '0': { dtype: 'F16', values: Float32Array.from([1, 2]) } }, tensors: { w: { storage: '0', size: [2] } } }),
    );
    const st = join(dir, 'model.pth');
    writeSafetensors(st, { w: tensor([2], Float32Array.from([3, 4])) });
    assert.deepEqual([...(await readWeights(pth)).get('w')!.data], [1, 2]);
    assert.deepEqual([...(await readWeights(st)).get('w')!.data], [3, 4]);
    writeFileSync(join(dir, 'legacy.pt'), Uint8Array.from([0x80, 0x02, 0x8a, 0x0a]));
    await assert.rejects(() => readWeights(join(dir, 'legacy.pt')), { code: 'FILE_INVALID', message: /legacy \(pre-zip\)/ });
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('a synthetic or float16 VAE source is file-backed: its weights lie in a scratch file (read back bit-exact) that release() removes', async () => {
  const { existsSync } = await import('node:fs');
  const { readVaeSource } = await import('./vae-source.js');
  const { syntheticWeights } = await import('../weights/synthetic.js');
  const { float16ArrayToFloat32, float32ArrayToFloat16 } = await import('../weights/halfprecision.js');
  const config = { _class_name: 'AutoencoderKL', block_out_channels: [8, 16], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };
  const synthetic = await readVaeSource({ config, weights: 'synthetic', seed: 3 });
  const expected = syntheticWeights(synthetic.runtime.decoderParams(synthetic.config), 3);
  const files = new Set<string>();
  for (const [name, t] of synthetic.weights) {
    const file = (t as { file?: { path: string } }).file;
    assert.ok(file, `${name} is file-backed`);
    files.add(file.path);
    assert.deepEqual(t.data, expected.get(name)!.data, name);
  }
  assert.equal(files.size, 1);
  synthetic.release();
  assert.equal(existsSync([...files][0]!), false);

  const dir = mkdtempSync(join(tmpdir(), 'distvae-f16-'));
  try {
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    writeSafetensors(join(dir, 'diffusion_pytorch_model.safetensors'), expected, { dtype: 'F16' });
    const half = await readVaeSource({ path: dir });
    for (const [name, t] of half.weights) {
      assert.ok((t as { file?: unknown }).file, `${name} is file-backed`);
      assert.deepEqual(t.data, float16ArrayToFloat32(float32ArrayToFloat16(expected.get(name)!.data)), name);
    }
    half.release();
  } finally {
    rmSync(dir, { recursive: true });
  }
});
