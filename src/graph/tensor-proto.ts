// TensorProto values: building them from our float32 tensors and int64 literals, and reading
// their elements back (for the text dump and for tests). Data always travels in raw_data, which
// ONNX defines as little-endian; a float32 tensor's bytes are a view of its Float32Array, so a
// weight is not copied until the model is serialised. A weight whose float32 bytes lie in a file
// (a safetensors checkpoint) becomes external data naming that file, so its bytes travel from the
// file to onnxruntime without passing through JS (runtime/session.ts resolves the location).

import { DistVaeError } from '../errors.js';
import { readExternalBytes } from '../bytes/external-bytes.js';
import type { FileBytes } from '../bytes/file-bytes.js';
import { DataType, type TensorProto } from './onnx-proto.js';

const DATA_TYPE_NAMES: Record<number, string> = {
  [DataType.FLOAT]: 'float32',
  [DataType.UINT8]: 'uint8',
  [DataType.INT8]: 'int8',
  [DataType.INT32]: 'int32',
  [DataType.INT64]: 'int64',
  [DataType.BOOL]: 'bool',
  [DataType.FLOAT16]: 'float16',
  [DataType.DOUBLE]: 'float64',
};

export function dataTypeName(code: number | undefined): string {
  return DATA_TYPE_NAMES[code ?? 0] ?? `dtype${code ?? 0}`;
}

// Read from a typed array rather than node:os, so graphs are built in a browser too.
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

function assertLittleEndian(): void {
  if (!LITTLE_ENDIAN) {
    throw new DistVaeError(
      'UNSUPPORTED',
      'ONNX raw_data is little-endian and this machine is big-endian; big-endian hosts are not supported',
    );
  }
}

function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** ONNX TensorProto.DataLocation.EXTERNAL. */
export const EXTERNAL_DATA = 1;

/** A float32 TensorProto whose data stays in a file: onnxruntime reads it from there. */
export function externalFloat32TensorProto(name: string, dims: readonly number[], file: FileBytes): TensorProto {
  assertLittleEndian();
  return {
    name,
    dims: [...dims],
    data_type: DataType.FLOAT,
    data_location: EXTERNAL_DATA,
    external_data: [
      { key: 'location', value: file.path },
      { key: 'offset', value: String(file.offset) },
      { key: 'length', value: String(file.length) },
    ],
  };
}

/** The file bytes an external TensorProto names, or undefined for one that holds its data. */
export function externalBytesOf(t: TensorProto): FileBytes | undefined {
  if (t.data_location !== EXTERNAL_DATA) return undefined;
  const entry = (key: string) => t.external_data?.find((e) => e.key === key)?.value;
  const path = entry('location');
  if (path === undefined) throw new DistVaeError('FILE_INVALID', `external tensor ${t.name ?? ''} names no location`);
  return { path, offset: Number(entry('offset') ?? 0), length: Number(entry('length') ?? 0) };
}

/** A float32 TensorProto whose raw_data is a view of `data` (no copy). */
export function float32TensorProto(name: string, dims: readonly number[], data: Float32Array): TensorProto {
  assertLittleEndian();
  return { name, dims: [...dims], data_type: DataType.FLOAT, raw_data: bytesOf(data) };
}

/** An int64 TensorProto (shapes, axes, pads); every value must be a safe integer. */
export function int64TensorProto(name: string, dims: readonly number[], values: readonly number[]): TensorProto {
  assertLittleEndian();
  const data = new BigInt64Array(values.length);
  values.forEach((v, i) => {
    if (!Number.isSafeInteger(v)) throw new DistVaeError('INVALID_ARGUMENT', `int64 literal ${name}[${i}] = ${v} is not a safe integer`);
    data[i] = BigInt(v);
  });
  return { name, dims: [...dims], data_type: DataType.INT64, raw_data: bytesOf(data) };
}

/** The elements of a TensorProto as numbers, from raw_data or the typed fields. */
export function tensorProtoValues(t: TensorProto): number[] {
  const external = externalBytesOf(t);
  const raw = external ? readExternalBytes(external) : t.raw_data;
  if (raw && raw.byteLength > 0) {
    // Copy into a buffer of its own: a decoded raw_data is a Buffer view into the model bytes at
    // any offset (and Buffer#slice would not copy).
    const buffer = new Uint8Array(raw).buffer;
    switch (t.data_type) {
      case DataType.FLOAT:
        return Array.from(new Float32Array(buffer));
      case DataType.DOUBLE:
        return Array.from(new Float64Array(buffer));
      case DataType.INT64:
        return Array.from(new BigInt64Array(buffer), Number);
      case DataType.INT32:
        return Array.from(new Int32Array(buffer));
      case DataType.INT8:
        return Array.from(new Int8Array(buffer));
      case DataType.UINT8:
      case DataType.BOOL:
        return Array.from(new Uint8Array(buffer));
      default:
        throw new DistVaeError(
          'UNSUPPORTED',
          `tensor ${t.name ?? ''} has data type ${dataTypeName(t.data_type)}, which this reader does not decode`,
        );
    }
  }
  return [...(t.float_data ?? t.double_data ?? t.int64_data ?? t.int32_data ?? [])];
}
