// The one shape every weights reader has (safetensors, .pth): the tensors' names, dtypes and
// shapes known from the header alone, and each tensor's values read on demand. A loader binds
// the shapes against the decoder's parameters first and then reads only what the decoder
// needs, one tensor at a time — so an input's memory is bounded by the decoder, not the file.

import { MAX_READ_BYTES, type ByteSource } from '../bytes/byte-source.js';
import { decodeToFloat32, DTYPE_BYTES, type DType, type StoredTensor } from './dtype.js';

/** A tensor as a file's header describes it (no values read). */
export interface TensorEntry {
  readonly name: string;
  readonly dtype: DType;
  readonly dims: readonly number[];
}

/** A weights file opened for reading tensor by tensor. */
export interface TensorReader {
  /** Names the file in messages. */
  readonly source: string;
  /** Every tensor of the file (of the state dict, for a checkpoint), in file order. */
  readonly entries: ReadonlyMap<string, TensorEntry>;
  /** Reads one tensor's values as float32 (bounded reads; never the whole file). */
  readTensor(name: string): Promise<StoredTensor>;
}

/** Reads the named tensors (default: all) into a map, one after another. */
export async function readTensors(
  reader: TensorReader,
  names: Iterable<string> = reader.entries.keys(),
): Promise<Map<string, StoredTensor>> {
  const out = new Map<string, StoredTensor>();
  for (const name of names) out.set(name, await reader.readTensor(name));
  return out;
}

/** Decodes `length` bytes of `dtype` at `offset` into float32, reading pieces of at most MAX_READ_BYTES. */
export async function readElements(source: ByteSource, offset: number, length: number, dtype: DType): Promise<Float32Array> {
  const size = DTYPE_BYTES[dtype];
  if (length <= MAX_READ_BYTES) return decodeToFloat32(await source.read(offset, length), dtype);
  const out = new Float32Array(length / size);
  const piece = Math.floor(MAX_READ_BYTES / size) * size;
  for (let at = 0; at < length; at += piece) {
    out.set(decodeToFloat32(await source.read(offset + at, Math.min(piece, length - at)), dtype), at / size);
  }
  return out;
}
