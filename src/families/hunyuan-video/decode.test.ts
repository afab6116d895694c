// HunyuanVideo end to end through the public path: `loadVae` (synthetic weights or a diffusers
// folder), plans from the planner, `vae.decode` — whole, spatially tiled, temporally chunked
// (drop the first frame of later chunks, blend_t) and both — against a plain transcription of
// diffusers' `_decode` / `tiled_decode` / `_temporal_tiled_decode` running the float64 reference
// decoder per tile and chunk; and strict binding of folders.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertVideoCase, diffusersLoops, videoCases } from '../../decode/testing/diffusers-video-decode.js';
import type { RefTensor } from '../../graph/testing/reference-ops.js';
import { loadVae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import { seededTensor } from '../../tensor.js';
import { tileFramePlan, setTiling } from '../../plan/planner.js';
import type { Tensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { hunyuanVideoDecoderParams } from './graph.js';
import { getFamily } from '../registry.js';
import { referenceHunyuanVideoDecode } from './testing/reference.js';
import { HUNYUAN_VIDEO_TINY, HUNYUAN_VIDEO_TINY_REFERENCE } from '../testing/video-configs.js';
import { decodeOnce, diffusersFolderWriter } from '../testing/diffusers-folder.js';

const SEED = 5;
const TINY_ARCH = HUNYUAN_VIDEO_TINY_REFERENCE;

// [label, [latent, spatial [window, overlap] px, frames [window, overlap], diffusers' loops, decoder calls]]
const CASES = videoCases([
  [
    'spatial tiles only: window 16 px, overlap 4 px, 1-row and 3-column edge tiles',
    [[1, 4, 2, 7, 9], [16, 4], null, diffusersLoops([16, 12], null), 9],
  ],
  [
    "diffusers' default temporal tiling (16 / 12 frames) on 6 latent frames, space untiled",
    [[1, 4, 6, 3, 4], null, 'default', diffusersLoops(null, [16, 12]), 2],
  ],
  [
    'temporal chunks of 8 frames every 4 with spatial tiles per chunk, short trailing chunks, batch 2',
    [[2, 4, 4, 5, 6], [16, 4], [8, 4], diffusersLoops([16, 12], [8, 4]), 4 * 4],
  ],
]);

const loadTiny = () => loadVae({ family: 'hunyuan-video', config: HUNYUAN_VIDEO_TINY, weights: 'synthetic', seed: SEED }, { threads: 1 });

for (const c of CASES) {
  test(`vae.decode equals diffusers' loops over the float64 reference: ${c.label}`, async () => {
    const vae = await loadTiny();
    try {
      const weights = syntheticWeights(hunyuanVideoDecoderParams(vae.config), SEED);
      const reference = (tile: RefTensor) => referenceHunyuanVideoDecode(TINY_ARCH, weights, tile);
      await assertVideoCase(vae, c, reference, { spatialRatio: 4, temporalRatio: 4, dropFrame: 'first' });
    } finally {
      await vae.dispose();
    }
  });
}

// ---- loading diffusers folders ---------------------------------------------------------------

const diffusersFolder = diffusersFolderWriter('distvae-hv-', 'AutoencoderKLHunyuanVideo');

const tinyWeights = () => syntheticWeights(hunyuanVideoDecoderParams(getFamily('hunyuan-video').resolveConfig(HUNYUAN_VIDEO_TINY)), SEED);

/** Decodes with frame tiling off (one call over all frames). */
const decodeWhole = (source: Parameters<typeof loadVae>[0], z: Tensor) =>
  decodeOnce(source, z, (vae) => setTiling(vae, tileFramePlan(vae, null)!));

test('a full folder (encoder.*, quant_conv.*) and one with legacy attention names load as is and decode like the synthetic weights', async () => {
  const z = seededTensor([1, 4, 2, 3, 3], 2);
  const synthetic = await decodeWhole({ family: 'hunyuan-video', config: HUNYUAN_VIDEO_TINY, weights: 'synthetic', seed: SEED }, z);
  const full = new Map([
    ...tinyWeights(),
    ['encoder.conv_in.conv.weight', seededTensor([8, 3, 3, 3, 3], 1)],
    ['quant_conv.weight', seededTensor([8, 8, 1, 1, 1], 1)],
    ['quant_conv.bias', seededTensor([8], 1)],
  ]);
  assert.deepEqual(await decodeWhole(diffusersFolder(HUNYUAN_VIDEO_TINY, full), z), synthetic);
  const legacy = new Map([...tinyWeights()].map(([k, t]) => [k.replace('.to_q.', '.query.').replace('.to_out.0.', '.proj_attn.'), t]));
  assert.ok(legacy.has('decoder.mid_block.attentions.0.proj_attn.weight'));
  assert.deepEqual(await decodeWhole(diffusersFolder(HUNYUAN_VIDEO_TINY, legacy), z), synthetic);
});

test('a folder of another architecture is refused before any decode, naming each key', async () => {
  const other = tinyWeights();
  other.delete('decoder.conv_out.conv.bias');
  other.set('decoder.conv_in.weight', seededTensor([16, 4, 3, 3, 3], 1));
  await assert.rejects(
    loadVae(diffusersFolder({ ...HUNYUAN_VIDEO_TINY, norm_num_groups: 8, block_out_channels: [8, 16, 32] }, other)),
    (e: unknown) => {
      assert.ok(e instanceof DistVaeError && e.code === 'WEIGHTS_MISMATCH', String(e));
      const byKey = new Map(e.reasons.map((r) => [r.field, r.code]));
      assert.equal(byKey.get('decoder.conv_out.conv.bias'), 'WEIGHT_MISSING');
      assert.equal(byKey.get('decoder.conv_in.weight'), 'WEIGHT_UNEXPECTED');
      assert.equal(byKey.get('decoder.conv_in.conv.weight'), 'WEIGHT_SHAPE');
      return true;
    },
  );
});

test('a decode timestep is refused: HunyuanVideo has no timestep conditioning', async () => {
  await assert.rejects(
    loadVae({ family: 'hunyuan-video', config: { ...HUNYUAN_VIDEO_TINY, decode_timestep: 0.05 }, weights: 'synthetic', seed: 1 }),
    (e: unknown) => {
      assert.ok(e instanceof DistVaeError && e.code === 'CONFIG_INVALID');
      assert.equal(e.reasons[0]!.code, 'DECODE_SETTING_UNUSED');
      assert.match(e.message, /decode_timestep = 0\.05 .*hunyuan-video/);
      return true;
    },
  );
});
