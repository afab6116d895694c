// NumPy .npy files: read format 1.0/2.0/3.0, write 1.0 exactly as numpy.save does (header
// padded with spaces to a multiple of 64 bytes, ending in '\n'). Little-endian, C-order
// arrays only; floats and integers convert to float32, keeping the stored dtype.

import { DistVaeError } from '../errors.js';
import { elementCount, type Tensor } from '../tensor.js';
import { decodeToFloat32, DTYPE_BYTES, encodeFromFloat32, type DType, type StoredTensor } from '../weights/dtype.js';
import { readFileBytes, writeFileBytes } from '../bytes/files.js';

/** The element types .npy output is written in. */
export type NpyDType = 'F32' | 'F16';

/** How writeNpy / encodeNpy store the values. */
export interface NpyWriteOptions {
  /** Stored element type; default F32. */
  dtype?: NpyDType;
}

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"
const ALIGNMENT = 64;
const DESCR_DTYPES: Readonly<Record<string, DType>> = {
  '<f8': 'F64',
  '<f4': 'F32',
  '<f2': 'F16',
  '<i8': 'I64',
  '<i4': 'I32',
  '<i2': 'I16',
  '|i1': 'I8',
  '|u1': 'U8',
  '|b1': 'BOOL',
};
const DTYPE_DESCRS = { F32: '<f4', F16: '<f2' } as const;

/** Reads a little-endian, C-order .npy file (float or integer dtypes) as a float32 tensor with its stored dtype. */
export function readNpy(path: string): StoredTensor {
  return parseNpy(readFileBytes(path), path);
}

/** Parses .npy bytes; `source` names the file in error messages. */
export function parseNpy(bytes: Uint8Array, source = '<buffer>'): StoredTensor {
  const { dims, dtype, dataStart, descr } = parseNpyHeader(bytes, source);
  const expected = elementCount(dims) * DTYPE_BYTES[dtype];
  const actual = bytes.length - dataStart;
  if (actual !== expected) {
    throw new DistVaeError(
      'FILE_INVALID',
      `${source}: shape (${dims.join(', ')}) of ${descr} needs ${expected} data bytes, the file has ${actual}${actual < expected ? ' (truncated?)' : ''}`,
    );
  }
  return { dims, dtype, data: decodeToFloat32(bytes.subarray(dataStart), dtype) };
}

/**
 * The header of .npy bytes (`bytes` may stop after it: a reader that streams the data reads the
 * header alone): shape, dtype, the data's start, the stored descr.
 */
