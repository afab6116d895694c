// A page's photo as an encoder's input: every family's pixels land in its own input range,
// checked against float64 formulas written out here (2v − 1 for the diffusers classes, v for TAE,
// (v − mean) / std per channel for MiniMax-H3), and drawn back they are the same bytes.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAMILIES } from '../families/registry.js';
import { inputOfRgba, rgbaOf } from './canvas.js';

/** 2 × 3 pixels covering black, white and values between, alpha varied (it is ignored). */
const RGBA = {
  width: 3,
  height: 2,
  data: Uint8ClampedArray.from([0, 0, 0, 255, 255, 255, 255, 0, 1, 127, 128, 200, 254, 3, 77, 255, 64, 192, 33, 10, 200, 100, 50, 255]),
};

/** The family's input value of an 8-bit value of channel `c`, in float64. */
function expected(range: (typeof FAMILIES)[number]['sampleRange'], v: number, c: number): number {
  if (range === 'signed') return (2 * v) / 255 - 1;
  if (range === 'unit') return v / 255;
  return (v / 255 - range.mean[c]!) / range.std[c]!;
}

for (const family of FAMILIES) {
  test(`${family.name}: a page's RGBA pixels are its encoder's input range, and draw back to the same bytes`, () => {
    const image = inputOfRgba(RGBA, family.sampleRange);
    assert.deepEqual(image.dims, [1, 3, 2, 3]);
    for (let c = 0; c < 3; c++)
      for (let i = 0; i < 6; i++) {
        const want = expected(family.sampleRange, RGBA.data[4 * i + c]!, c);
        assert.ok(Math.abs(image.data[c * 6 + i]! - want) <= 1e-6 * Math.max(1, Math.abs(want)), `channel ${c}, pixel ${i}`);
      }
    const back = rgbaOf(image, family.sampleRange).data;
    for (let i = 0; i < 6; i++)
      assert.deepEqual([...back.subarray(4 * i, 4 * i + 3)], [...RGBA.data.subarray(4 * i, 4 * i + 3)], `pixel ${i}`);
  });
}

test('the diffusers classes take black as −1 (not 0: [0, 1] is TAE’s range only)', () => {
  const signed = FAMILIES.filter((f) => f.sampleRange === 'signed');
  assert.ok(signed.length >= 5);
  for (const f of signed) assert.equal(inputOfRgba(RGBA, f.sampleRange).data[0], -1, f.name);
});

test('pixels that are not 4 bytes each are refused, naming the sizes', () => {
  assert.throws(
    () => inputOfRgba({ width: 2, height: 2, data: new Uint8ClampedArray(15) }, 'signed'),
    (e: unknown) => e instanceof Error && /RGBA pixels of 2x2 are 16 bytes; got 15/.test(e.message),
  );
});
