// HunyuanVideo end to end through the public path: `loadVae` (synthetic weights or a diffusers
// folder), plans from the planner, `vae.decode` — whole, spatially tiled, temporally chunked
// (drop the first frame of later chunks, blend_t) and both — against a plain transcription of
// diffusers' `_decode` / `tiled_decode` / `_temporal_tiled_decode` running the float64 reference
// decoder per tile and chunk; and strict binding of folders.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertDecodesLikeDiffusersVideo, type DiffusersVideoTiling } from '../decode/testing/diffusers-video-decode.js';
import type { RefTensor } from '../graph/testing/reference-ops.js';
import { loadVae, type Vae } from '../decode/vae.js';
import { DistVaeError } from '../errors.js';
import { seededTensor } from '../tensor.js';
import { applyTilePlan, tileFramePlan, tileOverlapPlan, tileShapePlan } from '../plan/planner.js';
import type { Tensor } from '../tensor.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { hunyuanVideoDecoderParams } from './hunyuan-video.graph.js';
import { getFamily } from './registry.js';
import { referenceHunyuanVideoDecode, type HunyuanVideoReferenceArchitecture } from './testing/hunyuan-video-reference.js';
import { HUNYUAN_VIDEO_TINY } from './testing/video-configs.js';
import { decodeOnce, diffusersFolderWriter } from './testing/diffusers-folder.js';

const SEED = 5;
const TINY_ARCH: HunyuanVideoReferenceArchitecture = {
  blockOut: [8, 16, 16],
  layersPerBlock: 1,
  groups: 4,
  attention: true,
  spatialRatio: 4,
};

interface Case {
  label: string;
  latent: number[];
  /** Spatial plan in output pixels, or null to leave spatial tiling off. */
  window: [number, number] | null;
  overlap?: [number, number];
  /** Temporal plan in output frames; 'default' keeps the family default (on, 16 / 4); null turns it off. */
  frames: { window: number; overlap: number } | 'default' | null;
  /** diffusers' tile attributes for the same decode. */
  diffusers: Omit<DiffusersVideoTiling, 'spatialRatio' | 'temporalRatio' | 'dropFrame'>;
  calls: number;
}

const CASES: Case[] = [
  {
    label: 'spatial tiles only: window 16 px, overlap 4 px, 1-row and 3-column edge tiles',
    latent: [1, 4, 2, 7, 9],
    window: [16, 16],
    overlap: [4, 4],
    frames: null,
    diffusers: { tiling: { minHeight: 16, minWidth: 16, strideHeight: 12, strideWidth: 12 }, framewise: null },
    calls: 9,
  },
  {
    label: "diffusers' default temporal tiling (16 / 12 frames) on 6 latent frames, space untiled",
    latent: [1, 4, 6, 3, 4],
    window: null,
    frames: 'default',
    diffusers: { tiling: null, framewise: { minFrames: 16, strideFrames: 12 } },
    calls: 2,
  },
  {
    label: 'temporal chunks of 8 frames every 4 with spatial tiles per chunk, short trailing chunks, batch 2',
    latent: [2, 4, 4, 5, 6],
    window: [16, 16],
    overlap: [4, 4],
    frames: { window: 8, overlap: 4 },
    diffusers: { tiling: { minHeight: 16, minWidth: 16, strideHeight: 12, strideWidth: 12 }, framewise: { minFrames: 8, strideFrames: 4 } },
    calls: 4 * 4,
  },
];

const loadTiny = () => loadVae({ family: 'hunyuan-video', config: HUNYUAN_VIDEO_TINY, weights: 'synthetic', seed: SEED }, { threads: 1 });

function plan(vae: Vae, c: Case): void {
  if (c.window) {
    applyTilePlan(vae, tileShapePlan(vae, c.window[0], c.window[1])!);
    applyTilePlan(vae, tileOverlapPlan(vae, c.overlap![0], c.overlap![1])!);
  }
  if (c.frames !== 'default') applyTilePlan(vae, tileFramePlan(vae, c.frames)!);
}

for (const c of CASES) {
  test(`vae.decode equals diffusers' loops over the float64 reference: ${c.label}`, async () => {
    const vae = await loadTiny();
    try {
      plan(vae, c);
      const weights = syntheticWeights(hunyuanVideoDecoderParams(vae.config), SEED);
      const reference = (tile: RefTensor) => referenceHunyuanVideoDecode(TINY_ARCH, weights, tile);
      await assertDecodesLikeDiffusersVideo(
        vae,
        seededTensor(c.latent, 21),
        c.calls,
        reference,
        { ...c.diffusers, spatialRatio: 4, temporalRatio: 4, dropFrame: 'first' },
        c.label,
      );
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
  decodeOnce(source, z, (vae) => applyTilePlan(vae, tileFramePlan(vae, null)!));

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
