// The band-by-band .npy writer against writeNpy (byte-identical files, batches, F16, bands of
// any heights), its refusals, `decodeToBands` into it against `vae.decode` + writeNpy, and
// memory: from a short to a tall streamed decode with the same window the peak grows by less
// than the tall sample's own bytes, so the sample is never held (each in its own process).
// Holding it (NPY_STREAM_WHOLE=1 runs that instead, to see the test fail) grew by 41 MiB here,
// streaming by 14 MiB — V8 collecting the freed bands lazily: with a gc after each band the tall
// peak stays flat from its first band on.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { decodeToBands } from '../decode/engine.js';
import { seededTensor, type Tensor } from '../tensor.js';
import { encodeNpy, writeNpy } from './npy.js';
import { NpyBandWriter } from './npy-stream.js';
import { withTinyTiledVae } from './testing/tiny-tiled-vae.js';
import { peakRssMiBOf } from './testing/video-tools.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-npystream-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function rows(t: Tensor, y0: number, y1: number): Tensor {
  const [h, w] = t.dims.slice(-2) as [number, number];
  const planes = t.data.length / (h * w);
  const out = new Float32Array(planes * (y1 - y0) * w);
  for (let p = 0; p < planes; p++) out.set(t.data.subarray((p * h + y0) * w, (p * h + y1) * w), p * (y1 - y0) * w);
  return { dims: [...t.dims.slice(0, -2), y1 - y0, w], data: out };
}

test('a streamed .npy is byte for byte what writeNpy writes, for batches, F16 and uneven bands', () => {
  for (const [dims, dtype] of [
    [[1, 3, 13, 7], 'F32'],
    [[2, 4, 9, 5], 'F32'],
    [[1, 3, 13, 7], 'F16'],
    [[6, 11], 'F32'],
  ] as const) {
    const sample = seededTensor([...dims], dims.length + dims[0]!);
    const path = join(dir, `s-${dims.join('x')}-${dtype}.npy`);
    const writer = new NpyBandWriter(path, { dims, dtype });
    const height = dims.at(-2)!;
    for (const [y0, y1] of [
      [0, 4],
      [4, 5],
      [5, height],
    ] as const)
      writer.writeBand(rows(sample, y0, y1));
    writer.finish();
    assert.deepEqual(readFileSync(path), Buffer.from(encodeNpy(sample, { dtype })), `${dims.join('x')} ${dtype}`);
  }
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('partial')),
    [],
  );
});

test('an unfinished, overlong or mismatched .npy leaves nothing at its path', () => {
  const sample = seededTensor([1, 3, 6, 4], 1);
  const cut = new NpyBandWriter(join(dir, 'cut.npy'), { dims: [1, 3, 6, 4] });
  cut.writeBand(rows(sample, 0, 2));
  assert.throws(() => cut.finish(), { code: 'RUNTIME_FAILED', message: /after 2 of 6 rows/ });
  const long = new NpyBandWriter(join(dir, 'long.npy'), { dims: [1, 3, 4, 4] });
  assert.throws(() => long.writeBand(rows(sample, 0, 6)), { code: 'TENSOR_INVALID', message: /at row 0/ });
  const wide = new NpyBandWriter(join(dir, 'wide.npy'), { dims: [1, 3, 6, 5] });
  assert.throws(() => wide.writeBand(rows(sample, 0, 2)), { code: 'TENSOR_INVALID' });
  assert.throws(() => new NpyBandWriter(join(dir, 'bad.npy'), { dims: [4] }), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => new NpyBandWriter(join(dir, 'bad.npy'), { dims: [1, 0, 4] }), { code: 'INVALID_ARGUMENT' });
  assert.deepEqual(
    readdirSync(dir).filter((f) => /cut|long|wide|bad/.test(f)),
    [],
  );
});

test('decodeToBands into a streamed .npy writes what writeNpy writes for vae.decode', async () => {
  await withTinyTiledVae(4, async (vae) => {
    const z = seededTensor([2, 4, 12, 5], 3);
    const whole = join(dir, 'whole.npy');
    writeNpy(whole, await vae.decode(z));
    const streamed = join(dir, 'streamed.npy');
    const writer = new NpyBandWriter(streamed, { dims: [2, 3, 24, 10] });
    let bands = 0;
    const { streamed: inBands } = await decodeToBands(vae, z, (_, band) => {
      bands++;
      writer.writeBand(band);
    });
    writer.finish();
    assert.equal(inBands, true);
    assert.ok(bands > 1);
    assert.deepEqual(readFileSync(streamed), readFileSync(whole));
  });
});

const INDEX = fileURLToPath(new URL('../index.ts', import.meta.url));
const DECODE_ENTRY = fileURLToPath(new URL('../entries/decode.ts', import.meta.url));
const PLAN_ENTRY = fileURLToPath(new URL('../entries/plan.ts', import.meta.url));
const WRITER = fileURLToPath(new URL('./npy-stream.ts', import.meta.url));

/** Peak RSS (MiB) of a process that decodes a latent of `height` rows to a streamed .npy. */
function streamedPeak(height: number, out: string): number {
  const script = `
    import { loadVae, seededTensor, setTiling } from ${JSON.stringify(INDEX)};
    import { decodeToBands } from ${JSON.stringify(DECODE_ENTRY)};
    import { tileShapePlan } from ${JSON.stringify(PLAN_ENTRY)};
    import { NpyBandWriter } from ${JSON.stringify(WRITER)};
    const vae = await loadVae({ config: { _class_name: 'AutoencoderKL', block_out_channels: [8, 8, 8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 }, weights: 'synthetic', seed: 1 }, { threads: 1 });
    setTiling(vae, tileShapePlan(vae, 256, 256));
    const z = seededTensor([1, 4, ${height / 8}, 64], 2);
    const whole = ${JSON.stringify(process.env['NPY_STREAM_WHOLE'] === '1')};
    const writer = new NpyBandWriter(${JSON.stringify(out)}, { dims: [1, 3, ${height}, 512] });
    if (whole) writer.writeBand(await vae.decode(z)); // only to check that the test can fail
    else await decodeToBands(vae, z, (_, band) => writer.writeBand(band));
    writer.finish();
    await vae.dispose();`;
  return peakRssMiBOf(script);
}

test(
  'from 1024 x 512 to 12288 x 512 a streamed .npy decode grows by less than half the tall sample (72 MiB)',
  { skip: process.platform !== 'linux' && 'reads /proc/self/status' },
  () => {
    const short = streamedPeak(1024, join(dir, 'short.npy'));
    const tall = streamedPeak(12288, join(dir, 'tall.npy'));
    assert.equal(readFileSync(join(dir, 'tall.npy')).length, 128 + 3 * 12288 * 512 * 4);
    // Held whole, the tall sample alone is 72 MiB; a margin of half of it keeps the allocator's noise (±15 MiB) out.
    assert.ok(tall - short < 36, `peak ${tall.toFixed(0)} MiB at 12288 x 512 against ${short.toFixed(0)} MiB at 1024 x 512`);
  },
);
