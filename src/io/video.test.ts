// Video output: the missing-ffmpeg error (PATH emptied for the call) and, where the system has
// ffmpeg and ffprobe, tiny encodes whose frame count, size and first-frame colour ffprobe /
// ffmpeg confirm. CI does not install ffmpeg; those tests then skip and say why.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DistVaeError } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { stallingFfmpeg } from './testing/stalling-ffmpeg.js';
import { checkFfmpeg, writeSampleVideo } from './video.js';
import { probeVideo, skipWithoutVideoTools } from './testing/video-tools.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-video-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** (B, 3, F, H, W) in [−1, 1]: frame f of batch item b is one flat colour. */
function flatFrames(
  batch: number,
  frames: number,
  height: number,
  width: number,
  colour: (b: number, f: number) => [number, number, number],
): Tensor {
  const plane = height * width;
  const data = new Float32Array(batch * 3 * frames * plane);
  for (let b = 0; b < batch; b++) {
    for (let f = 0; f < frames; f++) {
      const rgb = colour(b, f);
      for (let c = 0; c < 3; c++) data.fill(rgb[c]!, ((b * 3 + c) * frames + f) * plane, ((b * 3 + c) * frames + f + 1) * plane);
    }
  }
  return { dims: [batch, 3, frames, height, width], data };
}

function probe(path: string): { frames: number; width: number; height: number } {
  const s = probeVideo(path, ['nb_read_frames', 'width', 'height']);
  return { frames: Number(s['nb_read_frames']), width: Number(s['width']), height: Number(s['height']) };
}

test('without ffmpeg on PATH, video output fails with the install hint before and while writing', async () => {
  const saved = process.env['PATH'];
  process.env['PATH'] = join(dir, 'no-such-bin');
  try {
    const isMissing = (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'UNSUPPORTED' &&
      e.reasons[0]?.code === 'FFMPEG_MISSING' &&
      /apt-get install ffmpeg/.test(e.message);
    assert.throws(() => checkFfmpeg(), isMissing);
    await assert.rejects(
      writeSampleVideo(
        join(dir, 'x.mp4'),
        flatFrames(1, 2, 4, 4, () => [0, 0, 0]),
        'signed',
      ),
      isMissing,
    );
  } finally {
    process.env['PATH'] = saved;
  }
});

test('an abort kills a running ffmpeg and removes its partial file', async () => {
  const fake = stallingFfmpeg(dir);
  const out = join(dir, 'aborted');
  mkdirSync(out);
  const controller = new AbortController();
  const writing = writeSampleVideo(
    join(out, 'v.mp4'),
    flatFrames(1, 4, 64, 64, () => [0, 0, 0]),
    'signed',
    { ffmpeg: join(fake.bin, 'ffmpeg'), signal: controller.signal },
  );
  while (fake.pid() === null) await new Promise((done) => setTimeout(done, 20));
  assert.equal(readdirSync(out).length, 1, 'ffmpeg is writing its temporary file');
  controller.abort(new Error('stop'));
  await assert.rejects(writing, { code: 'ABORTED', message: /video encoding aborted: stop/ });
  assert.deepEqual(readdirSync(out), [], 'nothing left: no output, no partial file');
  assert.throws(() => process.kill(fake.pid()!, 0), 'ffmpeg is gone');
  await assert.rejects(
    writeSampleVideo(
      join(out, 'v.mp4'),
      flatFrames(1, 2, 4, 4, () => [0, 0, 0]),
      'signed',
      { signal: controller.signal },
    ),
    { code: 'ABORTED' },
  );
});

test('refuses a non-video path, a 4-D sample and a non-positive fps', async () => {
  const sample = flatFrames(1, 2, 4, 4, () => [0, 0, 0]);
  await assert.rejects(writeSampleVideo(join(dir, 'x.avi'), sample, 'signed'), /\.mp4 or \.webm/);
  await assert.rejects(
    writeSampleVideo(join(dir, 'x.mp4'), { dims: [1, 3, 4, 4], data: new Float32Array(48) }, 'signed'),
    /\(B, C, F, H, W\)/,
  );
  await assert.rejects(writeSampleVideo(join(dir, 'x.mp4'), sample, 'signed', { fps: 0 }), /fps/);
});

test('an MP4 of 9 frames: ffprobe counts 9 frames of the sample size', { skip: skipWithoutVideoTools }, async () => {
  const path = join(dir, 'clip.mp4');
  const written = await writeSampleVideo(
    path,
    flatFrames(1, 9, 16, 24, (_, f) => [f / 8 - 0.5, 0, 0]),
    'signed',
    { fps: 24 },
  );
  assert.deepEqual(written, [path]);
  assert.deepEqual(probe(path), { frames: 9, width: 24, height: 16 });
});

test('a WebM per batch item, odd sizes padded to even; the first frame keeps its colour', { skip: skipWithoutVideoTools }, async () => {
  const path = join(dir, 'clip.webm');
  // Signed range: −1 → 0, +1 → 255. Item 0 is red, item 1 blue.
  const written = await writeSampleVideo(
    path,
    flatFrames(2, 5, 15, 17, (b) => (b === 0 ? [1, -1, -1] : [-1, -1, 1])),
    'signed',
    { fps: 8 },
  );
  assert.deepEqual(written, [join(dir, 'clip-0.webm'), join(dir, 'clip-1.webm')]);
  for (const [b, file] of written.entries()) {
    assert.deepEqual(probe(file), { frames: 5, width: 18, height: 16 });
    const frame = spawnSync('ffmpeg', ['-v', 'error', '-i', file, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'], {
      maxBuffer: 1 << 20,
    });
    assert.equal(frame.status, 0, String(frame.stderr));
    // Centre pixel, away from the padded border and chroma edges.
    const at = (8 * 18 + 8) * 3;
    const [r, g, bl] = [frame.stdout[at]!, frame.stdout[at + 1]!, frame.stdout[at + 2]!];
    const expected = b === 0 ? [255, 0, 0] : [0, 0, 255];
    [r, g, bl].forEach((v, k) => assert.ok(Math.abs(v - expected[k]!) <= 12, `item ${b} channel ${k}: ${v} vs ${expected[k]}`));
  }
});