export function parseNpyHeader(bytes: Uint8Array, source = '<buffer>'): { dims: number[]; dtype: DType; dataStart: number; descr: string } {
  const fail: (message: string) => never = (message) => {
    throw new DistVaeError('FILE_INVALID', `${source}: ${message}`);
  };
  if (bytes.length < 10 || MAGIC.some((b, i) => bytes[i] !== b)) fail('not a .npy file (missing the \\x93NUMPY magic)');
  const major = bytes[6]!;
  if (major < 1 || major > 3 || bytes[7] !== 0) fail(`.npy format version ${major}.${bytes[7]} is not supported (1.0, 2.0, 3.0)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lengthBytes = major === 1 ? 2 : 4;
  if (bytes.length < 8 + lengthBytes) fail(`file is ${bytes.length} bytes, truncated inside the header length`);
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const dataStart = 8 + lengthBytes + headerLength;
  if (dataStart > bytes.length) fail(`header length ${headerLength} runs past the end of the ${bytes.length}-byte file`);
  let headerText: string;
  try {
    headerText = new TextDecoder(major === 3 ? 'utf-8' : 'latin1', { fatal: true }).decode(bytes.subarray(8 + lengthBytes, dataStart));
  } catch {
    return fail('header is not valid UTF-8');
  }
  const header = parseHeaderDict(headerText, fail);

  const [descr, fortranOrder, shape] = [header.get('descr'), header.get('fortran_order'), header.get('shape')];
  if (typeof descr !== 'string') fail(`header 'descr' is ${JSON.stringify(descr)}, expected a dtype string`);
  const dtype = DESCR_DTYPES[descr as string];
  if (!dtype) {
    const hint = /^>/.test(descr as string) ? ' (big-endian; save with arr.astype(arr.dtype.newbyteorder("<")))' : '';
    fail(`dtype '${descr}' is not supported${hint}; supported: ${Object.keys(DESCR_DTYPES).join(', ')}`);
  }
  if (fortranOrder !== false)
    fail(`fortran_order is ${String(fortranOrder)}; only C-order arrays are supported (save np.ascontiguousarray(arr))`);
  if (!Array.isArray(shape)) fail(`header 'shape' is ${JSON.stringify(shape)}, expected a tuple of integers`);
  return { dims: shape as number[], dtype: dtype!, dataStart, descr: descr as string };
}

/**
 * Parses the header, a Python dict literal such as
 * `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`: string keys; string, bool or
 * integer-tuple values; exactly the keys descr, fortran_order and shape.
 */
function parseHeaderDict(text: string, fail: (message: string) => never): Map<string, unknown> {
  const tokens = text.match(/'[^']*'|"[^"]*"|True|False|\d+|[{}():,]|\S/g) ?? [];
  let at = 0;
  const next = (): string => tokens[at++] ?? fail(`header ended early: ${JSON.stringify(text)}`);
  const expect = (token: string): void => {
    const got = next();
    if (got !== token) fail(`header: expected '${token}' but found '${got}' in ${JSON.stringify(text.trim())}`);
  };
  const value = (): unknown => {
    const token = next();
    if (/^['"]/.test(token)) return token.slice(1, -1);
    if (token === 'True' || token === 'False') return token === 'True';
    if (token !== '(') return fail(`header: unexpected '${token}' in ${JSON.stringify(text.trim())}`);
    const items: number[] = [];
    for (let t = next(); t !== ')'; t = next()) {
      if (!/^\d+$/.test(t)) fail(`header: shape entry '${t}' is not a non-negative integer`);
      items.push(Number(t));
      const separator = next();
      if (separator === ')') break;
      if (separator !== ',') fail(`header: expected ',' or ')' in the shape, found '${separator}'`);
    }
    return items;
  };
  const dict = new Map<string, unknown>();
  expect('{');
  for (let token = next(); token !== '}'; token = next()) {
    if (!/^['"]/.test(token)) fail(`header: key ${token} is not a string`);
    const key = token.slice(1, -1);
    expect(':');
    dict.set(key, value());
    const separator = next();
    if (separator === '}') break;
    if (separator !== ',') fail(`header: expected ',' or '}' after '${key}', found '${separator}'`);
  }
  if (at !== tokens.length) fail(`header has text after the dict: ${JSON.stringify(text.trim())}`);
  const keys = [...dict.keys()].sort().join(', ');
  if (keys !== 'descr, fortran_order, shape') fail(`header keys are {${keys}}, expected {descr, fortran_order, shape}`);
  return dict;
}

/** Writes a tensor as .npy (float32 unless `options.dtype` says otherwise), atomically. */
export function writeNpy(path: string, tensor: Tensor, options: NpyWriteOptions = {}): void {
  writeFileBytes(path, encodeNpy(tensor, options));
}

/** The .npy bytes of a tensor. */
export function encodeNpy(tensor: Tensor, options: NpyWriteOptions = {}): Uint8Array {
  const dtype = options.dtype ?? 'F32';
  if (tensor.data.length !== elementCount(tensor.dims)) {
    throw new DistVaeError('INVALID_ARGUMENT', `tensor has ${tensor.data.length} values for dims [${tensor.dims.join(', ')}]`);
  }
  const header = npyHeader(tensor.dims, dtype);
  const data = encodeFromFloat32(tensor.data, dtype);
  const out = new Uint8Array(header.length + data.length);
  out.set(header, 0);
  out.set(data, header.length);
  return out;
}

/** The bytes before the data of a format 1.0 .npy holding `dims` of `dtype`, as numpy.save writes them. */
export function npyHeader(dims: readonly number[], dtype: NpyDType = 'F32'): Uint8Array {
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  const dict = `{'descr': '${DTYPE_DESCRS[dtype]}', 'fortran_order': False, 'shape': ${shape}, }`;
  const padding = ALIGNMENT - ((MAGIC.length + 4 + dict.length + 1) % ALIGNMENT);
  const header = `${dict}${' '.repeat(padding)}\n`;
  const out = new Uint8Array(MAGIC.length + 4 + header.length);
  out.set(MAGIC, 0);
  out.set([1, 0], MAGIC.length);
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  return out;
}
