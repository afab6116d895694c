import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { seededTensor } from '../tensor.js';
import { openSafetensors } from '../weights/safetensors.js';
import { withFileSource } from '../bytes/file-source.js';
import { readLatents } from './latents.js';
import { latentsOutputReasons, writeLatentsFile } from './latents-out.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-latents-out-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('latents written as .npy, .safetensors and ComfyUI .latent read back equal, with nothing left beside them', async () => {
  const latents = seededTensor([1, 4, 3, 5], 9);
  for (const name of ['a.npy', 'a.safetensors', 'a.latent']) {
    writeLatentsFile(join(dir, name), latents);
    const back = await readLatents(join(dir, name), { onNote: () => assert.fail('read as a legacy .latent') });
    assert.deepEqual(back, latents, name);
  }
  assert.deepEqual(readdirSync(dir).sort(), ['a.latent', 'a.npy', 'a.safetensors'], 'no temporary files left');
});

test('a .latent holds what ComfyUI SaveLatent writes: latent_tensor and the empty latent_format_version_0 marker', async () => {
  const path = join(dir, 'comfy.latent');
  writeLatentsFile(path, seededTensor([1, 16, 2, 2, 2], 1));
  await withFileSource(path, async (source) => {
    const file = await openSafetensors(source);
    assert.deepEqual([...file.entries.keys()].sort(), ['latent_format_version_0', 'latent_tensor']);
    assert.deepEqual((await file.readTensor('latent_format_version_0')).dims, [0]);
    assert.deepEqual((await file.readTensor('latent_tensor')).dims, [1, 16, 2, 2, 2]);
  });
});

test('an unknown extension and a scaled ComfyUI .latent are refused before anything is written', () => {
  assert.match(latentsOutputReasons('x.pt', {}, '--out')[0]!.message, /--out "x\.pt" must end in \.npy, \.safetensors, \.latent/);
  assert.match(
    latentsOutputReasons('x.latent', { scaled: true }, '--out', '--latents-scaled')[0]!.message,
    /holds raw latents.*drop --latents-scaled/,
  );
  assert.deepEqual(latentsOutputReasons('x.safetensors', { scaled: true }), []);
  assert.throws(() => writeLatentsFile(join(dir, 'b.latent'), seededTensor([1, 4, 1, 1], 1), { scaled: true }), {
    code: 'INVALID_ARGUMENT',
  });
  assert.equal(existsSync(join(dir, 'b.latent')), false);
});
