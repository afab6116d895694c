// Element types of stored tensors (safetensors' names; .pth storages and .npy descrs map onto
// them) and the one place raw little-endian bytes become float32 and back. Every tensor the
// library computes with is float32; a stored tensor keeps its original dtype alongside.

import { DistVaeError } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { bfloat16ArrayToFloat32, float16ArrayToFloat32, float32ArrayToBfloat16, float32ArrayToFloat16 } from './halfprecision.js';

export const DTYPE_BYTES = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
} as const;

/** A tensor dtype, named as safetensors names it (`F32`, `F16`, `BF16`, `I64`, …). */
export type DType = keyof typeof DTYPE_BYTES;

/** The dtypes a file may be written in: the float types checkpoints use. */
export type FloatDType = 'F32' | 'F16' | 'BF16';

/** A tensor read from a file: float32 data plus the dtype it was stored in. */
export interface StoredTensor extends Tensor {
  readonly dtype: DType;
}

export function isDType(name: unknown): name is DType {
  return typeof name === 'string' && Object.hasOwn(DTYPE_BYTES, name);
}

// Typed arrays use host byte order; every format here is little-endian.
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new DistVaeError('UNSUPPORTED', 'big-endian hosts are not supported: tensor files are little-endian');
}

type TypedArrayConstructor<T> = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): T; BYTES_PER_ELEMENT: number };

/**
 * A typed view of the bytes, copying first only when they are not aligned for the type (a
 * safetensors header's length need not be a multiple of 4). The copy is a new Uint8Array:
 * a Node Buffer's own `slice` would share memory and stay misaligned.
 */
function viewAs<T>(bytes: Uint8Array, Type: TypedArrayConstructor<T>): T {
  const aligned = bytes.byteOffset % Type.BYTES_PER_ELEMENT === 0 ? bytes : new Uint8Array(bytes);
  return new Type(aligned.buffer, aligned.byteOffset, aligned.length / Type.BYTES_PER_ELEMENT);
}

/** Decodes `bytes` (a whole number of elements of `dtype`) into a new float32 array. */
export function decodeToFloat32(bytes: Uint8Array, dtype: DType): Float32Array {
  switch (dtype) {
    case 'F32':
      return viewAs(bytes, Float32Array).slice();
    case 'F16':
      return float16ArrayToFloat32(viewAs(bytes, Uint16Array));
    case 'BF16':
      return bfloat16ArrayToFloat32(viewAs(bytes, Uint16Array));
    case 'F64':
      return new Float32Array(viewAs(bytes, Float64Array));
    case 'I64': {
      const ints = viewAs(bytes, BigInt64Array);
      const out = new Float32Array(ints.length);
      for (let i = 0; i < ints.length; i++) out[i] = Number(ints[i]!);
      return out;
    }
    case 'I32':
      return new Float32Array(viewAs(bytes, Int32Array));
    case 'I16':
      return new Float32Array(viewAs(bytes, Int16Array));
    case 'I8':
      return new Float32Array(viewAs(bytes, Int8Array));
    case 'U8':
      return new Float32Array(bytes);
    case 'BOOL':
      return Float32Array.from(bytes, (b) => (b === 0 ? 0 : 1));
  }
}

/** Encodes float32 data as little-endian bytes of a float dtype (rounding to nearest even). */
export function encodeFromFloat32(data: Float32Array, dtype: FloatDType): Uint8Array {
  const encoded = dtype === 'F32' ? data : dtype === 'F16' ? float32ArrayToFloat16(data) : float32ArrayToBfloat16(data);
  return new Uint8Array(encoded.buffer, encoded.byteOffset, encoded.byteLength);
}
