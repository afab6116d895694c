// The .safetensors format: an 8-byte little-endian header length, a JSON header mapping each
// tensor name to {dtype, shape, data_offsets} (plus an optional "__metadata__" of strings),
// then the raw little-endian data. Opening a file reads and validates the whole header only;
// tensors are then read one by one, in bounded pieces, and converted to float32 keeping their
// stored dtype — so a file of any size is read with memory bounded by the tensors asked for.
// Writing matches the Python library: tensors laid out in name order, header padded with
// spaces to 8 bytes.

import { DistVaeError } from '../errors.js';
import { writeFileBytes } from '../bytes/files.js';
import { bytesSource, type ByteSource } from '../bytes/byte-source.js';
import { withFileSource } from '../bytes/file-source.js';
import { elementCount, type Tensor } from '../tensor.js';
import { DTYPE_BYTES, encodeFromFloat32, isDType, type FloatDType, type StoredTensor } from './dtype.js';
import { readElements, readTensors, type TensorEntry, type TensorReader } from './reader.js';

export interface SafetensorsContents {
  /** Tensors in file (data offset) order. */
  readonly tensors: Map<string, StoredTensor>;
  /** The header's `__metadata__` (empty when absent). */
  readonly metadata: Record<string, string>;
}

/** A safetensors file with its header read: tensors are read on demand. */
export interface SafetensorsReader extends TensorReader {
  /** The header's `__metadata__` (empty when absent). */
  readonly metadata: Record<string, string>;
  /**
   * Where a tensor's raw bytes lie in a local file (`source.path`), so a float32 tensor can go to
   * onnxruntime as external data; undefined for a source that is not a local file.
   */
  fileBytes(name: string): { path: string; offset: number; length: number } | undefined;
}

export interface SafetensorsWriteOptions {
  /** Stored element type; default F32. */
  dtype?: FloatDType;
  metadata?: Record<string, string>;
}

/** The Python library refuses headers above 100 MB; so do we, before reading them. */
const MAX_HEADER_BYTES = 100_000_000;
const METADATA_KEY = '__metadata__';

interface HeaderEntry extends TensorEntry {
  dims: number[];
  /** Byte range in the data section. */
  begin: number;
  end: number;
}

/** Reads and validates the header of a safetensors source. */
export async function openSafetensors(source: ByteSource): Promise<SafetensorsReader> {
  const fail: (message: string) => never = (message) => {
    throw new DistVaeError('FILE_INVALID', `${source.name}: ${message}`);
  };
  if (source.size < 8) fail(`file is ${source.size} bytes, too short for the 8-byte header length (not a safetensors file?)`);
  const lengthField = await source.read(0, 8);
  const headerLength = new DataView(lengthField.buffer, lengthField.byteOffset, 8).getBigUint64(0, true);
  if (headerLength > BigInt(source.size - 8)) {
    fail(`header length ${headerLength} exceeds the ${source.size - 8} bytes after the length field (truncated or not a safetensors file)`);
  }
  if (headerLength > BigInt(MAX_HEADER_BYTES)) fail(`header length ${headerLength} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  const dataStart = 8 + Number(headerLength);
  const header = parseHeaderJson(await source.read(8, Number(headerLength)), fail);
  const { entries, metadata } = validateHeader(header, source.size - dataStart, fail);
  const byName = new Map(entries.map((e) => [e.name, e]));
  return {
    source: source.name,
    entries: byName,
    metadata,
    fileBytes: (name) => {
      const e = byName.get(name);
      return e && source.path !== undefined ? { path: source.path, offset: dataStart + e.begin, length: e.end - e.begin } : undefined;
    },
    readTensor: async (name) => {
      const e = byName.get(name);
      if (!e) throw new DistVaeError('INVALID_ARGUMENT', `${source.name}: no tensor named ${JSON.stringify(name)}`);
      return { dims: e.dims, dtype: e.dtype, data: await readElements(source, dataStart + e.begin, e.end - e.begin, e.dtype) };
    },
  };
}

/** Reads every tensor of a safetensors file (bounded reads; memory is the tensors themselves). */
export function readSafetensors(path: string): Promise<SafetensorsContents> {
  return withFileSource(path, (source) => readWholeSafetensors(source));
}

/** Parses safetensors bytes already in memory; `source` names them in error messages. */
export function parseSafetensors(bytes: Uint8Array, source = '<buffer>'): Promise<SafetensorsContents> {
  return readWholeSafetensors(bytesSource(bytes, source));
}

async function readWholeSafetensors(source: ByteSource): Promise<SafetensorsContents> {
  const reader = await openSafetensors(source);
  return { tensors: await readTensors(reader), metadata: reader.metadata };
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
    if (typeof value !== 'object' || value === null)
      fail(`${at}: header entry is ${JSON.stringify(value)}, expected {dtype, shape, data_offsets}`);
    const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
    if (!isDType(dtype)) fail(`${at}: dtype ${JSON.stringify(dtype)} is not supported (supported: ${Object.keys(DTYPE_BYTES).join(', ')})`);
    if (!Array.isArray(shape) || !shape.every(isNonNegativeInteger))
      fail(`${at}: shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
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
      fail(
        `${at}: data_offsets [${begin}, ${end}] hold ${end - begin} bytes but ${dtype} shape [${shape.join(', ')}] needs ${expectedBytes}`,
      );
    }
    entries.push({ name, dtype, dims: shape, begin, end });
  }
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let previous: HeaderEntry | undefined;
  for (const e of entries) {
    if (e.begin === e.end) continue;
    if (previous && e.begin < previous.end) {
      fail(
        `tensors ${JSON.stringify(previous.name)} [${previous.begin}, ${previous.end}] and ${JSON.stringify(e.name)} [${e.begin}, ${e.end}] overlap`,
      );
    }
    previous = e;
  }
  return { entries, metadata };
}

function isNonNegativeInteger(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) >= 0;
}

/** Writes tensors as a .safetensors file (float32 unless `options.dtype` says otherwise), atomically. */
export function writeSafetensors(
  path: string,
  tensors: Readonly<Record<string, Tensor>> | ReadonlyMap<string, Tensor>,
  options: SafetensorsWriteOptions = {},
): void {
  writeFileBytes(path, encodeSafetensors(tensors, options));
}

/** The .safetensors bytes of named tensors. */
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
      throw new DistVaeError(
        'INVALID_ARGUMENT',
        `tensor ${JSON.stringify(name)} has ${t.data.length} values for dims [${t.dims.join(', ')}]`,
      );
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
