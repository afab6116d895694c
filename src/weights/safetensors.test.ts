import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { tensor } from '../tensor.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from './halfprecision.js';
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

function assertFileInvalid(bytes: Uint8Array, pattern: RegExp): void {
  assert.throws(
    () => parseSafetensors(bytes, 'bad.safetensors'),
    (e: unknown) => e instanceof DistVaeError && e.code === 'FILE_INVALID' && e.message.startsWith('bad.safetensors: ') && pattern.test(e.message),
  );
}

test('writes the bytes the Python library writes (its test_serialization golden, as F32)', () => {
  // huggingface/safetensors bindings/python/tests: save({"test": zeros((2, 2), int32)}) gives
  // b'@\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}    ' + 16 zero
  // bytes: the header padded with spaces to 64. The same layout with dtype F32:
  const expected = latin1('@\0\0\0\0\0\0\0{"test":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}    ' + '\0'.repeat(16));
  assert.deepEqual(encodeSafetensors({ test: tensor([2, 2]) }), expected);
});

test('reads the Python library test file with int32 data and metadata first', () => {
  const header = '{"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}';
  const data = new Uint8Array(new Int32Array([1, -2, 3, 4]).buffer);
  const { tensors, metadata } = parseSafetensors(rawFile(header, data));
  assert.deepEqual(metadata, { framework: 'pt' });
  const t = tensors.get('test1')!;
  assert.deepEqual([t.dtype, t.dims, [...t.data]], ['I32', [2, 2], [1, -2, 3, 4]]);
});

test('round-trips F32, F16 and BF16 with metadata and an 8-byte aligned header', () => {
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
    const back = parseSafetensors(bytes);
    assert.deepEqual(back.metadata, { format: 'pt', note: 'ü' });
    assert.deepEqual([...back.tensors.keys()], ['a', 'b.weight', 'scalar']);
    const w = back.tensors.get('b.weight')!;
    assert.equal(w.dtype, dtype);
    assert.deepEqual(w.dims, [2, 4]);
    assert.deepEqual(back.tensors.get('a')!.dims, [0, 3]);
    assert.deepEqual([...back.tensors.get('scalar')!.data], [0.5]);
    if (dtype === 'F32') assert.deepEqual(w.data, values);
    if (dtype === 'F16') assert.deepEqual([...w.data], [...values].map((v) => float16BitsToFloat32(float32ToFloat16Bits(v))));
    if (dtype === 'BF16') values.forEach((v, i) => assert.ok(Math.abs(w.data[i]! - v) <= Math.abs(v) * 2 ** -8, `${v} -> ${w.data[i]}`));
  }
});

test('reads F64, I64, F16 and BF16 data into float32 and keeps each dtype', () => {
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
  for (const c of chunks) (data.set(c, at), (at += c.length));
  const { tensors } = parseSafetensors(rawFile(header, data));
  assert.deepEqual(
    names.map((n) => [tensors.get(n)!.dtype, [...tensors.get(n)!.data]]),
    [['F64', [1.5, -2]], ['I64', [7, -9]], ['F16', [1, -2]], ['BF16', [1, 3]]],
  );
});

test('writes and reads files on disk', () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-st-'));
  try {
    const path = join(dir, 'w.safetensors');
    writeSafetensors(path, { x: tensor([3], Float32Array.from([1, 2, 3])) }, { dtype: 'F16' });
    assert.deepEqual([...readSafetensors(path).tensors.get('x')!.data], [1, 2, 3]);
    assert.throws(() => readSafetensors(join(dir, 'missing.safetensors')), { code: 'FILE_NOT_FOUND' });
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('refuses malformed headers with the file, key and numbers named', () => {
  const f32 = (offsets: unknown, shape: unknown = [2]) => ({ dtype: 'F32', shape, data_offsets: offsets });
  const eight = new Uint8Array(8);
  assertFileInvalid(new Uint8Array(5), /5 bytes, too short/);
  assertFileInvalid(rawFile({ x: f32([0, 8]) }, eight, 1000), /header length 1000 exceeds the \d+ bytes/);
  assertFileInvalid(rawFile('{"x": ', eight), /not valid UTF-8 JSON/);
  assertFileInvalid(rawFile('[1, 2]', eight), /header is not a JSON object/);
  assertFileInvalid(rawFile({ x: { dtype: 'F8_E4M3', shape: [8], data_offsets: [0, 8] } }, eight), /tensor "x": dtype "F8_E4M3" is not supported \(supported: F64, F32/);
  assertFileInvalid(rawFile({ x: f32([0, 4, 8]) }, eight), /tensor "x": data_offsets \[0,4,8\] is not a \[begin, end\] pair/);
  assertFileInvalid(rawFile({ x: f32([8, 0]) }, eight), /tensor "x": data_offsets \[8, 0\] end before begin/);
  assertFileInvalid(rawFile({ x: f32([0, 16], [4]) }, eight), /tensor "x": data_offsets \[0, 16\] run past the 8-byte data section \(file truncated\?\)/);
  assertFileInvalid(rawFile({ x: f32([0, 8], [3]) }, eight), /tensor "x": data_offsets \[0, 8\] hold 8 bytes but F32 shape \[3\] needs 12/);
  assertFileInvalid(rawFile({ x: f32([0, 8], [-2]) }, eight), /tensor "x": shape \[-2\] is not a list of non-negative integers/);
  assertFileInvalid(rawFile({ a: f32([0, 8]), b: f32([4, 12]) }, new Uint8Array(12)), /tensors "a" \[0, 8\] and "b" \[4, 12\] overlap/);
  assertFileInvalid(rawFile({ __metadata__: { n: 1 }, x: f32([0, 8]) }, eight), /__metadata__\.n is 1, expected a string/);
});

test('a truncated file is refused, not read short', () => {
  const good = encodeSafetensors({ a: tensor([4]), b: tensor([4]) });
  assert.equal(parseSafetensors(good).tensors.size, 2);
  assertFileInvalid(good.subarray(0, good.length - 3), /tensor "b": data_offsets \[16, 32\] run past the 29-byte data section/);
  assertFileInvalid(good.subarray(0, 20), /header length \d+ exceeds the 12 bytes/);
});

test('opened lazily, a file gives the same tensors; float32 ones name their bytes in the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-st-'));
  try {
    const path = join(dir, 'w.safetensors');
    const tensors = { a: tensor([2, 3], Float32Array.from([1, -2, 3.5, 4, 5, 6])), b: tensor([3], Float32Array.from([0.5, -1, 2])) };
    writeSafetensors(path, tensors, { metadata: { format: 'pt' } });
    const eager = readSafetensors(path);
    const lazy = openSafetensors(path);
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
    const half = openSafetensors(path).tensors.get('a')!;
    assert.equal((half as { file?: unknown }).file, undefined, 'a float16 tensor must be converted, not passed on as float32 bytes');
    assert.deepEqual([...half.data], [1, -2, 3.5, 4, 5, 6]);
    writeFileSync(path, bytes.subarray(0, bytes.length - 3));
    assert.throws(() => openSafetensors(path), (e: unknown) => e instanceof DistVaeError && e.code === 'FILE_INVALID' && /run past the/.test(e.message));
    assert.throws(() => openSafetensors(join(dir, 'missing.safetensors')), { code: 'FILE_NOT_FOUND' });
  } finally {
    rmSync(dir, { recursive: true });
  }
});
