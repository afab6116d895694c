// End to end through the public path for Wan 2.1, Wan 2.2 and Qwen-Image: `loadVae` (synthetic
// weights or a diffusers folder), a plan from the planner, `vae.decode` — against a plain
// transcription of diffusers' tile loop (decode/testing/diffusers-tiled-decode.ts, which blends
// the last two axes of 4-D tensors: a (B, C, F, H, W) video is handed to it as (B, C·F, H, W),
// the same memory) running the float64 reference decoder per tile, followed by the reference
// post-processing: Wan unpatchify then clamp, whole or tiled; Qwen-Image clamps only whole.
// Also strict binding of folders: full checkpoints load as is, wrong ones fail.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffusersTiledDecode, type DiffusersTiling } from '../../decode/testing/diffusers-tiled-decode.js';
import { loadVae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import { assertClose } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import type { NumericTensor, RefTensor } from '../../graph/testing/reference-ops.js';
import { tileOverlapPlan, tileShapePlan, setTiling } from '../../plan/planner.js';
import type { Tensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { getFamily } from '../registry.js';
import { referenceClamp, referenceUnpatchify, referenceWanDecode, type WanReferenceConfig } from './testing/reference.js';
import type { RawConfig } from '../types.js';
import { QWEN_IMAGE_TINY, WAN21_TINY, WAN21_TINY_REFERENCE, WAN22_TINY, WAN22_TINY_REFERENCE } from '../testing/video-configs.js';
import { wanDecoderParams } from './graph.js';
import { diffusersFolderWriter } from '../testing/diffusers-folder.js';

const SEED = 5;
const WAN21_REF = WAN21_TINY_REFERENCE;
const WAN22_REF = WAN22_TINY_REFERENCE;
const QWEN_REF = WAN21_TINY_REFERENCE;

/** diffusers' tiled_decode variables for tile_sample_min / tile_sample_stride (output px), ratio r and patch p. */
function wanTiling(min: number, stride: number, r: number, p: number): DiffusersTiling {
  const both = (v: number) => ({ height: v, width: v });
  return {
    latentWindow: both(min / r),
    latentStride: both(stride / r),
    blendExtent: both(min / p - stride / p),
    rowLimit: both(stride / p),
  };
}

/** A (B, C, F, H, W) tensor as (B, C·F, H, W) and back: the tile loop only touches the last two axes. */
const asImage = (t: NumericTensor): RefTensor => ({
  dims: [t.dims[0]!, t.dims[1]! * t.dims[2]!, t.dims[3]!, t.dims[4]!],
  data: Float64Array.from(t.data),
});
const asVideo = (t: RefTensor, channels: number): RefTensor => ({
  dims: [t.dims[0]!, channels, t.dims[1]! / channels, t.dims[2]!, t.dims[3]!],
  data: t.data,
});

/** diffusers' raw tiled output (before unpatchify / clamp) with the reference decoder per tile. */
function referenceTiled(
  ref: WanReferenceConfig,
  weights: ReadonlyMap<string, Tensor>,
  z: Tensor,
  tiling: DiffusersTiling,
  rawChannels: number,
): RefTensor {
  const latentChannels = z.dims[1]!;
  const decodeTile = (tile: RefTensor): RefTensor => asImage(referenceWanDecode(ref, weights, asVideo(tile, latentChannels)));
  return asVideo(diffusersTiledDecode(asImage(z), decodeTile, tiling), rawChannels);
}

interface TiledCase {
  label: string;
  family: 'wan' | 'qwen-image';
  config: RawConfig;
  reference: WanReferenceConfig;
  latent: number[];
  /** Plan in output px: window and overlap (square). */
  window: number;
  overlap: number;
  tiles: number;
  postprocess: (raw: RefTensor) => RefTensor;
}

const TILED: TiledCase[] = [
  {
    label: 'Wan 2.1, window 8 px / overlap 2 px on a 7×9 latent of 2 frames (clipped edge tiles), clamped',
    family: 'wan',
    config: WAN21_TINY,
    reference: WAN21_REF,
    latent: [1, 4, 2, 7, 9],
    window: 8,
    overlap: 2,
    tiles: 3 * 3,
    postprocess: referenceClamp,
  },
  {
    label: 'Wan 2.2, window 24 px / overlap 8 px: blend and crop on the raw 12-channel output, then unpatchify and clamp',
    family: 'wan',
    config: WAN22_TINY,
    reference: WAN22_REF,
    latent: [1, 8, 2, 4, 5],
    window: 24,
    overlap: 8,
    tiles: 2 * 3,
    postprocess: (raw) => referenceClamp(referenceUnpatchify(raw, 2)),
  },
  {
    label: 'Qwen-Image image, batch 2, window 8 px / overlap 4 px (half the window): not clamped when tiled',
    family: 'qwen-image',
    config: QWEN_IMAGE_TINY,
    reference: QWEN_REF,
    latent: [2, 16, 1, 6, 7],
    window: 8,
    overlap: 4,
    tiles: 3 * 4,
    postprocess: (raw) => raw,
  },
];

for (const c of TILED) {
  test(`tiled vae.decode equals diffusers' tile loop over the float64 reference: ${c.label}`, async () => {
    const vae = await loadVae({ family: c.family, config: c.config, weights: 'synthetic', seed: SEED }, { threads: 1 });
    try {
      setTiling(vae, tileShapePlan(vae, c.window, c.window)!);
      setTiling(vae, tileOverlapPlan(vae, c.overlap, c.overlap)!);
      const z = seededTensor(c.latent, 21);
      let tiles = 0;
      const out = await vae.decode(z, { onProgress: (e) => (tiles = e.tilesTotal) });
      assert.equal(tiles, c.tiles);
      const g = vae.geometry;
      const weights = syntheticWeights(wanDecoderParams(vae.config), SEED);
      const raw = referenceTiled(
        c.reference,
        weights,
        z,
        wanTiling(c.window, c.window - c.overlap, g.spatialRatio, g.patchSize),
        g.outChannels * g.patchSize ** 2,
      );
      assert.ok(
        raw.data.some((v) => Math.abs(v) > 1),
        'the raw output leaves [−1, 1], so clamping or not is tested',
      );
      assertClose(out, c.postprocess(raw), c.label);
    } finally {
      await vae.dispose();
    }
  });
}

test('whole Wan 2.2 vae.decode (tiling on, the latent fits one window): unpatchify then clamp', async () => {
  const vae = await loadVae({ family: 'wan', config: WAN22_TINY, weights: 'synthetic', seed: SEED }, { threads: 1 });
  try {
    setTiling(vae, tileShapePlan(vae, 32, 32)!);
    const z = seededTensor([1, 8, 3, 3, 4], 4);
    const out = await vae.decode(z);
    const expected = referenceClamp(
      referenceUnpatchify(referenceWanDecode(WAN22_REF, syntheticWeights(wanDecoderParams(vae.config), SEED), z), 2),
    );
    assert.deepEqual(out.dims, [1, 3, 5, 24, 32]);
    assertClose(out, expected, 'wan 2.2 whole');
  } finally {
    await vae.dispose();
  }
});

// ---- diffusers folders -----------------------------------------------------------------------

const diffusersFolder = diffusersFolderWriter('distvae-wan-');

const decoderWeights = (family: 'wan' | 'qwen-image', config: RawConfig) =>
  syntheticWeights(wanDecoderParams(getFamily(family).resolveConfig(config)), SEED);

test('a Qwen-Image folder whose decoder overshoots [−1, 1]: the whole decode is clamped, the tiled one is not (as diffusers)', async () => {
  const weights = decoderWeights('qwen-image', QWEN_IMAGE_TINY);
  const hot = new Map(weights);
  for (const key of ['decoder.conv_out.weight', 'decoder.conv_out.bias'])
    hot.set(key, { dims: weights.get(key)!.dims, data: weights.get(key)!.data.map((v) => v * 8) });
  const dir = diffusersFolder({ _class_name: 'AutoencoderKLQwenImage', ...QWEN_IMAGE_TINY }, hot);
  const vae = await loadVae(dir, { threads: 1 });
  try {
    const z = seededTensor([1, 16, 1, 5, 6], 8);
    const raw = referenceWanDecode(QWEN_REF, hot, z);
    const rawScale = raw.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    assert.ok(rawScale > 1.5, 'the test decoder must overshoot');
    // Relative to the raw output's magnitude: clamping to 1 does not shrink float32 rounding.
    assertClose(await vae.decode(z), referenceClamp(raw), 'whole', 1e-5 * rawScale);
    setTiling(vae, tileShapePlan(vae, 8, 8)!);
    setTiling(vae, tileOverlapPlan(vae, 2, 2)!);
    const tiled = await vae.decode(z);
    assert.ok(
      tiled.data.some((v) => Math.abs(v) > 1.5),
      'the tiled decode is not clamped',
    );
    assertClose(tiled, referenceTiled(QWEN_REF, hot, z, wanTiling(8, 6, 2, 1), 3), 'tiled');
  } finally {
    await vae.dispose();
  }
});

test('a full AutoencoderKLWan folder (encoder.*, quant_conv.* too) loads as is and decodes like the same weights given directly', async () => {
  const small = (dims: number[]): Tensor => seededTensor(dims, 3);
  const weights = new Map([
    ...decoderWeights('wan', WAN22_TINY),
    ['encoder.conv1.weight', small([32, 12, 3, 3, 3])],
    ['quant_conv.weight', small([16, 16, 1, 1, 1])],
    ['quant_conv.bias', small([16])],
  ]);
  const dir = diffusersFolder({ _class_name: 'AutoencoderKLWan', ...WAN22_TINY }, weights);
  const z = seededTensor([1, 8, 2, 2, 3], 2);
  const decode = async (source: Parameters<typeof loadVae>[0]) => {
    const vae = await loadVae(source, { threads: 1 });
    try {
      return await vae.decode(z);
    } finally {
      await vae.dispose();
    }
  };
  assert.deepEqual(await decode(dir), await decode({ family: 'wan', config: WAN22_TINY, weights: 'synthetic', seed: SEED }));
});

test('a Wan checkpoint of another architecture is refused before any decode, naming each key and both shapes', async () => {
  const other = new Map(decoderWeights('wan', { ...WAN21_TINY, z_dim: 16 }));
  other.delete('decoder.up_blocks.0.upsamplers.0.time_conv.bias');
  other.set('decoder.up_blocks.0.upsampler.resample.1.weight', seededTensor([8, 8, 3, 3], 1));
  const dir = diffusersFolder({ _class_name: 'AutoencoderKLWan', ...WAN21_TINY }, other);
  await assert.rejects(loadVae(dir), (e: unknown) => {
    assert.ok(e instanceof DistVaeError && e.code === 'WEIGHTS_MISMATCH', String(e));
    const byKey = new Map(e.reasons.map((r) => [r.field, r]));
    assert.equal(byKey.get('decoder.conv_in.weight')?.code, 'WEIGHT_SHAPE');
    assert.match(byKey.get('decoder.conv_in.weight')!.message, /\[8, 16, 3, 3, 3\].*\[8, 4, 3, 3, 3\]/);
    assert.equal(byKey.get('post_quant_conv.weight')?.code, 'WEIGHT_SHAPE');
    assert.equal(byKey.get('post_quant_conv.bias')?.code, 'WEIGHT_SHAPE');
    assert.equal(byKey.get('decoder.up_blocks.0.upsamplers.0.time_conv.bias')?.code, 'WEIGHT_MISSING');
    assert.equal(byKey.get('decoder.up_blocks.0.upsampler.resample.1.weight')?.code, 'WEIGHT_UNEXPECTED');
    assert.equal(e.reasons.length, 5, e.reasons.map((r) => r.field).join(', '));
    return true;
  });
});
