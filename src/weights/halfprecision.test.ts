import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bfloat16ArrayToFloat32,
  bfloat16BitsToFloat32,
  float16ArrayToFloat32,
  float16BitsToFloat32,
  float32ArrayToBfloat16,
  float32ArrayToFloat16,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from './halfprecision.js';

const f32 = (bits: number): number => new Float32Array(new Uint32Array([bits]).buffer)[0]!;

test('float16 bit patterns decode to the IEEE values', () => {
  const cases: [number, number][] = [
    [0x0000, 0],
    [0x3c00, 1],
    [0xc000, -2],
    [0x3555, 0.333251953125],
    [0x7bff, 65504],
    [0x0400, 2 ** -14], // smallest normal
    [0x03ff, 1023 * 2 ** -24], // largest subnormal
    [0x0001, 2 ** -24], // smallest subnormal
    [0x7c00, Infinity],
    [0xfc00, -Infinity],
  ];
  for (const [bits, value] of cases) assert.equal(float16BitsToFloat32(bits), value, `0x${bits.toString(16)}`);
  assert.ok(Object.is(float16BitsToFloat32(0x8000), -0));
  assert.ok(Number.isNaN(float16BitsToFloat32(0x7e00)) && Number.isNaN(float16BitsToFloat32(0xfc01)));
});

test('float32 -> float16 rounds to nearest even at ties, overflows to inf, keeps subnormals', () => {
  const cases: [number, number][] = [
    [1, 0x3c00],
    [1 + 2 ** -11, 0x3c00], // tie between 0x3c00 and 0x3c01: even wins
    [1 + 3 * 2 ** -11, 0x3c02], // tie between 0x3c01 and 0x3c02: even wins
    [1 + 2 ** -11 + 2 ** -20, 0x3c01], // just above the tie
    [65504, 0x7bff],
    [65519.99, 0x7bff],
    [65520, 0x7c00], // tie between max half and the next (inf): rounds to inf
    [1e6, 0x7c00],
    [-1e6, 0xfc00],
    [2 ** -24, 0x0001],
    [2 ** -25, 0x0000], // tie between 0 and the smallest subnormal
    [2 ** -25 * 1.0001, 0x0001],
    [3 * 2 ** -25, 0x0002], // tie between subnormals 1 and 2
    [2 ** -26, 0x0000],
    [1023.5 * 2 ** -24, 0x0400], // rounds up out of the subnormals into the smallest normal
    [Infinity, 0x7c00],
    [-0, 0x8000],
  ];
  for (const [value, bits] of cases) assert.equal(float32ToFloat16Bits(value), bits, `${value}`);
  assert.equal(float32ToFloat16Bits(NaN), 0x7e00);
});

test('every float16 value round-trips through float32 exactly', () => {
  const all = Uint16Array.from({ length: 65536 }, (_, i) => i);
  const back = float32ArrayToFloat16(float16ArrayToFloat32(all));
  for (let h = 0; h < 65536; h++) {
    const isNaN = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
    // A NaN comes back as the quiet NaN; JavaScript does not keep a NaN's sign.
    assert.equal(isNaN ? back[h]! & 0x7fff : back[h], isNaN ? 0x7e00 : h, `0x${h.toString(16)}`);
  }
});

test('float32 -> float16 matches a brute-force nearest-value search', () => {
  // Reference: binary search over the monotonic non-negative finite halves, ties to even bits.
  const halves = Float64Array.from({ length: 0x7c00 }, (_, h) => float16BitsToFloat32(h));
  const reference = (x: number): number => {
    const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
    const a = Math.abs(x);
    if (a >= 65520) return sign | 0x7c00;
    let lo = 0;
    let hi = halves.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (halves[mid]! <= a) lo = mid;
      else hi = mid - 1;
    }
    if (halves[lo] === a || lo === halves.length - 1) return sign | lo;
    const below = a - halves[lo]!;
    const above = halves[lo + 1]! - a;
    return sign | (below < above || (below === above && lo % 2 === 0) ? lo : lo + 1);
  };
  let state = 12345;
  const random = (): number => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
  const inputs: number[] = [];
  for (let i = 0; i < 20000; i++) {
    // float32 exponents 97..145 cover zero-underflow, subnormal, normal and overflow halves.
    const exponent = 97 + (random() % 49);
    inputs.push(f32(((random() & 1) << 31) | (exponent << 23) | (random() & 0x7fffff)));
  }
  for (let h = 0; h < 0x7bff; h++) inputs.push((halves[h]! + halves[h + 1]!) / 2); // every exact tie
  const converted = float32ArrayToFloat16(Float32Array.from(inputs));
  inputs.forEach((x, i) => assert.equal(converted[i], reference(Math.fround(x)), `${x}`));
});

test('bfloat16 bit patterns and rounding', () => {
  assert.equal(bfloat16BitsToFloat32(0x3f80), 1);
  assert.equal(bfloat16BitsToFloat32(0xc040), -3);
  assert.equal(bfloat16BitsToFloat32(0x7f80), Infinity);
  assert.equal(bfloat16BitsToFloat32(0x0001), f32(0x00010000)); // subnormal
  assert.ok(Number.isNaN(bfloat16BitsToFloat32(0x7fc0)));
  const cases: [number, number][] = [
    [1, 0x3f80],
    [1 + 2 ** -8, 0x3f80], // tie: even wins
    [1 + 3 * 2 ** -8, 0x3f82], // tie: even wins
    [1 + 2 ** -8 + 2 ** -20, 0x3f81],
    [f32(0x7f7fffff), 0x7f80], // float32 max rounds up to inf
    [f32(0x00018000), 0x0002], // subnormal tie between 0x0001 and 0x0002: even wins
    [-Infinity, 0xff80],
  ];
  for (const [value, bits] of cases) assert.equal(float32ToBfloat16Bits(value), bits, `${value}`);
  assert.equal(float32ToBfloat16Bits(NaN), 0x7fc0);
  const all = Uint16Array.from({ length: 65536 }, (_, i) => i).filter((b) => (b & 0x7f80) !== 0x7f80 || (b & 0x7f) === 0);
  assert.deepEqual(float32ArrayToBfloat16(bfloat16ArrayToFloat32(all)), all);
});
