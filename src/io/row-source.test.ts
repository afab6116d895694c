import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { after, test } from 'node:test';
import jpeg from 'jpeg-js';
import { seededTensor } from '../tensor.js';
import { decodeImage, encodePng } from './image.js';
import { writeNpy } from './npy.js';
import { openImageRows, readAllRows } from './row-source.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-rows-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A PNG built here from raw samples (independent of the reader): each scanline filtered with a
 * filter type chosen per row (0–4 in turn, so all five are undone), deflated in one zlib stream
 * split over several IDAT chunks.
 */
function pngBytes(opts: {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  samples: number[][];
  palette?: number[];
  interlace?: 0 | 1;
}): Uint8Array {
  const { width, height, bitDepth, colorType, samples } = opts;
  const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType]!;
  const bits = channels * bitDepth;
  const stride = Math.ceil((width * bits) / 8);
  const bpp = Math.max(1, bits / 8);
  const raw: number[] = [];
  let up = new Array<number>(stride).fill(0);
  for (let y = 0; y < height; y++) {
    const line = new Array<number>(stride).fill(0);
    samples[y]!.forEach((v, i) => {
      if (bitDepth === 16) [line[2 * i], line[2 * i + 1]] = [v >> 8, v & 0xff];
      else if (bitDepth === 8) line[i] = v;
      else {
        const per = 8 / bitDepth;
        line[Math.floor(i / per)]! |= v << (8 - bitDepth * ((i % per) + 1));
      }
    });
    const filter = y % 5;
    raw.push(filter);
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? line[i - bpp]! : 0;
      const b = up[i]!;
      const c = i >= bpp ? up[i - bpp]! : 0;
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const pred = [0, a, b, (a + b) >> 1, paeth][filter]!;
      raw.push((line[i]! - pred) & 0xff);
    }
    up = line;
  }
  const z = deflateSync(Uint8Array.from(raw));
  const chunk = (type: string, data: Uint8Array): Buffer => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))));
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([bitDepth, colorType, 0, 0, opts.interlace ?? 0], 8);
  const third = Math.ceil(z.length / 3);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('tEXt', Buffer.from('Comment\0skipped')),
    ...(opts.palette ? [chunk('PLTE', Uint8Array.from(opts.palette))] : []),
    chunk('IDAT', z.subarray(0, third)),
    chunk('IDAT', z.subarray(third, 2 * third)),
    chunk('IDAT', z.subarray(2 * third)),
    chunk('IEND', new Uint8Array(0)),
  ]);
}

const FORMATS: [number, number][] = [
  [0, 1],
  [0, 2],
  [0, 4],
  [0, 8],
  [0, 16],
  [2, 8],
  [2, 16],
  [3, 1],
  [3, 2],
  [3, 4],
  [3, 8],
  [4, 8],
  [4, 16],
  [6, 8],
  [6, 16],
];

