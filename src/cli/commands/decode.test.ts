// `distvae decode` for video families: video output (.mp4/.webm with --fps, refused before any
// work when ffmpeg is missing or the family decodes images), and --decode-timestep (a config
// override: the same as config.json's decode_timestep, refused where no decoder takes it).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { seededTensor } from '../../tensor.js';
import { readNpy, writeNpy } from '../../io/npy.js';
import { configFile, HUNYUAN_VIDEO_SMALL, KL_SMALL } from '../../families/testing/config-files.js';
import { cli, refusalOf as refusal, syntheticDecode } from '../testing/in-process.js';
import { probeVideo, skipWithoutVideoTools } from '../../io/testing/video-tools.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-cli-decode-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, content: object) => configFile(dir, name, content);

const HUNYUAN = file('hunyuan.json', HUNYUAN_VIDEO_SMALL);
const LTX2_CONDITIONED = {
  _class_name: 'AutoencoderKLLTX2Video',
  latent_channels: 4,
  block_out_channels: [8, 16],
  decoder_block_out_channels: [8, 16],
  decoder_layers_per_block: [1, 1, 1],
  decoder_spatio_temporal_scaling: [true, true],
  upsample_factor: [2, 2],
  timestep_conditioning: true,
  spatial_compression_ratio: 16,
  temporal_compression_ratio: 4,
};
const LTX2 = file('ltx2.json', LTX2_CONDITIONED);
const VIDEO_LATENTS = join(dir, 'z5.npy');
writeNpy(VIDEO_LATENTS, seededTensor([1, 4, 3, 2, 3], 3));

test('--decode-timestep is refused for a decoder without timestep conditioning, before loading', async () => {
  const r = await cli(...syntheticDecode(HUNYUAN, VIDEO_LATENTS, join(dir, 'x.npy')), '--decode-timestep', '0.05', '--json');
  assert.equal(r.code, 2);
  assert.deepEqual(
    refusal(r).reasons.map((x) => [x.code, x.field]),
    [['DECODE_SETTING_UNUSED', 'decode_timestep']],
  );
});

test('--decode-timestep overrides the config: the same sample as config.json saying so, unlike the default 0', async () => {
  const viaOption = join(dir, 'option.npy');
  const viaConfig = join(dir, 'config.npy');
  const byDefault = join(dir, 'default.npy');
  assert.equal((await cli(...syntheticDecode(LTX2, VIDEO_LATENTS, viaOption), '--decode-timestep', '0.3', '--threads', '1')).code, 0);
  const withTimestep = file('ltx2-t.json', { ...LTX2_CONDITIONED, decode_timestep: 0.3 });
  assert.equal((await cli(...syntheticDecode(withTimestep, VIDEO_LATENTS, viaConfig), '--threads', '1')).code, 0);
  assert.equal((await cli(...syntheticDecode(LTX2, VIDEO_LATENTS, byDefault), '--threads', '1')).code, 0);
  assert.deepEqual(readNpy(viaOption), readNpy(viaConfig));
  assert.notDeepEqual(readNpy(viaOption).data, readNpy(byDefault).data);
});

test('video output is refused before any work: --fps without video, an image family, no ffmpeg on PATH', async () => {
  const fps = await cli(...syntheticDecode(HUNYUAN, VIDEO_LATENTS, join(dir, 'x.npy')), '--fps', '12', '--json');
  assert.equal(fps.code, 2);
  assert.equal(refusal(fps).reasons[0]!.field, '--fps');

  const imageLatents = join(dir, 'z4.npy');
  writeNpy(imageLatents, seededTensor([1, 4, 4, 4], 3));
  const kl = file('kl.json', KL_SMALL);
  const image = await cli(...syntheticDecode(kl, imageLatents, join(dir, 'x.mp4')), '--json');
  assert.equal(image.code, 2);
  assert.match(refusal(image).reasons[0]!.field, /--out/);

  const saved = process.env['PATH'];
  process.env['PATH'] = join(dir, 'no-such-bin');
  try {
    const missing = await cli(...syntheticDecode(HUNYUAN, VIDEO_LATENTS, join(dir, 'x.webm')), '--json');
    assert.equal(missing.code, 2);
    assert.equal(refusal(missing).reasons[0]!.code, 'FFMPEG_MISSING');
    assert.match(missing.stderr, /apt-get install ffmpeg/);
  } finally {
    process.env['PATH'] = saved;
  }
});

test('an .mp4 of a HunyuanVideo decode holds every decoded frame', { skip: skipWithoutVideoTools }, async () => {
  const out = join(dir, 'clip.mp4');
  const r = await cli(...syntheticDecode(HUNYUAN, VIDEO_LATENTS, out), '--fps', '12', '--threads', '1', '--json');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).shape, [1, 3, 9, 8, 12]);
  const stream = probeVideo(out, ['nb_read_frames', 'r_frame_rate']);
  assert.deepEqual([Number(stream['nb_read_frames']), stream['r_frame_rate']], [9, '12/1']);
});
