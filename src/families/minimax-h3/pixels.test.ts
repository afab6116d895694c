// MiniMax-H3's pixels: its decoder writes ImageNet-normalised RGB, and the family's declared
// sample range makes every image path (PNG whole and band by band, the page's canvas, the
// encoder's input) what the MiniMax-H3 pipeline does. Checked against diffusers' own conversion
// (testing/goldens/README.md: `pixels-*.npy`, made with diffusers' VideoProcessor and the
// pipeline's constants) and, end to end, a decode to PNG against the pipeline's post-processing of
// the same decode's .npy, written out again here in float32 as torch and numpy compute it.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PNG } from 'pngjs';
import { writeSamplePng } from '../../io/image.js';
import { readNpy, writeNpy } from '../../io/npy.js';
import { PngBandWriter } from '../../io/png-stream.js';
import { openImageRows } from '../../io/row-source.js';
import { imageToInput } from '../../io/sample-range.js';
import { decodeFiles } from '../../session/decode-files.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { rgbaOf } from '../../web/canvas.js';
import { resolveFamilyConfig } from '../registry.js';
import { miniMaxH3 } from './spec.js';
import { MINIMAX_H3_TINY } from './testing/configs.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-minimax-pixels-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const golden = (name: string) => readNpy(fileURLToPath(new URL(`./testing/goldens/${name}.npy`, import.meta.url)));
const range = miniMaxH3.sampleRange;

/** RGB bytes of an 8-bit PNG file, (H, W, 3) row-major. */
function pngRgb(path: string): number[] {
  const png = PNG.sync.read(readFileSync(path));
  return [...png.data].filter((_, i) => i % 4 !== 3);
}

/** Frame `f` of a (1, C, F, H, W) tensor as (1, C, H, W). */
function frame(t: Tensor, f: number): Tensor {
  const [, c, n, h, w] = t.dims as number[];
  const data = new Float32Array(c! * h! * w!);
  for (let ch = 0; ch < c!; ch++) data.set(t.data.subarray((ch * n! + f) * h! * w!, (ch * n! + f + 1) * h! * w!), ch * h! * w!);
  return { dims: [1, c!, h!, w!], data };
}

/**
 * The MiniMax-H3 pipeline's post-processing (decoders.py, then VideoProcessor with
 * do_normalize=False and numpy_to_pil), frame `f` as (H, W, 3) bytes: float32
 * `(x · std + mean).clamp(0, 1)`, float32 `· 255`, numpy's round (half to even), uint8.
 */
function pipelineBytes(sample: Tensor, f: number, mean: readonly number[], std: readonly number[]): number[] {
  const [, c, n, h, w] = sample.dims as number[];
  const x = new Float32Array(1);
  const out: number[] = [];
  for (let p = 0; p < h! * w!; p++)
    for (let ch = 0; ch < c!; ch++) {
      x[0] = sample.data[(ch * n! + f) * h! * w! + p]!;
      x[0] = x[0] * Math.fround(std[ch]!);
      x[0] = x[0] + Math.fround(mean[ch]!);
      x[0] = Math.min(1, Math.max(0, x[0]));
      x[0] = x[0] * 255;
      const r = Math.round(x[0]);
      out.push(r - x[0] === 0.5 && r % 2 === 1 ? r - 1 : r);
    }
  return out;
}

