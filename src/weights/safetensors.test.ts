import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { tensor } from '../tensor.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from './halfprecision.js';
import { readLatents } from '../io/latents.js';
import { bytesSource } from '../bytes/byte-source.js';
import { openSafetensorsFile, readWeights } from '../sources/weights-file.js';
import { encodeSafetensors, openSafetensors, parseSafetensors, readSafetensors, writeSafetensors } from './safetensors.js';

const latin1 = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

/** Builds a file from a header object and raw data bytes, as a hostile writer could. */
function rawFile(header: unknown, data: Uint8Array, headerLength?: number): Uint8Array {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength ?? json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

async function assertFileInvalid(bytes: Uint8Array, pattern: RegExp): Promise<void> {
  await assert.rejects(
    () => parseSafetensors(bytes, 'bad.safetensors'),
    (e: unknown) =>
      e instanceof DistVaeError && e.code === 'FILE_INVALID' && e.message.startsWith('bad.safetensors: ') && pattern.test(e.message),
  );
}

test('writes the bytes the Python library writes (its test_serialization golden, as F32)', async () => {
  // huggingface/safetensors bindings/python/tests: save({"test": zeros((2, 2), int32)}) gives
  // b'@\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}    ' + 16 zero
  // bytes: the header padded with spaces to 64. The same layout with dtype F32:
  const expected = latin1('@\0\0\0\0\0\0\0{"test":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}    ' + '\0'.repeat(16));
  assert.deepEqual(encodeSafetensors({ test: tensor([2, 2]) }), expected);
});

test('reads the Python library test file with int32 data and metadata first', async () => {
  const header = '{"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}';
  const data = new Uint8Array(new Int32Array([1, -2, 3, 4]).buffer);
  const { tensors, metadata } = await parseSafetensors(rawFile(header, data));
  assert.deepEqual(metadata, { framework: 'pt' });
  const t = tensors.get('test1')!;
  assert.deepEqual([t.dtype, t.dims, [...t.data]], ['I32', [2, 2], [1, -2, 3, 4]]);
});

test('round-trips F32, F16 and BF16 with metadata and an 8-byte aligned header', async () => {
  const values = Float32Array.from([0, 1, -2.5, 0.1, 65504, 1e-7, 3.14159, -1e5]);
  const tensors = new Map([
    ['b.weight', tensor([2, 4], values)],
    ['a', tensor([0, 3])],
    ['scalar', tensor([], new Float32Array([0.5]))],
  ]);
  for (const dtype of ['F32', 'F16', 'BF16'] as const) {
    const bytes = encodeSafetensors(tensors, { dtype, metadata: { format: 'pt', note: 'ü' } });
    const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    assert.equal(headerLength % 8, 0);
    const header = new TextDecoder().decode(bytes.subarray(8, 8 + headerLength));
    assert.match(header, /^\{"__metadata__":\{"format":"pt","note":"ü"\},"a":.*"b\.weight":.*"scalar":[^ ]*\} *$/);
    const back = await parseSafetensors(bytes);
    assert.deepEqual(back.metadata, { format: 'pt', note: 'ü' });
    assert.deepEqual([...back.tensors.keys()], ['a', 'b.weight', 'scalar']);
    const w = back.tensors.get('b.weight')!;
    assert.equal(w.dtype, dtype);
    assert.deepEqual(w.dims, [2, 4]);
    assert.deepEqual(back.tensors.get('a')!.dims, [0, 3]);
    assert.deepEqual([...back.tensors.get('scalar')!.data], [0.5]);
    if (dtype === 'F32') assert.deepEqual(w.data, values);
    if (dtype === 'F16')
      assert.deepEqual(
        [...w.data],
        [...values].map((v) => float16BitsToFloat32(float32ToFloat16Bits(v))),
      );
    if (dtype === 'BF16') values.forEach((v, i) => assert.ok(Math.abs(w.data[i]! - v) <= Math.abs(v) * 2 ** -8, `${v} -> ${w.data[i]}`));
  }
});

test('reads F64, I64, F16 and BF16 data into float32 and keeps each dtype', async () => {
  const chunks = [
    new Uint8Array(new Float64Array([1.5, -2]).buffer),
    new Uint8Array(new BigInt64Array([7n, -9n]).buffer),
    new Uint8Array(new Uint16Array([0x3c00, 0xc000]).buffer), // F16 1, -2
    new Uint8Array(new Uint16Array([0x3f80, 0x4040]).buffer), // BF16 1, 3
  ];
  const header: Record<string, unknown> = {};
  const names = ['f64', 'i64', 'f16', 'bf16'];
  const dtypes = ['F64', 'I64', 'F16', 'BF16'];
  let offset = 0;
  chunks.forEach((c, i) => {
    header[names[i]!] = { dtype: dtypes[i], shape: [2], data_offsets: [offset, offset + c.length] };
    offset += c.length;
  });
  const data = new Uint8Array(offset);
  let at = 0;
  for (const c of chunks) {
    data.set(c, at);
    at += c.length;
  }
  const { tensors } = await parseSafetensors(rawFile(header, data));
  assert.deepEqual(
    names.map((n) => [tensors.get(n)!.dtype, [...tensors.get(n)!.data]]),
    [
      ['F64', [1.5, -2]],
      ['I64', [7, -9]],
      ['F16', [1, -2]],
      ['BF16', [1, 3]],
    ],
  );
});

test('writes and reads files on disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-st-'));
  try {
    const path = join(dir, 'w.safetensors');
    writeSafetensors(path, { x: tensor([3], Float32Array.from([1, 2, 3])) }, { dtype: 'F16' });
    assert.deepEqual([...(await readSafetensors(path)).tensors.get('x')!.data], [1, 2, 3]);
    await assert.rejects(() => readSafetensors(join(dir, 'missing.safetensors')), { code: 'FILE_NOT_FOUND' });
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('refuses malformed headers with the file, key and numbers named', async () => {
  const f32 = (offsets: unknown, shape: unknown = [2]) => ({ dtype: 'F32', shape, data_offsets: offsets });
  const eight = new Uint8Array(8);
  await assertFileInvalid(new Uint8Array(5), /5 bytes, too short/);
  await assertFileInvalid(rawFile({ x: f32([0, 8]) }, eight, 1000), /header length 1000 exceeds the \d+ bytes/);
  await assertFileInvalid(rawFile('{"x": ', eight), /not valid UTF-8 JSON/);
  await assertFileInvalid(rawFile('[1, 2]', eight), /header is not a JSON object/);
  await assertFileInvalid(
    rawFile({ x: { dtype: 'F8_E4M3', shape: [8], data_offsets: [0, 8] } }, eight),
    /tensor "x": dtype "F8_E4M3" is not supported \(supported: F64, F32/,
  );
  await assertFileInvalid(rawFile({ x: f32([0, 4, 8]) }, eight), /tensor "x": data_offsets \[0,4,8\] is not a \[begin, end\] pair/);
  await assertFileInvalid(rawFile({ x: f32([8, 0]) }, eight), /tensor "x": data_offsets \[8, 0\] end before begin/);
  await assertFileInvalid(
    rawFile({ x: f32([0, 16], [4]) }, eight),
    /tensor "x": data_offsets \[0, 16\] run past the 8-byte data section \(file truncated\?\)/,
  );
  await assertFileInvalid(
    rawFile({ x: f32([0, 8], [3]) }, eight),
    /tensor "x": data_offsets \[0, 8\] hold 8 bytes but F32 shape \[3\] needs 12/,
  );
  await assertFileInvalid(rawFile({ x: f32([0, 8], [-2]) }, eight), /tensor "x": shape \[-2\] is not a list of non-negative integers/);
  await assertFileInvalid(
    rawFile({ a: f32([0, 8]), b: f32([4, 12]) }, new Uint8Array(12)),
    /tensors "a" \[0, 8\] and "b" \[4, 12\] overlap/,
  );
  await assertFileInvalid(rawFile({ __metadata__: { n: 1 }, x: f32([0, 8]) }, eight), /__metadata__\.n is 1, expected a string/);
});

test('a truncated file is refused, not read short', async () => {
  const good = encodeSafetensors({ a: tensor([4]), b: tensor([4]) });
  assert.equal((await parseSafetensors(good)).tensors.size, 2);
  await assertFileInvalid(good.subarray(0, good.length - 3), /tensor "b": data_offsets \[16, 32\] run past the 29-byte data section/);
  await assertFileInvalid(good.subarray(0, 20), /header length \d+ exceeds the 12 bytes/);
});

test('a header whose length is not a multiple of 4 (valid by the format) is read, for weights and latents', async () => {
  const values = Float32Array.from({ length: 16 }, (_, i) => i - 7.5);
  const header = '{"latents":{"dtype":"F32","shape":[1,4,2,2],"data_offsets":[0,64]}}';
  for (const pad of [0, 1, 2, 3, 5]) {
    const text = header + ' '.repeat(pad);
    const bytes = rawFile(text, new Uint8Array(values.buffer));
    const { tensors } = await parseSafetensors(Buffer.from(bytes), 'odd.safetensors');
    assert.deepEqual(tensors.get('latents')!.data, values, `header length ${text.length}`);
    const dir = mkdtempSync(join(tmpdir(), 'distvae-st-'));
    try {
      writeFileSync(join(dir, 'z.safetensors'), bytes);
      assert.deepEqual((await readLatents(join(dir, 'z.safetensors'))).data, values);
      assert.deepEqual((await readWeights(join(dir, 'z.safetensors'))).get('latents')!.data, values);
    } finally {
      rmSync(dir, { recursive: true });
    }
  }
});

test('opening reads the header only; each tensor is read alone', async () => {
  const bytes = encodeSafetensors(
    { a: tensor([3], Float32Array.from([1, 2, 3])), b: tensor([2], Float32Array.from([4, 5])) },
    { dtype: 'F16' },
  );
  const reads: [number, number][] = [];
  const inner = bytesSource(bytes, 'm.safetensors');
  const file = await openSafetensors({ ...inner, read: (o, n) => (reads.push([o, n]), inner.read(o, n)) });
  assert.deepEqual(
    [...file.entries.values()].map((e) => [e.name, e.dtype, e.dims]),
    [
      ['a', 'F16', [3]],
      ['b', 'F16', [2]],
    ],
  );
  const headerReads = reads.length;
  assert.deepEqual([...(await file.readTensor('b')).data], [4, 5]);
  assert.deepEqual(reads.slice(headerReads), [[bytes.length - 4, 4]]);
  await assert.rejects(file.readTensor('c'), { message: /no tensor named "c"/ });
});

test('opened lazily, a file gives the same tensors; float32 ones name their bytes in the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-st-'));
  try {
    const path = join(dir, 'w.safetensors');
    const tensors = { a: tensor([2, 3], Float32Array.from([1, -2, 3.5, 4, 5, 6])), b: tensor([3], Float32Array.from([0.5, -1, 2])) };
    writeSafetensors(path, tensors, { metadata: { format: 'pt' } });
    const eager = await readSafetensors(path);
    const lazy = await openSafetensorsFile(path);
    assert.deepEqual(lazy.metadata, { format: 'pt' });
    assert.deepEqual([...lazy.tensors.keys()], [...eager.tensors.keys()]);
    const bytes = encodeSafetensors(tensors, { metadata: { format: 'pt' } });
    for (const [name, t] of lazy.tensors) {
      assert.deepEqual(t.dims, eager.tensors.get(name)!.dims);
      assert.deepEqual([...t.data], [...eager.tensors.get(name)!.data]);
      const file = (t as { file?: { path: string; offset: number; length: number } }).file!;
      assert.equal(file.path, path);
      assert.deepEqual(new Float32Array(bytes.slice(file.offset, file.offset + file.length).buffer), t.data);
    }
    writeSafetensors(path, tensors, { dtype: 'F16' });
    const half = (await openSafetensorsFile(path)).tensors.get('a')!;
    assert.equal((half as { file?: unknown }).file, undefined, 'a float16 tensor must be converted, not passed on as float32 bytes');
    assert.deepEqual([...half.data], [1, -2, 3.5, 4, 5, 6]);
    writeFileSync(path, bytes.subarray(0, bytes.length - 3));
    await assert.rejects(
      () => openSafetensorsFile(path),
      (e: unknown) => e instanceof DistVaeError && e.code === 'FILE_INVALID' && /run past the/.test(e.message),
    );
    await assert.rejects(() => openSafetensorsFile(join(dir, 'missing.safetensors')), { code: 'FILE_NOT_FOUND' });
  } finally {
    rmSync(dir, { recursive: true });
  }
});