for (const [colorType, bitDepth] of FORMATS) {
  test(`PNG colour type ${colorType}, ${bitDepth}-bit: streamed rows equal the whole-image reader (pngjs), mapped to [-1, 1] and [0, 1]`, () => {
    const [width, height] = [7, 11];
    const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType]!;
    let s = colorType * 31 + bitDepth;
    const rand = (n: number) => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) >>> 8) % n;
    const entries = colorType === 3 ? 2 ** bitDepth : 0;
    const samples = Array.from({ length: height }, () =>
      Array.from({ length: width * channels }, () => rand(colorType === 3 ? entries : 2 ** bitDepth)),
    );
    const palette = colorType === 3 ? Array.from({ length: entries * 3 }, () => rand(256)) : undefined;
    const path = join(dir, `t${colorType}-${bitDepth}.png`);
    const bytes = pngBytes({ width, height, bitDepth, colorType, samples, ...(palette ? { palette } : {}) });
    writeFileSync(path, bytes);
    const whole = decodeImage(bytes, path);
    const unit = openImageRows(path, 'unit');
    try {
      assert.equal(unit.reading, 'streamed');
      assert.deepEqual(unit.dims, [1, 3, height, width]);
      // Overlapping bands, as tiles ask for them.
      const bands = [unit.rows(0, 4), unit.rows(2, 8), unit.rows(6, 11)];
      const expectRows = (y0: number, y1: number) => {
        const out: number[] = [];
        for (let c = 0; c < 3; c++) out.push(...whole.data.subarray((c * height + y0) * width, (c * height + y1) * width));
        return out;
      };
      assert.deepEqual([...bands[0]!.data], expectRows(0, 4));
      assert.deepEqual([...bands[1]!.data], expectRows(2, 8));
      assert.deepEqual([...bands[2]!.data], expectRows(6, 11));
    } finally {
      unit.close();
    }
    const signed = openImageRows(path, 'signed');
    try {
      assert.deepEqual(
        [...readAllRows(signed).data],
        [...whole.data].map((v) => Math.fround(2 * v - 1)),
      );
    } finally {
      signed.close();
    }
  });
}

test('a tall PNG is read holding only the rows of the band asked for and its overlap, never the image', () => {
  const [width, height] = [4, 4096];
  const image = seededTensor([1, 3, height, width], 3, 0.5).data.map((v) => v + 0.5);
  const path = join(dir, 'tall.png');
  writeFileSync(path, encodePng(image, 3, height, width));
  const source = openImageRows(path, 'unit');
  const [band, overlap] = [64, 16];
  let rows = 0;
  try {
    for (let y0 = 0; y0 < height; y0 += band - overlap) {
      const t = source.rows(y0, Math.min(height, y0 + band));
      rows += t.dims[2]!;
      // Row y0 of the red plane, quantised to 8 bits as the file holds it.
      assert.equal(t.data[0], Math.fround(Math.round(image[y0 * width]! * 255) / 255));
      if (y0 + band >= height) break;
    }
  } finally {
    source.close();
  }
  assert.ok(rows > height, 'the bands overlap');
  assert.equal(source.peakRowsHeld, band, `held at most one band (${band} rows) of ${height}`);
});

test('.npy (B, C, H, W) and (B, C, F, H, W) inputs are read a band at a time, values as stored; bands out of order are refused', () => {
  for (const dims of [
    [2, 3, 10, 6],
    [1, 3, 2, 10, 6],
  ]) {
    const t = seededTensor(dims, 4);
    const path = join(dir, `in-${dims.length}.npy`);
    writeNpy(path, t);
    const source = openImageRows(path, 'signed');
    try {
      assert.deepEqual(source.dims, dims);
      const band = source.rows(3, 7);
      assert.deepEqual(band.dims, [...dims.slice(0, -2), 4, 6]);
      const planes = t.data.length / 60;
      for (let p = 0; p < planes; p++)
        assert.deepEqual(band.data.subarray(p * 24, (p + 1) * 24), t.data.subarray(p * 60 + 18, p * 60 + 42));
      assert.equal(source.peakRowsHeld, 4);
      assert.throws(() => source.rows(2, 4), { message: /after a band starting at 3/ });
    } finally {
      source.close();
    }
  }
  writeNpy(join(dir, 'bad.npy'), seededTensor([3, 10, 6], 1));
  assert.throws(() => openImageRows(join(dir, 'bad.npy'), 'unit'), {
    code: 'TENSOR_INVALID',
    message: /\(B, C, H, W\) or \(B, C, F, H, W\), got \(3, 10, 6\)/,
  });
});

