// decodeToFrames against vae.decode: a temporally chunked video decode hands on its frames chunk
// by chunk, in order, bitwise the frames of the whole decode; one chunk (or an image family)
// arrives whole and says so. A chunked decode streamed into ffmpeg (VideoFrameWriter) gives the
// frame count and size of the video written from the whole sample. Memory: from a short to a
// long video with the same chunk window the peak grows by less than the long sample's own bytes
// (each in its own process); here 33 → 257 frames of 128 × 128 grew by 23 MiB against a 48 MiB
// sample (V8 collecting freed chunks lazily), where holding the sample would add it at least twice
// (the assembled output and its 8-bit frames).

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { tileFramePlan, tileShapePlan, tileOverlapPlan, setTiling } from '../plan/planner.js';
import { seededTensor, type Tensor } from '../tensor.js';
import { VideoFrameWriter } from '../io/video.js';
import { decodeToFrames } from './engine.js';
import { loadVae } from './vae.js';
import { peakRssMiBOf, probeVideo, skipWithoutVideoTools } from '../io/testing/video-tools.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-frames-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const HUNYUAN = {
  block_out_channels: [8, 16, 16],
  layers_per_block: 1,
  norm_num_groups: 4,
  latent_channels: 4,
  spatial_compression_ratio: 4,
};

/** Frames [t0, t1) of a (B, C, F, H, W) tensor. */
function frames(t: Tensor, t0: number, t1: number): Float32Array {
  const [b, c, f, h, w] = t.dims as number[];
  const plane = h! * w!;
  const out = new Float32Array(b! * c! * (t1 - t0) * plane);
  for (let p = 0; p < b! * c!; p++) out.set(t.data.subarray((p * f! + t0) * plane, (p * f! + t1) * plane), p * (t1 - t0) * plane);
  return out;
}

test("a temporally chunked decode hands on each chunk's frames in order, bitwise the whole decode's", async () => {
  const vae = await loadVae({ family: 'hunyuan-video', config: HUNYUAN, weights: 'synthetic', seed: 5 }, { threads: 1 });
  try {
    setTiling(vae, tileShapePlan(vae, 8, 8)!);
    setTiling(vae, tileOverlapPlan(vae, 4, 4)!);
    const z = seededTensor([2, 4, 6, 3, 3], 21);
    const whole = await vae.decode(z);
    const got: [number, Tensor][] = [];
    const { dims, streamed } = await decodeToFrames(vae, z, (t0, f) => void got.push([t0, f]));
    assert.equal(streamed, true);
    assert.deepEqual(dims, whole.dims);
    assert.ok(got.length > 1, `${got.length} chunk(s)`);
    let t = 0;
    for (const [t0, f] of got) {
      assert.equal(t0, t);
      assert.deepEqual(f.data, frames(whole, t0, t0 + f.dims[2]!));
      t += f.dims[2]!;
    }
    assert.equal(t, whole.dims[2]);
    // One chunk covering every frame: the whole sample at once.
    setTiling(vae, tileFramePlan(vae, { window: 24, overlap: 0 })!);
    const one: Tensor[] = [];
    const single = await decodeToFrames(vae, z, (_, f) => void one.push(f));
    assert.equal(single.streamed, false);
    assert.equal(one.length, 1);
  } finally {
    await vae.dispose();
  }
});

