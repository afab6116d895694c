import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { tensor } from '../tensor.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { readLatents } from './latents.js';
import { writeNpy } from './npy.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-latents-'));
after(() => rmSync(dir, { recursive: true }));
const values = Float32Array.from({ length: 2 * 4 * 3 * 3 }, (_, i) => Math.cos(i));
const z = tensor([2, 4, 3, 3], values);

test('reads latents from .npy and from the "latents" tensor of a .safetensors file', async () => {
  writeNpy(join(dir, 'z.npy'), z);
  writeSafetensors(join(dir, 'z.safetensors'), { latents: z, other: tensor([1]) });
  for (const name of ['z.npy', 'z.safetensors']) {
    const read = await readLatents(join(dir, name));
    assert.deepEqual([read.dims, read.data], [[2, 4, 3, 3], values]);
  }
});

test('a .safetensors file with a single tensor is accepted whatever its name; otherwise the keys are listed', async () => {
  writeSafetensors(join(dir, 'one.safetensors'), { z: z });
  assert.deepEqual((await readLatents(join(dir, 'one.safetensors'))).dims, [2, 4, 3, 3]);
  writeSafetensors(join(dir, 'two.safetensors'), { a: z, b: z });
  await assert.rejects(() => readLatents(join(dir, 'two.safetensors')), {
    code: 'FILE_INVALID',
    message: /no tensor named "latents" \(tensors in the file: "a", "b"\)/,
  });
});

test('non-finite and empty latents are refused with counts and the first index', async () => {
  const bad = values.slice();
  bad[1 * 36 + 2 * 9 + 1 * 3 + 2] = NaN; // flat 59
  bad[1 * 36 + 0 * 9 + 1 * 3 + 1] = Infinity; // flat 40, the first
  bad[50] = NaN;
  writeNpy(join(dir, 'bad.npy'), tensor([2, 4, 3, 3], bad));
  await assert.rejects(
    () => readLatents(join(dir, 'bad.npy')),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'TENSOR_INVALID' &&
      /2 NaN and 1 infinite values of 72; the first at flat index 40, index \[1, 0, 1, 1\] of shape \[2, 4, 3, 3\] \(value Infinity\)/.test(
        e.message,
      ),
  );
  writeNpy(join(dir, 'empty.npy'), tensor([1, 4, 0, 3]));
  await assert.rejects(() => readLatents(join(dir, 'empty.npy')), {
    code: 'TENSOR_INVALID',
    message: /latents of shape \[1, 4, 0, 3\] are empty/,
  });
});

test('other extensions and missing files are refused', async () => {
  await assert.rejects(() => readLatents(join(dir, 'z.pt')), { code: 'INVALID_ARGUMENT', message: /expected a \.npy, \.safetensors/ });
  await assert.rejects(() => readLatents(join(dir, 'missing.npy')), { code: 'FILE_NOT_FOUND' });
});

test('ComfyUI .latent files: latent_tensor as is with the format marker, times 1/0.18215 without it (LoadLatent), with a note', async () => {
  const notes: string[] = [];
  const onNote = (text: string) => notes.push(text);
  writeSafetensors(join(dir, 'new.latent'), { latent_tensor: z, latent_format_version_0: tensor([0]) });
  assert.deepEqual((await readLatents(join(dir, 'new.latent'), { onNote })).data, values);
  assert.deepEqual(notes, []);
  writeSafetensors(join(dir, 'old.latent'), { latent_tensor: z });
  const old = await readLatents(join(dir, 'old.latent'), { onNote });
  // The rescaling is said, never silent.
  assert.equal(notes.length, 1);
  assert.match(notes[0]!, /old\.latent has no "latent_format_version_0" tensor, .* rescaled by 1\/0\.18215/);
  assert.deepEqual(
    old.data,
    values.map((v) => v / 0.18215),
  );
  writeSafetensors(join(dir, 'other.latent'), { samples: z, x: z });
  await assert.rejects(readLatents(join(dir, 'other.latent')), {
    code: 'FILE_INVALID',
    message: /a ComfyUI \.latent file holds "latent_tensor" \(tensors in the file: "samples", "x"\)/,
  });
});

test("file.safetensors:name picks a tensor; a missing name lists the file's tensors", async () => {
  writeSafetensors(join(dir, 'many.safetensors'), { a: tensor([1, 4, 2, 2]), b: z });
  assert.deepEqual((await readLatents(`${join(dir, 'many.safetensors')}:b`)).data, values);
  await assert.rejects(readLatents(`${join(dir, 'many.safetensors')}:c`), {
    code: 'FILE_INVALID',
    message: /no tensor named "c" \(tensors in the file: "a", "b"\)/,
  });
  await assert.rejects(readLatents(join(dir, 'many.safetensors')), { message: /pick one with .*many\.safetensors:<name>/ });
});
