// The HunyuanVideo 1.5 declaration: the published config resolves to diffusers' geometry and
// tiling (16×, 4× in time, 32 latent channels, 256 px tiles blended over 64 px, no temporal
// tiling); its parameter list is the checkpoint's; configs the class cannot build or run are
// refused up front, every reason at once.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { runCli } from '../../cli/main.js';
import { explainTiling } from '../../plan/planner.js';
import { planningVae } from '../registry.js';
import { hunyuanVideo15DecoderParams } from './graph.js';
import { HUNYUAN_VIDEO_15_TINY } from './testing/configs.js';

test('the published config: 16×, 4× in time, 32 latent channels, diffusers tiles of 256 px blended over 64 px', () => {
  const vae = planningVae('hunyuan-video-1.5');
  assert.deepEqual(vae.geometry, {
    spatialRatio: 16,
    temporalRatio: 4,
    patchSize: 1,
    latentChannels: 32,
    outChannels: 3,
    fiveDimLatents: true,
  });
  assert.deepEqual(vae.config.tiling, { window: { height: 256, width: 256 }, overlap: { height: 64, width: 64 }, frames: null });
  const params = new Map(hunyuanVideo15DecoderParams(vae.config).map((p) => [p.name, p.dims.join()]));
  // conv_in to 1024 (the latent repeated 32 times beside it), RMS gammas [C, 1, 1, 1], 1×1×1 attention convs.
  assert.equal(params.get('decoder.conv_in.conv.weight'), '1024,32,3,3,3');
  assert.equal(params.get('decoder.mid_block.resnets.0.norm1.gamma'), '1024,1,1,1');
  assert.equal(params.get('decoder.mid_block.attentions.0.proj_out.weight'), '1024,1024,1,1,1');
  // Up blocks 0–1 upsample in time and space (8·cout channels), 2–3 in space (4·cout), 4 not at all.
  assert.equal(params.get('decoder.up_blocks.0.upsamplers.0.conv.conv.weight'), '8192,1024,3,3,3');
  assert.equal(params.get('decoder.up_blocks.1.upsamplers.0.conv.conv.weight'), '4096,1024,3,3,3');
  assert.equal(params.get('decoder.up_blocks.3.upsamplers.0.conv.conv.weight'), '512,256,3,3,3');
  assert.ok(!params.has('decoder.up_blocks.4.upsamplers.0.conv.conv.weight'));
  assert.equal(params.get('decoder.up_blocks.4.resnets.2.conv2.conv.weight'), '128,128,3,3,3');
  assert.equal(params.get('decoder.conv_out.conv.weight'), '3,128,3,3,3');
  assert.ok([...params.keys()].every((k) => k.startsWith('decoder.')));
  assert.ok(![...params.keys()].some((k) => k.includes('conv_shortcut')), 'every resnet keeps its width with upsample_match_channel');
});

test('a temporal tiling request is refused: diffusers has no temporal tiling for the class', () => {
  const vae = planningVae('hunyuan-video-1.5');
  const reasons = explainTiling(vae, { frames: { window: 16, overlap: 4 } });
  assert.deepEqual(
    reasons.map((r) => r.code),
    ['NO_TEMPORAL_TILING'],
  );
  assert.match(reasons[0]!.message, /hunyuan-video-1\.5 has no temporal tiling \(its time axis is decoded whole by every tile/);
});

function refusedFields(config: object): string[] {
  try {
    planningVae('hunyuan-video-1.5', { ...HUNYUAN_VIDEO_15_TINY, ...config });
  } catch (e) {
    assert.ok(e instanceof DistVaeError && e.code === 'CONFIG_INVALID', String(e));
    return e.reasons.map((r) => r.field);
  }
  return assert.fail('expected CONFIG_INVALID');
}

test('configs the class cannot build or decode are refused, naming each field', () => {
  // conv_in repeats the latent block_out_channels[-1] / latent_channels times.
  assert.deepEqual(refusedFields({ latent_channels: 48 }), ['latent_channels']);
  // 8× asks for a third upsampler, after the last level: there is no next width to upsample to.
  assert.deepEqual(refusedFields({ spatial_compression_ratio: 8 }), ['block_out_channels']);
  // Temporal upsamplers are spatial ones too: 8× in time takes three, which build 8× in space, not 4×, and the third has no next width.
  assert.deepEqual(refusedFields({ temporal_compression_ratio: 8 }), ['spatial_compression_ratio', 'block_out_channels']);
  // The temporal shortcut packs frames 1.. into cin / 8 channel groups: 36 is no multiple of 8 (both temporal upsamplers).
  assert.deepEqual(refusedFields({ latent_channels: 4, block_out_channels: [36, 36, 36] }), ['block_out_channels', 'block_out_channels']);
});

test('`distvae plan --family hunyuan-video-1.5` plans the published config: a 720p clip in diffusers-equivalent 256 px tiles', async () => {
  let out = '';
  const code = await runCli(['plan', '--family', 'hunyuan-video-1.5', '--height', '720', '--width', '1280', '--frames', '33', '--json'], {
    stdout: (t) => (out += t),
    stderr: () => {},
    stderrIsTTY: false,
  });
  assert.equal(code, 0);
  const report = JSON.parse(out) as { family: string; latent: object; tiles: number; stride: object; diffusersEquivalent: boolean };
  assert.equal(report.family, 'hunyuan-video-1.5');
  assert.deepEqual(report.latent, { height: 45, width: 80, frames: 9 });
  assert.deepEqual(report.stride, { height: 12, width: 12 });
  assert.equal(report.tiles, 4 * 7);
  assert.equal(report.diffusersEquivalent, true);
});
