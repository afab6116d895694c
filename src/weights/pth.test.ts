import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { unzipSync, zipSync } from 'fflate';
import { DistVaeError } from '../errors.js';
import { buildPth, PickleWriter, type FixtureOptions } from './pth-fixture.js';
import { parsePth, readPth } from './pth.js';

const TAEF2_DECODER = join(dirname(fileURLToPath(import.meta.url)), '../../../shared/models/taef2/taef2_decoder.pth');

const ramp = (n: number, start: number) => Float32Array.from({ length: n }, (_, i) => start + i);
const fixture: FixtureOptions = {
  storages: {
    '0': { dtype: 'F16', values: ramp(12, -3.5) },
    '1': { dtype: 'BF16', values: Float32Array.from([1, 2, 3]) },
    '2': { dtype: 'F32', values: Float32Array.from([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]) },
  },
  tensors: {
    w: { storage: '0', size: [3, 4] },
    // A transposed view with a storage offset: element [i][j] = storage[2 + i + 3j].
    'w.t': { storage: '0', size: [3, 2], stride: [1, 3], offset: 2 },
    b: { storage: '1', size: [3] },
    'deep.conv': { storage: '2', size: [1, 2, 1, 2], offset: 2, stride: [6, 2, 6, 1] },
  },
};

async function assertFileInvalid(bytes: Uint8Array, pattern: RegExp, code = 'FILE_INVALID'): Promise<void> {
  await assert.rejects(
    () => parsePth(bytes, 'x.pth'),
    (e: unknown) => e instanceof DistVaeError && e.code === code && e.message.startsWith('x.pth') && pattern.test(e.message),
  );
}

/** Rewrites a fixture's zip entries (all stored, as torch writes them). */
function editZip(bytes: Uint8Array, edit: (files: Record<string, Uint8Array>) => void): Uint8Array {
  const files = unzipSync(bytes);
  edit(files);
  return zipSync(Object.fromEntries(Object.entries(files).map(([name, data]) => [name, [data, { level: 0 }]])));
}

test('reads dtypes, storage offsets, strides and shared storages into contiguous float32', async () => {
  const { tensors, stateDictKey } = await parsePth(buildPth(fixture));
  assert.equal(stateDictKey, null);
  assert.deepEqual([...tensors.keys()], ['w', 'w.t', 'b', 'deep.conv']);
  assert.deepEqual([...tensors.get('w')!.data], [...ramp(12, -3.5)]);
  assert.deepEqual(tensors.get('w.t')!.dims, [3, 2]);
  assert.deepEqual([...tensors.get('w.t')!.data], [-1.5, 1.5, -0.5, 2.5, 0.5, 3.5]); // numpy as_strided on the same bytes
  assert.deepEqual([tensors.get('b')!.dtype, [...tensors.get('b')!.data]], ['BF16', [1, 2, 3]]);
  assert.equal(tensors.get('w')!.dtype, 'F16');
  const deep = tensors.get('deep.conv')!;
  assert.deepEqual([deep.dtype, deep.dims, [...deep.data]], ['F32', [1, 2, 1, 2], [0.3, 0.4, 0.5, 0.6].map(Math.fround)]);
});