test('an Adam7-interlaced PNG and a JPEG are read whole; hostile headers are refused before any allocation', () => {
  // A 1x1 image's only Adam7 pass is the pixel itself: its data is that of the plain file, its header says interlaced.
  const adam7 = join(dir, 'adam7.png');
  writeFileSync(adam7, pngBytes({ width: 1, height: 1, bitDepth: 8, colorType: 2, samples: [[255, 51, 0]], interlace: 1 }));
  const whole = openImageRows(adam7, 'signed');
  assert.equal(whole.reading, 'whole');
  assert.deepEqual([...readAllRows(whole).data], [1, Math.fround((2 * 51) / 255 - 1), -1]);
  whole.close();
  const jpegPath = join(dir, 'photo.jpg');
  writeFileSync(jpegPath, jpeg.encode({ width: 8, height: 8, data: new Uint8Array(256).fill(128) }, 90).data);
  const photo = openImageRows(jpegPath, 'unit');
  assert.equal(photo.reading, 'whole');
  assert.deepEqual(photo.dims, [1, 3, 8, 8]);
  photo.close();
  const huge = pngBytes({ width: 1, height: 1, bitDepth: 8, colorType: 0, samples: [[0]] });
  new DataView(huge.buffer, huge.byteOffset).setUint32(16, 20000);
  new DataView(huge.buffer, huge.byteOffset).setUint32(20, 20000);
  writeFileSync(join(dir, 'huge.png'), huge);
  assert.throws(() => openImageRows(join(dir, 'huge.png'), 'unit'), { code: 'FILE_INVALID', message: /declares 20000 x 20000 pixels/ });
  const truncated = pngBytes({ width: 3, height: 40, bitDepth: 8, colorType: 0, samples: Array.from({ length: 40 }, () => [1, 2, 3]) });
  writeFileSync(join(dir, 'cut.png'), truncated.subarray(0, truncated.length - 40));
  const cut = openImageRows(join(dir, 'cut.png'), 'unit');
  assert.throws(() => readAllRows(cut), { code: 'FILE_INVALID', message: /truncated|past the end/ });
  cut.close();
});

test('hostile PNG data is refused in our words: a filter type past 4, a palette index past PLTE, image data inflating past its scanlines', () => {
  const write = (name: string, bytes: Uint8Array) => {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    return path;
  };
  const readAll = (path: string) => {
    const source = openImageRows(path, 'unit');
    try {
      return readAllRows(source);
    } finally {
      source.close();
    }
  };
  const good = pngBytes({
    width: 2,
    height: 2,
    bitDepth: 8,
    colorType: 0,
    samples: [
      [1, 2],
      [3, 4],
    ],
  });
  assert.equal(readAll(write('good.png', good)).dims[2], 2);
  // The header of `good` with image data made here: raw scanlines (filter byte first), then `extra` zero bytes.
  const rebuilt = (raw: number[], extra = 0) => {
    const data = deflateSync(Uint8Array.from([...raw, ...new Array<number>(extra).fill(0)]));
    const chunk = (type: string, d: Uint8Array) => {
      const head = Buffer.alloc(8);
      head.writeUInt32BE(d.length, 0);
      head.write(type, 4, 'latin1');
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(crc32(d, crc32(head.subarray(4))));
      return Buffer.concat([head, d, crc]);
    };
    return Buffer.concat([good.subarray(0, 33), chunk('IDAT', data), chunk('IEND', new Uint8Array(0))]);
  };
  assert.throws(() => readAll(write('filter.png', rebuilt([7, 1, 2, 0, 3, 4]))), { code: 'FILE_INVALID', message: /filter type 7/ });
  assert.throws(() => readAll(write('bomb.png', rebuilt([0, 1, 2, 0, 3, 4], 1 << 20))), {
    code: 'FILE_INVALID',
    message: /inflates past the 6 bytes of 2 scanlines/,
  });
  const palette = pngBytes({ width: 2, height: 1, bitDepth: 8, colorType: 3, samples: [[0, 5]], palette: [0, 0, 0, 255, 255, 255] });
  assert.throws(() => readAll(write('palette.png', palette)), { code: 'FILE_INVALID', message: /palette entry 5 of 2/ });
});
