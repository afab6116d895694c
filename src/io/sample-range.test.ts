// The sample range as a per-channel float32 affine: for 'signed' and 'unit' (every family but
// MiniMax-H3) it gives, bit for bit, what the mappings it replaced gave — clamp(x/2 + 0.5, 0, 1)
// and clamp(x, 0, 1) out, 2v − 1 and v in, each rounded once to float32 — over a sweep of float32
// values and every 8- and 16-bit pixel; a per-channel range is applied by channel and refused
// where its entries do not match the channels. (MiniMax-H3's own range is checked against
// diffusers in families/minimax-h3/pixels.test.ts.)

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { channelAffine, imageToInput, imageValue, inputValue, sampleToImage } from './sample-range.js';

/** Float32 values from about −4 to 4: every 4099th bit pattern below 4 in magnitude, both signs, plus the edges. */
function sweep(): Float32Array {
  const bits = new Uint32Array(2 * Math.ceil(0x40800000 / 4099) + 6);
  let n = 0;
  for (let b = 0; b < 0x40800000; b += 4099) {
    bits[n++] = b;
    bits[n++] = (b | 0x80000000) >>> 0;
  }
  const floats = new Float32Array(bits.buffer, 0, n);
  return Float32Array.from([...floats, 0.5, -1, 1, 0, 1e-45, -1e-45]);
}

const clamp = (x: number) => (x < 0 ? 0 : x > 1 ? 1 : x);

test("'signed' and 'unit' map samples out exactly as clamp(x/2 + 0.5) and clamp(x) did", () => {
  const xs = sweep();
  for (const [range, old] of [
    ['signed', (x: number) => Math.fround(clamp(x / 2 + 0.5))],
    ['unit', (x: number) => Math.fround(clamp(x))],
  ] as const) {
    const affine = channelAffine(range, 3);
    let differ = 0;
    for (const x of xs) for (let c = 0; c < 3; c++) if (imageValue(x, affine, c) !== old(x)) differ++; // (−0 clamps to +0 now: the same pixel)
    assert.equal(differ, 0, `${range}: ${differ} of ${xs.length * 3} values differ`);
  }
});

test("'signed' and 'unit' map every 8- and 16-bit pixel in exactly as 2v − 1 and v did", () => {
  for (const max of [255, 65535]) {
    const signed = channelAffine('signed', 1);
    const unit = channelAffine('unit', 1);
    for (let b = 0; b <= max; b++) {
      const v = Math.fround(b / max);
      assert.equal(inputValue(v, signed, 0), Math.fround(2 * v - 1), `signed ${b}/${max}`);
      assert.equal(inputValue(v, unit, 0), v, `unit ${b}/${max}`);
    }
  }
});

test('a per-channel range maps each channel of a (B, C, F, H, W) tensor by its own mean and std, both ways', () => {
  const range = { mean: [0.25, 0.5, 0.75], std: [0.5, 0.25, 2] };
  // Batch 2, 3 channels, 2 frames of 1 x 2: channel c of batch b holds the same four values.
  const values = [-1, 0, 0.5, 1];
  const dims = [2, 3, 2, 1, 2];
  const sample = { dims, data: Float32Array.from({ length: 24 }, (_, i) => values[i % 4]!) };
  const image = sampleToImage(sample, range);
  assert.deepEqual(image.dims, dims);
  for (let i = 0; i < 24; i++) {
    const c = Math.floor(i / 4) % 3;
    assert.equal(image.data[i], clamp(values[i % 4]! * range.std[c]! + range.mean[c]!), `value ${i}`);
  }
  const back = imageToInput({ dims, data: image.data }, range);
  for (let i = 0; i < 24; i++) {
    const c = Math.floor(i / 4) % 3;
    assert.equal(back.data[i], (image.data[i]! - range.mean[c]!) / range.std[c]!, `value ${i}`);
  }
});

test('a per-channel range is refused on a sample with another number of channels, naming both', () => {
  const range = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
  assert.throws(() => channelAffine(range, 1), { code: 'TENSOR_INVALID', message: /1 channels, but its family's range gives 3 means/ });
  assert.throws(() => sampleToImage({ dims: [1, 4, 2, 2], data: new Float32Array(16) }, range), { code: 'TENSOR_INVALID' });
  // 'signed' and 'unit' take any number of channels (grey, RGBA).
  assert.equal(channelAffine('signed', 4).mean.length, 4);
});
