import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openVideoInput } from './video-input.js';
import { skipWithoutVideoTools } from './testing/video-tools.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-video-in-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** ffmpeg's own decode of the whole file to rgb24 (the independent path): frames × H × W × 3 bytes. */
function wholeRgb(path: string): Buffer {
  const r = spawnSync('ffmpeg', ['-v', 'error', '-i', path, '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], { maxBuffer: 1 << 26 });
  assert.equal(r.status, 0, String(r.stderr));
  return r.stdout;
}

for (const ext of ['mp4', 'webm']) {
  test(
    `a ${ext} is read in chunks of frames, each equal to ffmpeg's whole decode, holding one chunk`,
    { skip: skipWithoutVideoTools },
    async () => {
      const path = join(dir, `clip.${ext}`);
      const made = spawnSync('ffmpeg', [
        '-v',
        'error',
        '-f',
        'lavfi',
        '-i',
        'testsrc=size=24x16:rate=8:duration=1.375',
        '-pix_fmt',
        'yuv420p',
        path,
      ]);
      assert.equal(made.status, 0, String(made.stderr));
      const rgb = wholeRgb(path);
      const frames = rgb.length / (24 * 16 * 3);
      assert.equal(frames, 11);
      const video = openVideoInput(path, 'signed');
      assert.deepEqual([video.width, video.height], [24, 16]);
      const sizes: number[] = [];
      let k = 0;
      for await (const chunk of video.chunks(4)) {
        const f = chunk.dims[2]!;
        sizes.push(f);
        assert.deepEqual(chunk.dims, [1, 3, f, 16, 24]);
        for (let j = 0; j < f; j++, k++)
          for (let i = 0; i < 16 * 24; i++)
            for (let c = 0; c < 3; c++)
              // torch's way: the byte becomes float32 b/255 first, then diffusers' 2x − 1 in float32.
              assert.equal(chunk.data[(c * f + j) * 384 + i], Math.fround(2 * Math.fround(rgb[(k * 384 + i) * 3 + c]! / 255) - 1));
      }
      assert.deepEqual(sizes, [4, 4, 3]);
      assert.equal(video.peakFramesHeld, 4);
    },
  );
}

test('a file with no video stream is refused by name; a chunk size out of range too', { skip: skipWithoutVideoTools }, async () => {
  const notVideo = join(dir, 'x.mp4');
  spawnSync('sh', ['-c', `echo nope > ${notVideo}`]);
  assert.throws(() => openVideoInput(notVideo, 'unit'), { code: 'FILE_INVALID', message: /x\.mp4: ffprobe cannot read a video stream/ });
  const path = join(dir, 'tiny.mp4');
  spawnSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=16x16:rate=4:duration=0.5', '-pix_fmt', 'yuv420p', path]);
  await assert.rejects(openVideoInput(path, 'unit').chunks(0).next(), { code: 'INVALID_ARGUMENT' });
});
