// Temporal chunk assembly against a naive transcription of diffusers' _temporal_tiled_decode
// (HunyuanVideo drops the first decoded frame of later chunks, LTX-2 the last).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Tensor } from '../tensor.js';
import { TemporalAssembler } from './temporal.js';

const B = 1;
const C = 2;
const H = 3;
const W = 2;

/** A chunk's stand-in decode: (B, C, f, H, W) values that depend on the chunk and frame. */
function chunkOutput(chunk: number, frames: number): Tensor {
  const data = new Float32Array(B * C * frames * H * W);
  for (let i = 0; i < data.length; i++) data[i] = Math.sin(0.37 * i + 1.3 * chunk) + chunk;
  return { dims: [B, C, frames, H, W], data };
}

function frameOf(t: Tensor, p: number, f: number): Float32Array {
  const frames = t.dims[2]!;
  return t.data.slice((p * frames + f) * H * W, (p * frames + f + 1) * H * W);
}

/** Naive loop: drop, blend_t in place with the previous (blended) chunk, crop, concat, slice. */
function naive(chunks: Tensor[], blend: number, keep: number, drop: 'first' | 'last', outFrames: number): Float32Array[][] {
  const row: Float32Array[][][] = chunks.map((t, i) => {
    const frames = t.dims[2]!;
    const planes = [];
    for (let p = 0; p < B * C; p++) {
      const fs = [];
      for (let f = 0; f < frames; f++) fs.push(frameOf(t, p, f));
      if (i > 0) drop === 'first' ? fs.shift() : fs.pop();
      planes.push(fs);
    }
    return planes;
  });
  const out: Float32Array[][] = Array.from({ length: B * C }, () => []);
  row.forEach((tile, i) => {
    for (let p = 0; p < B * C; p++) {
      const b = tile[p]!;
      if (i > 0) {
        const a = row[i - 1]![p]!;
        const e = Math.min(a.length, b.length, blend);
        for (let x = 0; x < e; x++) {
          const fa = a[a.length - e + x]!;
          const fb = b[x]!;
          for (let k = 0; k < fb.length; k++) fb[k] = fa[k]! * (1 - x / e) + fb[k]! * (x / e);
        }
      }
      out[p]!.push(...b.slice(0, i === 0 ? keep + 1 : keep));
    }
  });
  return out.map((frames) => frames.slice(0, outFrames));
}

for (const [name, drop, rt, latentFrames, window, overlap] of [
  ['hunyuan-video: 16/4 frames, 9 latent frames', 'first', 4, 9, 16, 4],
  ['ltx2: 16/8 frames, 6 latent frames', 'last', 8, 6, 16, 8],
  ['large overlap, short last chunk', 'first', 2, 7, 6, 4],
] as const) {
  test(`temporal assembly matches the naive loop: ${name}`, () => {
    const windowLatent = window / rt;
    const stride = (window - overlap) / rt;
    const starts: number[] = [];
    for (let s = 0; s < latentFrames; s += stride) starts.push(s);
    const outFrames = (latentFrames - 1) * rt + 1;
    // A chunk of n latent frames decodes to (n − 1)·rt + 1 frames (causal decoders).
    const chunks = starts.map((s, i) => chunkOutput(i, (Math.min(s + windowLatent + 1, latentFrames) - s - 1) * rt + 1));
    const expected = naive(chunks, overlap, window - overlap, drop, outFrames);
    const assembler = new TemporalAssembler(
      { chunks: chunks.length, blend: overlap, keep: window - overlap, dropFrame: drop, outFrames },
      { batch: B, channels: C, height: H, width: W },
    );
    chunks.forEach((c, i) => assembler.add(i, c));
    assert.ok(assembler.complete);
    assert.deepEqual(assembler.outputDims, [B, C, outFrames, H, W]);
    for (let p = 0; p < B * C; p++) {
      assert.equal(expected[p]!.length, outFrames);
      expected[p]!.forEach((frame, f) => {
        assert.deepEqual(
          assembler.output.slice((p * outFrames + f) * H * W, (p * outFrames + f + 1) * H * W),
          frame,
          `plane ${p} frame ${f}`,
        );
      });
    }
  });
}

test('temporal assembly refuses chunks out of order or of the wrong shape', () => {
  const assembler = new TemporalAssembler(
    { chunks: 2, blend: 4, keep: 12, dropFrame: 'first', outFrames: 29 },
    { batch: B, channels: C, height: H, width: W },
  );
  assert.throws(() => assembler.add(1, chunkOutput(1, 17)), /before chunk 0/);
  assert.throws(() => assembler.add(0, { dims: [B, C, 17, H + 1, W], data: new Float32Array(B * C * 17 * (H + 1) * W) }), /expected/);
});
