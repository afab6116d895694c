// The .safetensors format: an 8-byte little-endian header length, a JSON header mapping each
// tensor name to {dtype, shape, data_offsets} (plus an optional "__metadata__" of strings),
// then the raw little-endian data. Reading validates the whole header before converting
// anything and converts every tensor to float32, keeping its stored dtype. Writing matches the
// Python library: tensors laid out in name order, header padded with spaces to 8 bytes.
//
// A checkpoint on disk is opened lazily (openSafetensors): only the header is read, and each
// tensor's bytes are read when its `data` is asked for, so the tensors a decoder ignores (the
// encoder's) are never read and no copy of the whole file is held. A float32 tensor also names
// its bytes in the file (`file`), so a graph can hand them to onnxruntime as external data and
// JS never holds the weights at all.

import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
import { DistVaeError } from '../errors.js';
import { readExternalBytes, type FileBytes } from '../graph/tensor-proto.js';
import { readFileBytes, writeFileBytes } from '../io/files.js';
import { elementCount, type Tensor } from '../tensor.js';
import { decodeToFloat32, DTYPE_BYTES, encodeFromFloat32, isDType, type DType, type FloatDType, type StoredTensor } from './dtype.js';

export interface SafetensorsContents {
  /** Tensors in file (data offset) order. */
  readonly tensors: Map<string, StoredTensor>;
  /** The header's `__metadata__` (empty when absent). */
  readonly metadata: Record<string, string>;
}

export interface SafetensorsWriteOptions {
  /** Stored element type; default F32. */
  dtype?: FloatDType;
  metadata?: Record<string, string>;
}

/** The Python library refuses headers above 100 MB; so do we, before parsing them. */
const MAX_HEADER_BYTES = 100_000_000;
const METADATA_KEY = '__metadata__';

interface HeaderEntry {
  name: string;
  dtype: DType;
  dims: number[];
  begin: number;
  end: number;
}

export function readSafetensors(path: string): SafetensorsContents {
  return parseSafetensors(readFileBytes(path), path);
}

function failer(source: string): (message: string) => never {
  return (message) => {
    throw new DistVaeError('FILE_INVALID', `${source}: ${message}`);
  };
}

