// Peak RSS of reading a large PNG band by band through the encoder's row source
// (src/io/row-source.ts), as a tiled encode pulls it: bands of --band rows overlapping by
// --overlap, each mapped to [-1, 1]. The PNG (RGB, 8-bit, a seeded pattern) is written here band
// by band (PngBandWriter), never whole. Each arm runs in its own process under /usr/bin/time -f %M:
// 'streamed' pulls every band from openImageRows; 'whole' reads the image at once with readImage
// (pngjs). The checksum (first column of every row, mapped to [-1, 1]) must agree between arms, the reader the row source replaces — run only where it fits (--whole-max pixels).
// Usage: npx tsx bench/png-rows.ts [--sizes 16384,4096] [--band 512] [--overlap 64] [--whole-max 4096] [--out bench/results/png-rows.json]

import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runWithPeak } from './peak-rss.js';
import { readImage } from '../src/io/image.js';
import { PngBandWriter } from '../src/io/png-stream.js';
import { openImageRows } from '../src/io/row-source.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '16384,4096' },
    band: { type: 'string', default: '512' },
    overlap: { type: 'string', default: '64' },
    'whole-max': { type: 'string', default: '4096' },
    out: { type: 'string' },
    child: { type: 'string' },
    png: { type: 'string' },
  },
});
const band = Number(values.band);
const overlap = Number(values.overlap);

if (values.child !== undefined) {
  // One arm, in this process: report what it read and how long it took.
  const t0 = performance.now();
  let checksum = 0;
  let rowsRead = 0;
  let peakRowsHeld = 0;
  if (values.child === 'streamed') {
    const source = openImageRows(values.png!, 'signed');
    const height = source.dims[2]!;
    const width = source.dims[3]!;
    let seen = 0;
    for (let y0 = 0; ; y0 += band - overlap) {
      const t = source.rows(y0, Math.min(height, y0 + band));
      const h = t.dims[2]!;
      rowsRead += h;
      // Each image row counted once (the rows a band adds), so the checksum equals the whole read's.
      for (let c = 0; c < 3; c++) for (let y = seen - y0; y < h; y++) checksum += t.data[(c * h + y) * width]!;
      seen = y0 + h;
      if (y0 + band >= height) break;
    }
    peakRowsHeld = source.peakRowsHeld;
    source.close();
  } else {
    const image = readImage(values.png!);
    rowsRead = image.dims[2]!;
    peakRowsHeld = rowsRead;
    const [height, width] = [image.dims[2]!, image.dims[3]!];
    for (let c = 0; c < 3; c++) for (let y = 0; y < height; y++) checksum += image.data[(c * height + y) * width]! * 2 - 1;
  }
  process.stdout.write(JSON.stringify({ seconds: (performance.now() - t0) / 1000, rowsRead, peakRowsHeld, checksum }) + '\n');
  process.exit(0);
}

function writePattern(path: string, size: number): void {
  const writer = new PngBandWriter(path, { width: size, height: size, channels: 3, range: 'unit' });
  const rows = 256;
  for (let y0 = 0; y0 < size; y0 += rows) {
    const h = Math.min(rows, size - y0);
    const data = new Float32Array(3 * h * size);
    // Smooth gradients with a little seeded noise: deflate neither trivially nor hopelessly.
    let s = y0 + 1;
    for (let c = 0; c < 3; c++)
      for (let y = 0; y < h; y++)
        for (let x = 0; x < size; x++) {
          s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
          data[(c * h + y) * size + x] = (((x + (y0 + y) * (c + 1)) % 256) + (s >>> 29)) / 263;
        }
    writer.writeBand({ dims: [1, 3, h, size], data });
  }
  writer.finish();
}

function arm(kind: 'streamed' | 'whole', png: string): Record<string, unknown> {
  const r = runWithPeak(
    ['bench/png-rows.ts', '--child', kind, '--png', png, '--band', String(band), '--overlap', String(overlap)],
    `${kind} arm`,
  );
  return { arm: kind, peakMiB: r.peakMiB, ...(JSON.parse(r.stdout) as Record<string, unknown>) };
}

const uptimeBefore = execSync('uptime').toString().trim();
const dir = mkdtempSync(join(tmpdir(), 'distvae-png-rows-'));
const cells: Record<string, unknown>[] = [];
try {
  for (const size of values.sizes!.split(',').map(Number)) {
    const png = join(dir, `pattern-${size}.png`);
    writePattern(png, size);
    const arms = [arm('streamed', png)];
    if (size <= Number(values['whole-max'])) arms.push(arm('whole', png));
    const floatImageMiB = Math.round((3 * size * size * 4) / 2 ** 20);
    const bandMiB = Math.round(((band * 3 * size * 4) / 2 ** 20) * 10) / 10;
    cells.push({ size: `${size}x${size}`, pngBytes: statSync(png).size, floatImageMiB, bandMiB, band, overlap, arms });
    rmSync(png);
    process.stderr.write(`${size}: ${JSON.stringify(arms)}\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const commit = execSync('git rev-parse --short HEAD').toString().trim();
const report = {
  schema: 1,
  benchmark: 'png-rows',
  ran: {
    command: `npx tsx bench/png-rows.ts --sizes ${values.sizes} --band ${band} --overlap ${overlap} --whole-max ${values['whole-max']}`,
    commit,
    machine: 'shared 2-core VM (other helpers running: wall times are not meaningful; peak RSS is)',
    uptimeBefore,
    uptimeAfter: execSync('uptime').toString().trim(),
    what: "Peak RSS (/usr/bin/time -f %M, one process per arm) of reading an RGB 8-bit PNG as a tiled encode pulls it: 'streamed' takes bands of `band` rows overlapping by `overlap` from openImageRows (mapped to [-1, 1]); 'whole' is readImage (pngjs) of the whole file. floatImageMiB is the float32 image the encoder would otherwise hold; bandMiB one band of it.",
  },
  cells,
};
const text = JSON.stringify(report, null, 2) + '\n';
if (values.out) writeFileSync(values.out, text);
process.stdout.write(text);
