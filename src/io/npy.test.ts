import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { tensor } from '../tensor.js';
import { encodeNpy, parseNpy, readNpy, writeNpy } from './npy.js';

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));
const latin1 = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

// numpy 2.4 `np.save` output, hex, for the arrays named.
const NUMPY_F4_2X3 = // np.arange(6, dtype='<f4').reshape(2, 3)
  '934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c20' +
  '33292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a' +
  '000000000000803f0000004000004040000080400000a040';
const NUMPY_F2_2 = // np.array([1.5, -2], dtype='<f2')
  '934e554d5059010076007b276465736372273a20273c6632272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c29' +
  '2c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a' +
  '003e00c0';
const NUMPY_F4_SCALAR = // np.zeros((), dtype='<f4')
  '934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028292c20' +
  '7d20202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a' +
  '00000000';
const NUMPY_F8_3 = // np.arange(3, dtype='<f8')
  '934e554d5059010076007b276465736372273a20273c6638272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028332c29' +
  '2c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a' +
  '0000000000000000000000000000f03f0000000000000040';

/** A .npy file of format `version`.0 with the given header text (padded like numpy) and data. */
function npyWith(header: string, data = new Uint8Array(0), version = 1): Uint8Array {
  const lengthBytes = version === 1 ? 2 : 4;
  const padded = header + ' '.repeat(63 - ((6 + 2 + lengthBytes + header.length) % 64)) + '\n';
  const out = new Uint8Array(8 + lengthBytes + padded.length + data.length);
  out.set(latin1('\x93NUMPY'));
  out.set([version, 0], 6);
  const view = new DataView(out.buffer);
  if (version === 1) view.setUint16(8, padded.length, true);
  else view.setUint32(8, padded.length, true);
  out.set(latin1(padded), 8 + lengthBytes);
  out.set(data, 8 + lengthBytes + padded.length);
  return out;
}

function assertInvalid(bytes: Uint8Array, pattern: RegExp): void {
  assert.throws(
    () => parseNpy(bytes, 'z.npy'),
    (e: unknown) => e instanceof DistVaeError && e.code === 'FILE_INVALID' && e.message.startsWith('z.npy: ') && pattern.test(e.message),
  );
}

test('writes byte-identical files to numpy.save (float32 and float16)', () => {
  assert.deepEqual(encodeNpy(tensor([2, 3], Float32Array.from([0, 1, 2, 3, 4, 5]))), hex(NUMPY_F4_2X3));
  assert.deepEqual(encodeNpy(tensor([2], Float32Array.from([1.5, -2])), { dtype: 'F16' }), hex(NUMPY_F2_2));
  assert.deepEqual(encodeNpy(tensor([], Float32Array.from([0]))), hex(NUMPY_F4_SCALAR));
});

test('reads numpy files: float32, float16, float64 and a 0-d array', () => {
  const cases: [string, string, number[], number[]][] = [
    [NUMPY_F4_2X3, 'F32', [2, 3], [0, 1, 2, 3, 4, 5]],
    [NUMPY_F2_2, 'F16', [2], [1.5, -2]],
    [NUMPY_F8_3, 'F64', [3], [0, 1, 2]],
    [NUMPY_F4_SCALAR, 'F32', [], [0]],
  ];
  for (const [bytes, dtype, dims, values] of cases) {
    const t = parseNpy(hex(bytes));
    assert.deepEqual([t.dtype, t.dims, [...t.data]], [dtype, dims, values]);
  }
});

test('reads format 2.0 headers and double-quoted keys', () => {
  const data = new Uint8Array(new Float32Array([7, 8]).buffer);
  const t = parseNpy(npyWith(`{"descr": "<f4", "fortran_order": False, "shape": (1, 2)}`, data, 2));
  assert.deepEqual(
    [t.dims, [...t.data]],
    [
      [1, 2],
      [7, 8],
    ],
  );
});

test('round-trips through the file system', () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-npy-'));
  try {
    const path = join(dir, 'out.npy');
    const values = Float32Array.from({ length: 24 }, (_, i) => Math.sin(i));
    writeNpy(path, tensor([1, 2, 3, 4], values));
    assert.deepEqual(readNpy(path).data, values);
    assert.throws(() => readNpy(join(dir, 'nope.npy')), { code: 'FILE_NOT_FOUND' });
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('refuses bad magic, versions, headers, dtypes, Fortran order and size mismatches', () => {
  const f4 = (shape: string, extra = '') => `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, ${extra}}`;
  const eight = new Uint8Array(8);
  assertInvalid(latin1('PK\x03\x04 not numpy'), /not a \.npy file/);
  assertInvalid(Uint8Array.from([...latin1('\x93NUMPY'), 4, 0, 0, 0]), /format version 4\.0 is not supported/);
  assertInvalid(hex(NUMPY_F4_2X3).subarray(0, 40), /header length 118 runs past the end of the 40-byte file/);
  assertInvalid(npyWith(`{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }`, eight), /dtype '>f4' is not supported \(big-endian/);
  assertInvalid(
    npyWith(`{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }`, eight),
    /dtype '<c8' is not supported; supported: <f8, <f4, <f2/,
  );
  assertInvalid(npyWith(`{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }`, eight), /fortran_order is true; only C-order/);
  assertInvalid(npyWith(f4('(3,)'), eight), /shape \(3\) of <f4 needs 12 data bytes, the file has 8 \(truncated\?\)/);
  assertInvalid(npyWith(f4('(1,)'), eight), /shape \(1\) of <f4 needs 4 data bytes, the file has 8$/);
  assertInvalid(npyWith(f4('(2,)', "'extra': 1, "), eight), /header: unexpected '1'/);
  assertInvalid(npyWith(f4('(2,)', "'extra': True, "), eight), /header keys are \{descr, extra, fortran_order, shape\}/);
  assertInvalid(npyWith(f4('(-2,)'), eight), /header: shape entry '-' is not a non-negative integer/);
  assertInvalid(npyWith(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,)`, eight), /header ended early/);
  assertInvalid(npyWith(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x`, eight), /text after the dict/);
});