/** The data section's start, from the 8-byte length field, checked against the file's size. */
function headerEnd(lengthField: Uint8Array, fileBytes: number, fail: (message: string) => never): number {
  if (fileBytes < 8) fail(`file is ${fileBytes} bytes, too short for the 8-byte header length (not a safetensors file?)`);
  const headerLength = new DataView(lengthField.buffer, lengthField.byteOffset, 8).getBigUint64(0, true);
  if (headerLength > BigInt(fileBytes - 8)) {
    fail(`header length ${headerLength} exceeds the ${fileBytes - 8} bytes after the length field (truncated or not a safetensors file)`);
  }
  if (headerLength > BigInt(MAX_HEADER_BYTES)) fail(`header length ${headerLength} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  return 8 + Number(headerLength);
}

/** Parses safetensors bytes; `source` names the file in error messages. */
export function parseSafetensors(bytes: Uint8Array, source = '<buffer>'): SafetensorsContents {
  const fail = failer(source);
  const dataStart = headerEnd(bytes, bytes.length, fail);
  const header = parseHeaderJson(bytes.subarray(8, dataStart), fail);
  const data = bytes.subarray(dataStart);
  const { entries, metadata } = validateHeader(header, data.length, fail);

  const tensors = new Map<string, StoredTensor>();
  for (const e of entries) {
    tensors.set(e.name, { dims: e.dims, dtype: e.dtype, data: decodeToFloat32(data.subarray(e.begin, e.end), e.dtype) });
  }
  return { tensors, metadata };
}

/** A tensor of a checkpoint on disk: its bytes are read (and converted) each time `data` is read. */
class FileTensor implements StoredTensor {
  /** Where a float32 tensor's bytes lie in the file (little-endian, as a TensorProto's raw_data); absent for other dtypes. */
  readonly file?: FileBytes;

  constructor(
    readonly dims: number[],
    readonly dtype: DType,
    private readonly bytes: FileBytes,
  ) {
    if (dtype === 'F32') this.file = bytes;
  }

  get data(): Float32Array {
    const raw = readExternalBytes(this.bytes);
    return this.dtype === 'F32' ? new Float32Array(raw.buffer) : decodeToFloat32(raw, this.dtype);
  }
}

function openFile(path: string): number {
  try {
    return openSync(path, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new DistVaeError('FILE_NOT_FOUND', `${path}: no such file`, { cause: e });
    throw new DistVaeError('FILE_INVALID', `${path}: cannot read (${code ?? String(e)})`, { cause: e });
  }
}

/**
 * Opens a safetensors file lazily: reads and validates the header only; each tensor reads its
 * own bytes when its `data` is asked for (a float32 one also names them in `file`).
 */
export function openSafetensors(path: string): SafetensorsContents {
  const fail = failer(path);
  const absolute = resolve(path);
  const fd = openFile(absolute);
  let size: number;
  let header: Record<string, unknown>;
  let dataStart: number;
  try {
    size = fstatSync(fd).size;
    const lengthField = new Uint8Array(8);
    readSync(fd, lengthField, 0, 8, 0);
    dataStart = headerEnd(lengthField, size, fail);
    const headerBytes = new Uint8Array(dataStart - 8);
    if (readSync(fd, headerBytes, 0, headerBytes.length, 8) !== headerBytes.length) fail('header ends early (file truncated?)');
    header = parseHeaderJson(headerBytes, fail);
  } finally {
    closeSync(fd);
  }
  const { entries, metadata } = validateHeader(header, size - dataStart, fail);
  const tensors = new Map<string, StoredTensor>();
  for (const e of entries) tensors.set(e.name, new FileTensor(e.dims, e.dtype, { path: absolute, offset: dataStart + e.begin, length: e.end - e.begin }));
  return { tensors, metadata };
}

function parseHeaderJson(headerBytes: Uint8Array, fail: (message: string) => never): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
  } catch (e) {
    fail(`header (${headerBytes.length} bytes) is not valid UTF-8 JSON: ${(e as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) fail('header is not a JSON object');
  return parsed as Record<string, unknown>;
}

function validateHeader(
  header: Record<string, unknown>,
  dataLength: number,
  fail: (message: string) => never,
): { entries: HeaderEntry[]; metadata: Record<string, string> } {
  const metadata: Record<string, string> = {};
  const entries: HeaderEntry[] = [];
  for (const [name, value] of Object.entries(header)) {
    if (name === METADATA_KEY) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(`${METADATA_KEY} is not an object of strings`);
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'string') fail(`${METADATA_KEY}.${k} is ${JSON.stringify(v)}, expected a string`);
        metadata[k] = v;
      }
      continue;
    }
    const at = `tensor ${JSON.stringify(name)}`;
    if (typeof value !== 'object' || value === null) fail(`${at}: header entry is ${JSON.stringify(value)}, expected {dtype, shape, data_offsets}`);
    const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
    if (!isDType(dtype)) fail(`${at}: dtype ${JSON.stringify(dtype)} is not supported (supported: ${Object.keys(DTYPE_BYTES).join(', ')})`);
    if (!Array.isArray(shape) || !shape.every(isNonNegativeInteger)) fail(`${at}: shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isNonNegativeInteger)) {
      fail(`${at}: data_offsets ${JSON.stringify(offsets)} is not a [begin, end] pair of non-negative integers`);
    }
    const [begin, end] = offsets as [number, number];
    if (end < begin) fail(`${at}: data_offsets [${begin}, ${end}] end before begin`);
    if (end > dataLength) {
      fail(`${at}: data_offsets [${begin}, ${end}] run past the ${dataLength}-byte data section (file truncated?)`);
    }
    const expectedBytes = elementCount(shape) * DTYPE_BYTES[dtype];
    if (end - begin !== expectedBytes) {
      fail(`${at}: data_offsets [${begin}, ${end}] hold ${end - begin} bytes but ${dtype} shape [${shape.join(', ')}] needs ${expectedBytes}`);
    }
    entries.push({ name, dtype, dims: shape, begin, end });
  }
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let previous: HeaderEntry | undefined;
  for (const e of entries) {
    if (e.begin === e.end) continue;
    if (previous && e.begin < previous.end) {
      fail(`tensors ${JSON.stringify(previous.name)} [${previous.begin}, ${previous.end}] and ${JSON.stringify(e.name)} [${e.begin}, ${e.end}] overlap`);
    }
    previous = e;
  }
  return { entries, metadata };
}

function isNonNegativeInteger(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) >= 0;
}

export function writeSafetensors(
  path: string,
  tensors: Readonly<Record<string, Tensor>> | ReadonlyMap<string, Tensor>,
  options: SafetensorsWriteOptions = {},
): void {
  writeFileBytes(path, encodeSafetensors(tensors, options));
}

export function encodeSafetensors(
  tensors: Readonly<Record<string, Tensor>> | ReadonlyMap<string, Tensor>,
  options: SafetensorsWriteOptions = {},
): Uint8Array {
  const dtype = options.dtype ?? 'F32';
  const named = [...(tensors instanceof Map ? tensors : Object.entries(tensors))] as [string, Tensor][];
  named.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

  const header: Record<string, unknown> = {};
  if (options.metadata) header[METADATA_KEY] = options.metadata;
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of named) {
    if (name === METADATA_KEY) throw new DistVaeError('INVALID_ARGUMENT', `tensor name ${METADATA_KEY} is reserved for metadata`);
    if (t.data.length !== elementCount(t.dims)) {
      throw new DistVaeError('INVALID_ARGUMENT', `tensor ${JSON.stringify(name)} has ${t.data.length} values for dims [${t.dims.join(', ')}]`);
    }
    const bytes = encodeFromFloat32(t.data, dtype);
    header[name] = { dtype, shape: [...t.dims], data_offsets: [offset, offset + bytes.length] };
    chunks.push(bytes);
    offset += bytes.length;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLength = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + headerLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLength);
  let position = 8 + headerLength;
  for (const chunk of chunks) {
    out.set(chunk, position);
    position += chunk.length;
  }
  return out;
}