test('accepts any top folder, nn.Parameters and a state dict wrapped in a checkpoint dict', async () => {
  const wrapped = await parsePth(buildPth({ ...fixture, folder: 'my_model', parameters: true, wrapKeys: ['ema', 'state_dict'] }));
  assert.equal(wrapped.stateDictKey, 'state_dict');
  assert.deepEqual([...wrapped.tensors.get('w.t')!.data], [-1.5, 1.5, -0.5, 2.5, 0.5, 3.5]);
  assert.equal((await parsePth(buildPth({ ...fixture, wrapKeys: ['ema'] }))).stateDictKey, 'ema');
  await assertFileInvalid(
    buildPth({ ...fixture, wrapKeys: ['a', 'b'] }),
    /no state dict found: .*keys "a", "b", "epoch".* holds 2 dicts of tensors \(a, b; none named state_dict/,
  );
});

test('refuses broken archives and storages, naming what is wrong', async () => {
  const good = buildPth(fixture);
  await assertFileInvalid(new Uint8Array([1, 2, 3, 4]), /not a zip-format PyTorch checkpoint/);
  await assertFileInvalid(new Uint8Array([0x80, 0x02, 0x8a, 0x0a]), /legacy \(pre-zip\) torch\.save format/);
  await assertFileInvalid(good.subarray(0, good.length - 30), /no zip end-of-central-directory record/);
  await assertFileInvalid(
    editZip(good, (f) => (f['other/data.pkl'] = f['archive/data.pkl']!)),
    /expected one <folder>\/data\.pkl entry, found 2/,
  );
  await assertFileInvalid(
    editZip(good, (f) => delete f['archive/data/1']),
    /storage 1 is referenced but archive\/data\/1 is missing/,
  );
  await assertFileInvalid(
    editZip(good, (f) => (f['archive/data/0'] = f['archive/data/0']!.subarray(0, 20))),
    /storage 0 has 20 bytes, torch\.HalfStorage of 12 elements needs 24 \(truncated file\?\)/,
  );
  await assertFileInvalid(
    buildPth({ ...fixture, tensors: { bad: { storage: '0', size: [4], stride: [4] } } }),
    /tensor "bad": offset 0, size \[4\], stride \[4\] reach element 12 of a 12-element storage/,
  );
  await assertFileInvalid(
    editZip(good, (f) => (f['archive/byteorder'] = new TextEncoder().encode('big'))),
    /big-endian/,
    'UNSUPPORTED',
  );
});

test('a hostile data.pkl inside a checkpoint is refused as UNSAFE_PICKLE', async () => {
  const hostile = new PickleWriter().proto(2).global('os', 'system').binunicode('echo pwned').raw(0x85).reduce().stop().bytes();
  const bytes = editZip(buildPth(fixture), (f) => (f['archive/data.pkl'] = hostile));
  await assertFileInvalid(bytes, /x\.pth:archive\/data\.pkl: pickle byte 2: global os\.system is not in the allowlist/, 'UNSAFE_PICKLE');
});

test('loads the trained TAEF2 decoder (float16) from ../shared', async (t) => {
  if (!existsSync(TAEF2_DECODER)) {
    t.skip(`real checkpoint absent: ${TAEF2_DECODER}`);
    return;
  }
  const { tensors, stateDictKey } = await readPth(TAEF2_DECODER);
  assert.equal(stateDictKey, null);
  assert.equal(tensors.size, 79);
  assert.equal(
    [...tensors.values()].reduce((n, t) => n + t.data.length, 0),
    1338499,
  );
  assert.ok([...tensors.values()].every((t) => t.dtype === 'F16'));
  // Reference: Python's zipfile + a plain-data pickle.Unpickler + numpy float16 sums (float64).
  const golden: [string, number[], number, number][] = [
    ['1.weight', [64, 32, 3, 3], 8.68201744556427, 10.142902249512758],
    ['3.pool.1.weight', [256], 250.29150390625, 244.7336184978485],
    ['10.conv.2.bias', [64], -0.9265356063842773, 0.5992966843086833],
    ['19.bias', [3], 1.00341796875, 0.3360668420791626],
  ];
  for (const [key, dims, sum, sumOfSquares] of golden) {
    const t = tensors.get(key)!;
    assert.deepEqual(t.dims, dims, key);
    const s = t.data.reduce((a, v) => a + v, 0);
    const s2 = t.data.reduce((a, v) => a + v * v, 0);
    assert.ok(
      Math.abs(s - sum) < 1e-9 && Math.abs(s2 - sumOfSquares) < 1e-9,
      `${key}: sum ${s} vs ${sum}, sum of squares ${s2} vs ${sumOfSquares}`,
    );
  }
  assert.deepEqual([...tensors.get('19.bias')!.data], [0.349365234375, 0.334716796875, 0.3193359375]);
});
