import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { DistVaeError } from '../errors.js';
import { decodeImage, readImage } from './image.js';

const W = 3;
const H = 2;
/** RGBA pixels of a 2 × 3 test image: every channel distinct, alpha varying. */
const RGBA = Uint8Array.from(
  [
    [255, 0, 10, 255],
    [0, 128, 20, 0],
    [1, 2, 3, 100],
    [40, 50, 60, 255],
    [200, 201, 202, 7],
    [7, 8, 9, 255],
  ].flat(),
);

function png(options: { colorType: 0 | 2 | 4 | 6; bitDepth?: 8 | 16 }, data: Uint8Array | Uint16Array = RGBA): Uint8Array {
  const image = new PNG({ width: W, height: H });
  const bytes = data instanceof Uint16Array ? Buffer.from(data.buffer) : Buffer.from(data);
  image.data = bytes;
  return PNG.sync.write(image, { colorType: options.colorType, bitDepth: options.bitDepth ?? 8, inputColorType: 6, inputHasAlpha: true });
}

/** Expected planes (R, G, B) of interleaved RGBA values over `max`. */
function planes(rgba: ArrayLike<number>, max: number): number[] {
  const out: number[] = [];
  for (let c = 0; c < 3; c++) for (let i = 0; i < W * H; i++) out.push(rgba[i * 4 + c]! / max);
  return out;
}

test('PNG RGB and RGBA: (1, 3, H, W) planes in [0, 1], alpha dropped (not composited)', () => {
  // pngjs composites alpha onto white when it writes RGB, so that file gets opaque input.
  const opaque = RGBA.map((v, i) => (i % 4 === 3 ? 255 : v));
  for (const [colorType, data] of [
    [2, opaque],
    [6, RGBA],
  ] as const) {
    const t = decodeImage(png({ colorType }, data));
    assert.deepEqual(t.dims, [1, 3, H, W]);
    assert.deepEqual(
      [...t.data],
      planes(RGBA, 255).map((v) => Math.fround(v)),
    );
  }
});

test('PNG grey (with and without alpha) is replicated to RGB', () => {
  // pngjs writes grey as the rounded mean of R, G, B; compare against what it stored.
  for (const colorType of [0, 4] as const) {
    const t = decodeImage(png({ colorType }));
    const grey = PNG.sync.read(Buffer.from(png({ colorType })));
    const expected = planes(grey.data, 255);
    assert.deepEqual(
      [...t.data],
      expected.map((v) => Math.fround(v)),
    );
    assert.deepEqual([...t.data.subarray(0, 6)], [...t.data.subarray(6, 12)], 'R and G planes equal');
  }
});

test('16-bit PNG keeps its 16-bit values (v / 65535)', () => {
  // Low bytes that an 8-bit rescale would lose.
  const deep = Uint16Array.from(RGBA, (v, i) => v * 256 + (i % 7));
  const t = decodeImage(png({ colorType: 6, bitDepth: 16 }, deep));
  assert.deepEqual(
    [...t.data],
    planes(deep, 65535).map((v) => Math.fround(v)),
  );
});

test('JPEG decodes to RGB planes in [0, 1] (close to the encoded pixels at quality 100)', () => {
  const rgba = new Uint8Array(16 * 16 * 4);
  for (let i = 0; i < 256; i++) rgba.set([64 + (i % 16) * 4, 128, 200 - Math.floor(i / 16) * 4, 255], i * 4);
  const encoded = jpeg.encode({ width: 16, height: 16, data: rgba }, 100).data;
  const t = decodeImage(encoded, 'x.jpg');
  assert.deepEqual(t.dims, [1, 3, 16, 16]);
  let maxErr = 0;
  for (let c = 0; c < 3; c++)
    for (let i = 0; i < 256; i++) maxErr = Math.max(maxErr, Math.abs(t.data[c * 256 + i]! - rgba[i * 4 + c]! / 255));
  assert.ok(maxErr < 4 / 255, `max error ${maxErr * 255} / 255`);
});

test('readImage reads by content, not by name; unsupported and broken files are FILE_INVALID naming the format', () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-image-'));
  const misnamed = join(dir, 'image.jpg');
  writeFileSync(misnamed, png({ colorType: 2 }));
  assert.deepEqual(readImage(misnamed).dims, [1, 3, H, W]);

  const refuse = (bytes: Uint8Array, pattern: RegExp) =>
    assert.throws(
      () => decodeImage(bytes, 'f.img'),
      (e: unknown) => e instanceof DistVaeError && e.code === 'FILE_INVALID' && pattern.test(e.message),
    );
  refuse(new TextEncoder().encode('GIF89a.....'), /f\.img is a GIF image; images are read from PNG and JPEG files/);
  refuse(new TextEncoder().encode('RIFF\0\0\0\0WEBPVP8 '), /a WebP image/);
  refuse(new TextEncoder().encode('hello'), /not a PNG or JPEG image/);
  refuse(png({ colorType: 2 }).subarray(0, 40), /f\.img: not a valid PNG: .*\(truncated\?\)/);
  refuse(Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 1, 2]), /f\.img: cannot decode the JPEG image/);
  assert.throws(
    () => readImage(join(dir, 'absent.png')),
    (e: unknown) => e instanceof DistVaeError && e.code === 'FILE_NOT_FOUND',
  );
});
