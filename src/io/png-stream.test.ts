// The band-by-band PNG writer against the whole-image writer (pngjs decodes both to the same
// pixels, 8 and 16 bit, 1/3/4 channels, bands of any heights), its text chunks, and
// `decodeToBands` against `vae.decode`: the same sample, bitwise, delivered in row order.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PNG } from 'pngjs';
import { decodeToBands } from '../decode/engine.js';
import { seededTensor } from '../tensor.js';
import type { Tensor } from '../tensor.js';
import { writeSamplePng } from './image.js';
import { PngBandWriter } from './png-stream.js';
import { withTinyTiledVae } from './testing/tiny-tiled-vae.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-pngstream-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function rows(t: Tensor, y0: number, y1: number): Tensor {
  const [b, c, h, w] = t.dims as number[];
  const out = new Float32Array(b! * c! * (y1 - y0) * w!);
  for (let p = 0; p < b! * c!; p++) out.set(t.data.subarray((p * h! + y0) * w!, (p * h! + y1) * w!), p * (y1 - y0) * w!);
  return { dims: [b!, c!, y1 - y0, w!], data: out };
}

test("streamed PNGs decode to the whole-image writer's pixels, 8 and 16 bit, grey, RGB and RGBA", () => {
  for (const channels of [1, 3, 4]) {
    for (const bitDepth of [8, 16] as const) {
      const sample = seededTensor([1, channels, 13, 7], channels + bitDepth);
      const whole = join(dir, `whole-${channels}-${bitDepth}.png`);
      const streamed = join(dir, `streamed-${channels}-${bitDepth}.png`);
      writeSamplePng(whole, sample, 'signed', { bitDepth });
      const writer = new PngBandWriter(streamed, {
        width: 7,
        height: 13,
        channels,
        bitDepth,
        range: 'signed',
        text: { Software: 'distvae' },
      });
      for (const [y0, y1] of [
        [0, 5],
        [5, 6],
        [6, 13],
      ] as const)
        writer.writeBand(rows(sample, y0, y1));
      writer.finish();
      const a = PNG.sync.read(readFileSync(whole), { skipRescale: true });
      const b = PNG.sync.read(readFileSync(streamed), { skipRescale: true });
      assert.deepEqual([b.width, b.height], [7, 13]);
      assert.deepEqual(Buffer.from(b.data), Buffer.from(a.data), `${channels} channels, ${bitDepth} bit`);
      assert.ok(readFileSync(streamed).includes(Buffer.from('tEXtSoftware\0distvae')));
    }
  }
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('partial')),
    [],
  );
});

test('an unfinished or aborted PNG leaves nothing', () => {
  const path = join(dir, 'cut.png');
  const writer = new PngBandWriter(path, { width: 4, height: 4, channels: 3, range: 'unit' });
  writer.writeBand(rows(seededTensor([1, 3, 4, 4], 1), 0, 2));
  assert.throws(() => writer.finish(), { code: 'RUNTIME_FAILED', message: /after 2 of 4 rows/ });
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.startsWith('cut') || f.startsWith('.cut')),
    [],
  );
});

test('decodeToBands hands on the tiled sample in row order, bitwise what vae.decode returns', async () => {
  await withTinyTiledVae(4, async (vae) => {
    const z = seededTensor([1, 4, 12, 5], 2);
    const whole = await vae.decode(z);
    const bands: [number, Tensor][] = [];
    const { dims, streamed } = await decodeToBands(vae, z, (y0, band) => bands.push([y0, band]));
    assert.equal(streamed, true);
    assert.deepEqual(dims, whole.dims);
    assert.ok(bands.length > 1);
    let y = 0;
    for (const [y0, band] of bands) {
      assert.equal(y0, y);
      assert.deepEqual(band.data, rows(whole, y0, y0 + band.dims[2]!).data);
      y += band.dims[2]!;
    }
    assert.equal(y, whole.dims[2]);
  });
});
