// `distvae encode --video` end to end on a tiny synthetic Wan 2.1 encoder: an mp4 read through
// ffmpeg chunk by chunk equals the library's encode of ffmpeg's frames (pixels mapped to [−1, 1]);
// a .npy video's tiles dealt to 2 local thread ranks are bitwise the one-rank tiled encode; a
// Qwen-Image PNG is one frame; frame counts off the loop and videos given to image families are
// refused before any work, with exit code 2.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PNG } from 'pngjs';
import { loadEncoder } from '../../encode/encoder.js';
import { readImage } from '../../io/image.js';
import { readLatents } from '../../io/latents.js';
import { writeNpy } from '../../io/npy.js';
import { skipWithoutVideoTools } from '../../io/testing/video-tools.js';
import { openVideoInput } from '../../io/video-input.js';
import { setTiling } from '../../plan/planner.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { runCli } from '../main.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-encode-video-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Wan 2.1, r 2, rt 2, 4 latent channels. */
const WAN = {
  _class_name: 'AutoencoderKLWan',
  base_dim: 4,
  dim_mult: [1, 2],
  num_res_blocks: 1,
  temperal_downsample: [true],
  z_dim: 4,
  scale_factor_spatial: 2,
  scale_factor_temporal: 2,
};
const QWEN = {
  _class_name: 'AutoencoderKLQwenImage',
  base_dim: 4,
  dim_mult: [1, 2],
  num_res_blocks: 1,
  temperal_downsample: [true],
  z_dim: 4,
};

function writeConfig(name: string, config: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config));
  return path;
}
const wanConfig = writeConfig('wan.json', WAN);

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['encode', '--threads', '1', ...args], {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    stderrIsTTY: false,
  });
  return { code, stdout, stderr };
}

const synthetic = (family: string, config: string) => ['--synthetic', '--family', family, '--config', config, '--seed', '4'];

async function libraryEncode(
  config: Readonly<Record<string, unknown>>,
  input: Tensor,
  tiling?: { window: number; overlap: number },
): Promise<Tensor> {
  const encoder = await loadEncoder({ config, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    if (tiling)
      setTiling(encoder, {
        window: { height: tiling.window, width: tiling.window },
        overlap: { height: tiling.overlap, width: tiling.overlap },
      });
    return await encoder.encode(input);
  } finally {
    await encoder.dispose();
  }
}

test(
  'encode --video reads an mp4 through ffmpeg and writes the latents the library computes',
  { skip: skipWithoutVideoTools },
  async () => {
    const clip = join(dir, 'clip.mp4');
    // 9 frames (rate 8 for 1.125 s) of 24 × 16: the first frame, then two chunks of 4.
    const made = spawnSync('ffmpeg', [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=24x16:rate=8:duration=1.125',
      '-pix_fmt',
      'yuv420p',
      clip,
    ]);
    assert.equal(made.status, 0, String(made.stderr));
    const out = join(dir, 'z-video.npy');
    const run = await cli(...synthetic('wan', wanConfig), '--video', clip, '--out', out, '--json');
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout);
    assert.deepEqual(report.shape, [1, 4, 5, 8, 12]);
    assert.equal(report.frames, 9);
    assert.equal(report.reading, 'chunks');
    const chunks: Tensor[] = [];
    for await (const c of openVideoInput(clip, 'signed').chunks(9)) chunks.push(c);
    assert.equal(chunks.length, 1);
    assertSameBits(await readLatents(out), await libraryEncode(WAN, chunks[0]!), 'cli vs library');
  },
);

test('a .npy video tiled on 2 thread ranks is bitwise the one-rank tiled encode', async () => {
  const video = seededTensor([1, 3, 5, 40, 24], 7);
  const input = join(dir, 'video.npy');
  writeNpy(input, video);
  const out = join(dir, 'z-ranks.npy');
  const run = await cli(
    ...synthetic('wan', wanConfig),
    '--video',
    input,
    '--out',
    out,
    '--window',
    '16x16',
    '--overlap',
    '4x4',
    '--ranks',
    '2',
    '--json',
  );
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  assert.equal(report.tiles, 8);
  assert.ok(
    report.ranks.every((r: { tiles: number[] }) => r.tiles.length > 0),
    'both ranks encoded tiles',
  );
  assertSameBits(await readLatents(out), await libraryEncode(WAN, video, { window: 16, overlap: 4 }), '2 ranks vs one-rank tiled');
});

test('a PNG given to Qwen-Image is one frame (B, C, 1, H, W)', async () => {
  const png = new PNG({ width: 12, height: 8 });
  for (let i = 0; i < 96; i++) png.data.set([(i * 7) % 256, (i * 13) % 256, (i * 29) % 256, 255], i * 4);
  const image = join(dir, 'still.png');
  writeFileSync(image, PNG.sync.write(png));
  const out = join(dir, 'z-qwen.npy');
  const run = await cli(...synthetic('qwen-image', writeConfig('qwen.json', QWEN)), '--image', image, '--out', out, '--json');
  assert.equal(run.code, 0, run.stderr);
  assert.equal(JSON.parse(run.stdout).frames, 1);
  const pixels = readImage(image);
  const expected = await libraryEncode(QWEN, { dims: [1, 3, 1, 8, 12], data: pixels.data.map((v) => v * 2 - 1) });
  const latents = await readLatents(out);
  assert.deepEqual(latents.dims, [1, 4, 1, 4, 6]);
  for (let i = 0; i < latents.data.length; i++) assert.ok(Math.abs(latents.data[i]! - expected.data[i]!) <= 1e-6, `value ${i}`);
});

test('encode --video refuses frame counts off 1 + 4k and image families, before any work (exit 2)', async () => {
  const input = join(dir, 'seven.npy');
  writeNpy(input, seededTensor([1, 3, 7, 8, 8], 1));
  const off = await cli(...synthetic('wan', wanConfig), '--video', input, '--out', join(dir, 'z7.npy'));
  assert.equal(off.code, 2, off.stderr);
  assert.match(off.stderr, /7 frames is not of the form 1 \+ 4·k \(nearest: 5 or 9\)/);
  const tae = await cli('--synthetic', '--family', 'tae', '--video', input, '--out', join(dir, 'zt.npy'));
  assert.equal(tae.code, 2, tae.stderr);
  assert.match(tae.stderr, /--video: the tae encoder takes images/);
  const both = await cli(...synthetic('wan', wanConfig), '--video', input, '--image', input, '--out', join(dir, 'zb.npy'));
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--image and --video cannot be combined/);
});