test('minimax-h3 declares ImageNet normalisation: PNG (whole and band by band) and canvas bytes equal diffusers VideoProcessor on the pipeline’s values', () => {
  const sample = golden('pixels-sample'); // (1, 3, 3, 8, 10), ImageNet-normalised values past [0, 1] both ways
  const pil = golden('pixels-pil'); // (3, 8, 10, 3) uint8: frames as the pipeline's PIL images hold them
  const frameBytes = (f: number) => [...pil.data.subarray(f * 240, (f + 1) * 240)];
  const files = writeSamplePng(join(dir, 'golden.png'), sample, range);
  assert.equal(files.length, 3);
  files.forEach((file, f) => assert.deepEqual(pngRgb(file), frameBytes(f), `frame ${f}`));
  // Band by band, as a decode streams rows: two bands of frame 1.
  const one = frame(sample, 1);
  const banded = join(dir, 'banded.png');
  const writer = new PngBandWriter(banded, { width: 10, height: 8, channels: 3, range });
  for (const [y0, y1] of [
    [0, 3],
    [3, 8],
  ] as const) {
    const data = new Float32Array(3 * (y1 - y0) * 10);
    for (let c = 0; c < 3; c++) data.set(one.data.subarray((c * 8 + y0) * 10, (c * 8 + y1) * 10), c * (y1 - y0) * 10);
    writer.writeBand({ dims: [1, 3, y1 - y0, 10], data });
  }
  writer.finish();
  assert.deepEqual(pngRgb(banded), frameBytes(1));
  // The page's canvas.
  const { data } = rgbaOf(frame(sample, 2), range);
  assert.deepEqual(
    [...data].filter((_, i) => i % 4 !== 3),
    frameBytes(2),
  );
});

test('minimax-h3 encoder input: every byte maps to (v/255 − mean)/std as the pipeline’s encode step computes it, in memory and from a streamed PNG', () => {
  const expected = golden('pixels-input'); // (1, 3, 1, 1, 256) float32
  const bytes = { dims: [1, 3, 1, 256], data: Float32Array.from({ length: 768 }, (_, i) => Math.fround((i % 256) / 255)) };
  assert.deepEqual([...imageToInput(bytes, range).data], [...expected.data]);
  // A PNG whose row holds every byte value on each channel, read band by band.
  const png = new PNG({ width: 256, height: 1 });
  for (let i = 0; i < 256; i++) png.data.set([i, i, i, 255], 4 * i);
  const path = join(dir, 'ramp.png');
  writeFileSync(path, PNG.sync.write(png));
  const rows = openImageRows(path, range);
  try {
    assert.deepEqual([...rows.rows(0, 1).data], [...expected.data]);
  } finally {
    rows.close();
  }
});

test('a minimax-h3 decode to PNG equals the pipeline’s post-processing of the same decode’s .npy, and not the [-1, 1] mapping', async () => {
  const z = join(dir, 'z.npy');
  writeNpy(z, seededTensor([1, 24, 3, 6, 9], 9));
  const vae = { config: MINIMAX_H3_TINY, weights: 'synthetic' as const, seed: 3 };
  await decodeFiles({ vae, latents: z, out: join(dir, 'video.npy'), threads: 1 });
  const [decoded] = await decodeFiles({ vae, latents: z, out: join(dir, 'video.png'), threads: 1 });
  const sample = readNpy(join(dir, 'video.npy'));
  const frames = sample.dims[2]!;
  assert.equal(frames, 9);
  assert.equal(decoded!.report.files.length, frames);
  let differsFromSigned = 0;
  let values = 0;
  decoded!.report.files.forEach((file, f) => {
    const ours = pngRgb(file);
    assert.deepEqual(ours, pipelineBytes(sample, f, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), `frame ${f}`);
    // The test can fail: diffusers' usual x/2 + 0.5 (what the family declared before) gives other bytes.
    const signed = pipelineBytes(sample, f, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]);
    differsFromSigned += ours.filter((v, i) => v !== signed[i]).length;
    values += ours.length;
  });
  assert.ok(differsFromSigned > values / 2, `${differsFromSigned} of ${values} bytes differ from the [-1, 1] mapping`);
});

test('a minimax-h3 config whose out_channels the ImageNet normalisation does not cover is refused with the config', () => {
  assert.throws(() => resolveFamilyConfig(miniMaxH3, { ...MINIMAX_H3_TINY, out_channels: 4 }), {
    code: 'CONFIG_INVALID',
    message: /out_channels = 4, but the family's pixel normalisation covers 3 channels/,
  });
});
