// `distvae encode`'s frame-tiling flags (decode's own: --frame-window, --frame-overlap,
// --no-frame-tiling) on tiny synthetic encoders that diffusers tiles over time: HunyuanVideo's
// framewise encode (on by default, 16 frames overlapping 4) turned off and resized, LTX-2's (off by
// default) turned on — each bitwise the library's encode with the same frame plan, and different
// from the whole encode (so a flag that is dropped fails). Families whose encoders never cut time
// refuse a frame plan with exit 2 naming the flag; a video, or a 5-D .npy image, given to an image
// family is refused before the encoder's weights are read. `--strategy shard` row-shards
// HunyuanVideo's video encoder, whole and per temporal chunk; MiniMax-H3 (a video encoder with a
// graph) encodes without the memory model reading it, and refuses --strategy shard naming why.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { HUNYUAN_VIDEO_15_TINY } from '../../families/hunyuan-video-15/testing/configs.js';
import { LTX2_DIFREF_TINY } from '../../families/ltx2/testing/configs.js';
import { MINIMAX_H3_TINY } from '../../families/minimax-h3/testing/configs.js';
import { HUNYUAN_VIDEO_TINY, WAN21_TINY } from '../../families/testing/video-configs.js';
import { readLatents } from '../../io/latents.js';
import { writeNpy } from '../../io/npy.js';
import { setTiling, tileFramePlan } from '../../plan/planner.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { runCli } from '../main.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-encode-frames-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function writeConfig(name: string, config: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

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

/** The library's encode with the family's default frame plan, or the one given (null: off). */
async function libraryEncode(
  family: string,
  config: Readonly<Record<string, unknown>>,
  input: Tensor,
  frames?: { window: number; overlap: number } | null,
): Promise<Tensor> {
  const encoder = await loadEncoder({ family, config, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    if (frames !== undefined) setTiling(encoder, tileFramePlan(encoder, frames)!);
    return await encoder.encode(input);
  } finally {
    await encoder.dispose();
  }
}

const differs = (a: Tensor, b: Tensor): boolean => a.data.some((v, i) => v !== b.data[i]);

test('HunyuanVideo: the default framewise encode, --no-frame-tiling and --frame-window/--frame-overlap are the library encodes', async () => {
  const config = writeConfig('hv.json', HUNYUAN_VIDEO_TINY);
  // 21 frames (1 + 4·5) of 8 × 8: more than the 16-frame default window, so time is cut by default.
  const video = seededTensor([1, 3, 21, 8, 8], 11, 0.8);
  const input = join(dir, 'hv.npy');
  writeNpy(input, video);
  const run = async (name: string, ...flags: string[]): Promise<Tensor> => {
    const out = join(dir, `${name}.npy`);
    const r = await cli(...synthetic('hunyuan-video', config), '--video', input, '--out', out, ...flags);
    assert.equal(r.code, 0, r.stderr);
    return readLatents(out);
  };
  const byDefault = await run('hv-default');
  assertSameBits(byDefault, await libraryEncode('hunyuan-video', HUNYUAN_VIDEO_TINY, video), 'default (16/4 frames)');
  const whole = await run('hv-whole', '--no-frame-tiling');
  assertSameBits(whole, await libraryEncode('hunyuan-video', HUNYUAN_VIDEO_TINY, video, null), '--no-frame-tiling');
  assert.ok(differs(byDefault, whole), 'the framewise encode differs from the whole one');
  const resized = await run('hv-8-4', '--frame-window', '8', '--frame-overlap', '4');
  assertSameBits(resized, await libraryEncode('hunyuan-video', HUNYUAN_VIDEO_TINY, video, { window: 8, overlap: 4 }), '8/4 frames');
  assert.ok(differs(resized, byDefault), 'an 8-frame window differs from the 16-frame default');
  assertSameBits(await run('hv-full', '--full'), whole, '--full: one call over every frame');
  const bad = await cli(...synthetic('hunyuan-video', config), '--video', input, '--out', join(dir, 'x.npy'), '--frame-window', '6');
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /multiple of 4/);
});

test('HunyuanVideo: --strategy shard --ranks 2 row-shards the video encoder (bands of rows of every frame), whole and in its temporal chunks, equal to the library encodes within 1e-4', async () => {
  const config = writeConfig('hv-shard.json', HUNYUAN_VIDEO_TINY);
  // 21 frames of 12 × 8 (3 latent rows): the default 16/4 frame plan cuts time; each chunk is row-sharded.
  const video = seededTensor([1, 3, 21, 12, 8], 13, 0.8);
  const input = join(dir, 'hv-shard.npy');
  writeNpy(input, video);
  const close = (got: Tensor, expected: Tensor, what: string) => {
    assert.deepEqual(got.dims, expected.dims, what);
    const maxAbs = got.data.reduce((m, v, i) => Math.max(m, Math.abs(v - expected.data[i]!)), 0);
    const largest = expected.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    assert.ok(maxAbs <= 1e-4 * largest, `${what}: max |Δ| ${maxAbs} vs max |whole| ${largest}`);
  };
  for (const [name, flags, frames] of [
    ['hv-shard-whole', ['--no-frame-tiling'], null],
    ['hv-shard-chunks', [], undefined],
  ] as const) {
    const out = join(dir, `${name}.npy`);
    const r = await cli(
      ...synthetic('hunyuan-video', config),
      '--video',
      input,
      '--out',
      out,
      '--strategy',
      'shard',
      '--ranks',
      '2',
      '--json',
      ...flags,
    );
    assert.equal(r.code, 0, r.stderr);
    const summary = JSON.parse(r.stdout);
    assert.equal(summary.strategy, 'shard');
    assert.equal(summary.ranks.length, 2);
    close(await readLatents(out), await libraryEncode('hunyuan-video', HUNYUAN_VIDEO_TINY, video, frames), name);
  }
});

test('HunyuanVideo: --sample row-sharded on 2 ranks draws from the moments graph the ranks run, within 1e-4 of the whole draw (not the mean)', async () => {
  const config = writeConfig('hv-sample.json', HUNYUAN_VIDEO_TINY);
  const input = join(dir, 'hv-sample.npy');
  writeNpy(input, seededTensor([1, 3, 5, 12, 8], 15, 0.8));
  const encode = async (name: string, ...flags: string[]) => {
    const out = join(dir, `${name}.npy`);
    const r = await cli(...synthetic('hunyuan-video', config), '--video', input, '--out', out, '--no-frame-tiling', ...flags);
    assert.equal(r.code, 0, r.stderr);
    return readLatents(out);
  };
  const whole = await encode('hv-sample-whole', '--sample');
  const sharded = await encode('hv-sample-shard', '--sample', '--strategy', 'shard', '--ranks', '2');
  const mean = await encode('hv-sample-mean');
  const largest = whole.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const maxAbs = (a: Tensor, b: Tensor) => a.data.reduce((m, v, i) => Math.max(m, Math.abs(v - b.data[i]!)), 0);
  assert.deepEqual(sharded.dims, whole.dims);
  assert.ok(maxAbs(sharded, whole) <= 1e-4 * largest, `shard vs whole draw: ${maxAbs(sharded, whole)} (largest ${largest})`);
  assert.ok(maxAbs(whole, mean) > 0.1, 'a draw, not the mean');
});

test('a video encoder with a graph is not read by the memory model (image tiles only): MiniMax-H3 encodes with no plan option; --strategy shard is refused naming its clip loop', async () => {
  const config = writeConfig('minimax.json', MINIMAX_H3_TINY);
  const video = seededTensor([1, 3, 5, 16, 16], 14, 0.8);
  const input = join(dir, 'minimax.npy');
  writeNpy(input, video);
  const out = join(dir, 'minimax-out.npy');
  const r = await cli(...synthetic('minimax-h3', config), '--video', input, '--out', out);
  assert.equal(r.code, 0, r.stderr);
  assertSameBits(await readLatents(out), await libraryEncode('minimax-h3', MINIMAX_H3_TINY, video), 'the default encode');
  const shard = await cli(...synthetic('minimax-h3', config), '--video', input, '--out', out, '--strategy', 'shard', '--ranks', '2');
  assert.equal(shard.code, 2, shard.stderr);
  assert.match(shard.stderr, /the minimax-h3 encoder is not one graph \(its graph encodes one clip/);
});

test('LTX-2: --frame-window turns its temporal tiling on (off by default)', async () => {
  const config = writeConfig('ltx2.json', LTX2_DIFREF_TINY);
  const video = seededTensor([1, 3, 17, 16, 16], 12, 0.8);
  const input = join(dir, 'ltx.npy');
  writeNpy(input, video);
  const out = join(dir, 'ltx-8-4.npy');
  const r = await cli(...synthetic('ltx2', config), '--video', input, '--out', out, '--frame-window', '8', '--frame-overlap', '4');
  assert.equal(r.code, 0, r.stderr);
  const chunked = await readLatents(out);
  assertSameBits(chunked, await libraryEncode('ltx2', LTX2_DIFREF_TINY, video, { window: 8, overlap: 4 }), '8/4 frames');
  assert.ok(differs(chunked, await libraryEncode('ltx2', LTX2_DIFREF_TINY, video)), 'differs from the default (whole) encode');
});

test('a frame plan for an encoder without temporal tiling is refused naming the flag (exit 2)', async () => {
  const video = join(dir, 'five.npy');
  writeNpy(video, seededTensor([1, 3, 5, 8, 8], 1));
  for (const [family, config] of [
    ['wan', WAN21_TINY],
    ['hunyuan-video-1.5', HUNYUAN_VIDEO_15_TINY],
  ] as const) {
    const path = writeConfig(`${family}.json`, config);
    for (const flags of [['--frame-window', '4'], ['--frame-overlap', '0'], ['--no-frame-tiling']]) {
      const r = await cli(...synthetic(family, path), '--video', video, '--out', join(dir, 'x.npy'), ...flags);
      assert.equal(r.code, 2, `${family} ${flags.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`${flags[0]}: the ${family.replace('.', '\\.')} encoder has no temporal tiling`));
    }
  }
});

test('a video or a 5-D .npy image given to an image family is refused before the weights are read (exit 2)', async () => {
  // A TAE folder whose weights file is not a safetensors file: reading it would fail with FILE_INVALID.
  const folder = join(dir, 'tae-broken');
  mkdirSync(folder);
  writeFileSync(join(folder, 'config.json'), JSON.stringify({ _class_name: 'AutoencoderTiny' }));
  writeFileSync(join(folder, 'diffusion_pytorch_model.safetensors'), 'not safetensors');
  const video = join(dir, 'clip5.npy');
  writeNpy(video, seededTensor([1, 3, 5, 8, 8], 2));
  const asVideo = await cli('--vae', folder, '--video', video, '--out', join(dir, 'x.npy'));
  assert.equal(asVideo.code, 2, asVideo.stderr);
  assert.match(asVideo.stderr, /--video: the tae encoder takes images/);
  const asImage = await cli('--vae', folder, '--image', video, '--out', join(dir, 'x.npy'));
  assert.equal(asImage.code, 2, asImage.stderr);
  assert.match(asImage.stderr, /--image: the tae encoder takes images \(B, C, H, W\); .*clip5\.npy holds a video \(1, 3, 5, 8, 8\)/);
  // The same folder with a 4-D image does read the weights (and fails on them): the refusals above came first.
  const image = join(dir, 'still.npy');
  writeNpy(image, seededTensor([1, 3, 8, 8], 3));
  const read = await cli('--vae', folder, '--image', image, '--out', join(dir, 'x.npy'));
  assert.notEqual(read.code, 0);
  assert.doesNotMatch(read.stderr, /takes images/);
});