test(
  'a chunked decode streamed into ffmpeg: one file per batch item with every frame; an aborted one leaves nothing',
  { skip: skipWithoutVideoTools },
  async () => {
    const vae = await loadVae({ family: 'hunyuan-video', config: HUNYUAN, weights: 'synthetic', seed: 5 }, { threads: 1 });
    try {
      setTiling(vae, tileShapePlan(vae, 8, 8)!);
      setTiling(vae, tileOverlapPlan(vae, 4, 4)!);
      const z = seededTensor([2, 4, 6, 3, 3], 21);
      const writer = new VideoFrameWriter(join(dir, 'clip.mp4'), { batch: 2, channels: 3, frames: 21, height: 12, width: 12 }, 'signed', {
        fps: 8,
      });
      let chunks = 0;
      await decodeToFrames(vae, z, async (_, f) => {
        chunks++;
        await writer.writeFrames(f);
      });
      const written = await writer.finish();
      assert.ok(chunks > 1);
      assert.deepEqual(written, [join(dir, 'clip-0.mp4'), join(dir, 'clip-1.mp4')]);
      for (const file of written) {
        const s = probeVideo(file, ['nb_read_frames', 'width', 'height']);
        assert.deepEqual([Number(s['nb_read_frames']), s['width'], s['height']], [21, 12, 12]);
      }
      const cut = new VideoFrameWriter(join(dir, 'cut.webm'), { batch: 1, channels: 3, frames: 21, height: 12, width: 12 }, 'signed');
      await cut.writeFrames({ dims: [1, 3, 4, 12, 12], data: new Float32Array(3 * 4 * 144) });
      await assert.rejects(cut.finish(), { code: 'RUNTIME_FAILED', message: /after 4 of 21 frames/ });
      await assert.rejects(
        new VideoFrameWriter(join(dir, 'odd.mp4'), { batch: 1, channels: 3, frames: 2, height: 12, width: 12 }, 'signed').writeFrames({
          dims: [1, 3, 3, 12, 12],
          data: new Float32Array(3 * 3 * 144),
        }),
        { code: 'TENSOR_INVALID' },
      );
      assert.deepEqual(
        readdirSync(dir).filter((f) => f !== 'clip-0.mp4' && f !== 'clip-1.mp4'),
        [],
      );
    } finally {
      await vae.dispose();
    }
  },
);

const INDEX = fileURLToPath(new URL('../index.ts', import.meta.url));
const DECODE_ENTRY = fileURLToPath(new URL('../entries/decode.ts', import.meta.url));
const PLAN_ENTRY = fileURLToPath(new URL('../entries/plan.ts', import.meta.url));
const VIDEO = fileURLToPath(new URL('../io/video.ts', import.meta.url));

/** Peak RSS (MiB) of a process streaming a 128 × 128 HunyuanVideo decode of `latentFrames` latent frames into ffmpeg. */
function videoPeak(latentFrames: number, out: string): number {
  const script = `
    import { loadVae, seededTensor, setTiling } from ${JSON.stringify(INDEX)};
    import { decodeToFrames } from ${JSON.stringify(DECODE_ENTRY)};
    import { tileShapePlan } from ${JSON.stringify(PLAN_ENTRY)};
    import { VideoFrameWriter } from ${JSON.stringify(VIDEO)};
    const vae = await loadVae({ family: 'hunyuan-video', config: ${JSON.stringify(HUNYUAN)}, weights: 'synthetic', seed: 1 }, { threads: 1 });
    setTiling(vae, tileShapePlan(vae, 128, 128));
    const writer = new VideoFrameWriter(${JSON.stringify(out)}, { batch: 1, channels: 3, frames: ${(latentFrames - 1) * 4 + 1}, height: 128, width: 128 }, 'signed');
    const { streamed } = await decodeToFrames(vae, seededTensor([1, 4, ${latentFrames}, 32, 32], 2), (_, f) => writer.writeFrames(f));
    await writer.finish();
    await vae.dispose();
    if (!streamed) throw new Error('not streamed');`;
  return peakRssMiBOf(script);
}

test(
  'from 33 to 257 frames a video streamed into ffmpeg grows by less than the long sample (48 MiB)',
  {
    skip: skipWithoutVideoTools || (process.platform !== 'linux' && 'reads /proc/self/status'),
  },
  () => {
    const short = videoPeak(9, join(dir, 'short.mp4'));
    const long = videoPeak(65, join(dir, 'long.mp4'));
    assert.equal(probeVideo(join(dir, 'long.mp4'), ['nb_read_frames'])['nb_read_frames'], '257');
    assert.ok(long - short < 48, `peak ${long.toFixed(0)} MiB at 257 frames against ${short.toFixed(0)} MiB at 33`);
  },
);
