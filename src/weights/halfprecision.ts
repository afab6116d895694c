// IEEE binary16 (float16) and bfloat16 <-> float32 conversion, bit-exact with numpy and torch:
// float32 -> half rounds to nearest, ties to even; overflow goes to ±inf; NaN becomes the quiet NaN;
// subnormals are produced and read exactly. Shared by the safetensors, .pth and .npy codecs.

const scratch = new DataView(new ArrayBuffer(4));

function float32Bits(x: number): number {
  scratch.setFloat32(0, x);
  return scratch.getUint32(0);
}

function bitsToFloat32(bits: number): number {
  scratch.setUint32(0, bits >>> 0);
  return scratch.getFloat32(0);
}

/** float16 bit pattern -> the float32 value it denotes (always exact). */
export function float16BitsToFloat32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >>> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1024 + mantissa) * 2 ** (exponent - 25);
}

/** float32 value -> float16 bit pattern, round to nearest even (numpy's algorithm). */
export function float32ToFloat16Bits(x: number): number {
  const f = float32Bits(x);
  const sign = (f >>> 16) & 0x8000;
  const magnitude = f & 0x7fffffff;
  const exponentBits = magnitude & 0x7f800000;
  if (exponentBits >= 0x47800000) {
    return sign | (magnitude > 0x7f800000 ? 0x7e00 : 0x7c00);
  }
  if (exponentBits <= 0x38000000) {
    // Result is subnormal or zero in half precision.
    if (exponentBits < 0x33000000) return sign;
    const exponent = exponentBits >>> 23;
    let significand = (0x00800000 + (magnitude & 0x007fffff)) >>> (113 - exponent);
    // Round half to even; the low 11 bits of the input may have been shifted out above.
    if ((significand & 0x3fff) !== 0x1000 || (magnitude & 0x7ff) !== 0) significand += 0x1000;
    return sign + (significand >>> 13);
  }
  let significand = magnitude & 0x007fffff;
  if ((significand & 0x3fff) !== 0x1000) significand += 0x1000;
  // A carry out of the significand bumps the exponent, up to ±inf: the correct result.
  return sign + ((exponentBits - 0x38000000) >>> 13) + (significand >>> 13);
}

/** bfloat16 bit pattern -> float32 value (always exact: bfloat16 is the top half of float32). */
export function bfloat16BitsToFloat32(b: number): number {
  return bitsToFloat32((b & 0xffff) << 16);
}

/** float32 value -> bfloat16 bit pattern, round to nearest even (torch's algorithm). */
export function float32ToBfloat16Bits(x: number): number {
  const f = float32Bits(x);
  if ((f & 0x7fffffff) > 0x7f800000) return ((f >>> 16) & 0x8000) | 0x7fc0;
  return ((f + 0x7fff + ((f >>> 16) & 1)) >>> 16) & 0xffff;
}

let float16Table: Float32Array | undefined;

/** Decodes float16 bit patterns to float32 through a 64 Ki-entry table (built once). */
export function float16ArrayToFloat32(src: Uint16Array): Float32Array {
  if (!float16Table) {
    float16Table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) float16Table[h] = float16BitsToFloat32(h);
  }
  const table = float16Table;
  const out = new Float32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = table[src[i]!]!;
  return out;
}

export function bfloat16ArrayToFloat32(src: Uint16Array): Float32Array {
  const bits = new Uint32Array(src.length);
  for (let i = 0; i < src.length; i++) bits[i] = src[i]! << 16;
  return new Float32Array(bits.buffer);
}

export function float32ArrayToFloat16(src: Float32Array): Uint16Array {
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = float32ToFloat16Bits(src[i]!);
  return out;
}

export function float32ArrayToBfloat16(src: Float32Array): Uint16Array {
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = float32ToBfloat16Bits(src[i]!);
  return out;
}
