// The Wan encoder (Wan 2.1, Wan 2.2 with patch size 2 and residual down blocks, Qwen-Image) equals
// diffusers' `encode(x).latent_dist.mode()` — whole (its `_encode` frame loop: the first frame,
// then chunks of 4 through the causal cache) and tiled (its `tiled_encode`, a fresh cache per
// tile) — within 1e-4 of the largest value, on the difref tiny configs with seeded synthetic
// encoder weights (testing/goldens/README.md). Wan 2.2's tiles are given in input pixels: twice
// the patchified numbers diffusers is told.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadEncoder } from '../../encode/encoder.js';
import { difference } from '../../graph/testing/compare.js';
import { latentMean, latentStd } from '../../io/latent-sample.js';
import { readNpy } from '../../io/npy.js';
import { setTiling } from '../../plan/planner.js';
import { seededTensor } from '../../tensor.js';
import type { RawConfig } from '../types.js';
import { patchify } from './encoder-runner.js';
import { unpatchify } from './runtime.js';

/** difref's `make_vae.py wan --tiny` (latents statistics left out: encode does not read them). */
const WAN21_DIFREF_TINY: RawConfig = {
  _class_name: 'AutoencoderKLWan',
  attn_scales: [],
  base_dim: 8,
  decoder_base_dim: null,
  dim_mult: [1, 2],
  in_channels: 3,
  is_residual: false,
  num_res_blocks: 1,
  out_channels: 3,
  patch_size: null,
  scale_factor_spatial: 2,
  scale_factor_temporal: 2,
  temperal_downsample: [true],
  z_dim: 16,
};

/** `make_vae.py wan22 --tiny`: residual, patch 2, spatial 8, temporal 2. */
const WAN22_DIFREF_TINY: RawConfig = {
  ...WAN21_DIFREF_TINY,
  decoder_base_dim: 16,
  dim_mult: [1, 2, 2],
  in_channels: 12,
  is_residual: true,
  out_channels: 12,
  patch_size: 2,
  scale_factor_spatial: 8,
  temperal_downsample: [true, false],
  z_dim: 48,
};

/** `make_vae.py qwenimage --tiny`. */
const QWEN_IMAGE_DIFREF_TINY: RawConfig = {
  _class_name: 'AutoencoderKLQwenImage',
  attn_scales: [],
  base_dim: 8,
  dim_mult: [1, 2],
  input_channels: 3,
  num_res_blocks: 1,
  temperal_downsample: [true],
  z_dim: 16,
};

/** The `--small` configs: published depth and ratios (Wan 2.1 / Qwen-Image 8× / 4×, Wan 2.2 16× / 4×) with 8–32 channels. */
const SMALL = { base_dim: 8, dim_mult: [1, 2, 4, 4], temperal_downsample: [false, true, true] };
const WAN21_DIFREF_SMALL: RawConfig = { ...WAN21_DIFREF_TINY, ...SMALL, scale_factor_spatial: 8, scale_factor_temporal: 4 };
const WAN22_DIFREF_SMALL: RawConfig = { ...WAN22_DIFREF_TINY, ...SMALL, scale_factor_spatial: 16, scale_factor_temporal: 4 };
const QWEN_IMAGE_DIFREF_SMALL: RawConfig = { ...QWEN_IMAGE_DIFREF_TINY, ...SMALL };

const CASES = [
  // 9 frames: the first alone, then two chunks of 4. Tiles 16 px every 12: 4 × 2 tiles, edge tiles clipped.
  { name: 'wan', label: 'Wan 2.1', config: WAN21_DIFREF_TINY, dims: [1, 3, 9, 40, 24], window: 16, overlap: 4 },
  // diffusers is told 16 / stride 12 patchified pixels: 32 / overlap 8 input pixels here (3 × 2 tiles).
  { name: 'wan22', label: 'Wan 2.2', config: WAN22_DIFREF_TINY, dims: [1, 3, 9, 64, 48], window: 32, overlap: 8 },
  // An image: one frame through the `only` graph.
  { name: 'qwenimage', label: 'Qwen-Image', config: QWEN_IMAGE_DIFREF_TINY, dims: [1, 3, 1, 40, 24], window: 16, overlap: 4 },
  // Small: two temporal downsamples (9 frames → 3 latent frames), 3 spatial ones; 32 / stride 24 px (3 × 2 tiles).
  { name: 'wan-small', label: 'Wan 2.1 small', config: WAN21_DIFREF_SMALL, dims: [1, 3, 9, 64, 48], window: 32, overlap: 8 },
  { name: 'wan22-small', label: 'Wan 2.2 small', config: WAN22_DIFREF_SMALL, dims: [1, 3, 9, 128, 96], window: 64, overlap: 16 },
  { name: 'qwenimage-small', label: 'Qwen-Image small', config: QWEN_IMAGE_DIFREF_SMALL, dims: [1, 3, 1, 64, 48], window: 32, overlap: 8 },
];

const golden = (file: string) => readNpy(fileURLToPath(new URL(`testing/goldens/${file}`, import.meta.url)));

for (const c of CASES) {
  test(`${c.label} encoder equals diffusers' encode, whole and tiled, within 1e-4 of the largest value`, async (t) => {
    const encoder = await loadEncoder({ config: c.config, weights: 'synthetic', seed: 4 }, { threads: 1 });
    try {
      const video = seededTensor(c.dims, 11);
      const whole = await encoder.encode(video);
      setTiling(encoder, { window: { height: c.window, width: c.window }, overlap: { height: c.overlap, width: c.overlap } });
      const tiled = await encoder.encode(video);
      for (const [kind, latents] of [
        ['whole', whole],
        ['tiled', tiled],
      ] as const) {
        const expected = golden(`${c.name}-encode-${kind}.npy`);
        assert.deepEqual(latents.dims, expected.dims, kind);
        const { maxAbs, scale } = difference(latents, expected);
        t.diagnostic(`${kind}: max |ours − diffusers| / largest = ${(maxAbs / scale).toExponential(2)}`);
        assert.ok(maxAbs <= 1e-4 * scale, `${kind}: max |ours − diffusers| = ${maxAbs} (largest |value| ${scale})`);
      }
      assert.ok(difference(whole, tiled).maxAbs > 1e-3, 'tiling must change the latents (the tiles see less)');
    } finally {
      await encoder.dispose();
    }
  });
}

test('Wan 2.2 encoder defaults and tiling test count patchified pixels, as diffusers does', async () => {
  const encoder = await loadEncoder({ config: WAN22_DIFREF_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    setTiling(encoder);
    // diffusers' 256 / stride 192 patchified pixels: 512 / overlap 128 input pixels.
    assert.deepEqual(encoder.tiling.window, { height: 512, width: 512 });
    assert.deepEqual(encoder.tiling.overlap, { height: 128, width: 128 });
    // 40 input px > 32 / 2: diffusers tiles (two tiles of 32 px every 24 px), although the window covers the image.
    setTiling(encoder, { window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } });
    const video = seededTensor([1, 3, 1, 40, 16], 2);
    const tiled = await encoder.encode(video);
    setTiling(encoder, 'off');
    assert.ok(difference(await encoder.encode(video), tiled).maxAbs > 1e-3, 'tiled, not whole');
  } finally {
    await encoder.dispose();
  }
});

test('patchify is unpatchify’s inverse (diffusers’ channel order)', () => {
  const x = seededTensor([2, 3, 2, 4, 6], 5);
  const p = patchify(x, 2);
  assert.deepEqual(p.dims, [2, 12, 2, 2, 3]);
  assert.deepEqual(unpatchify(p, 2), x);
  // Channel c·4 + dx·2 + dy holds rows h·2 + dy, columns w·2 + dx: channel 1 is (dy 1, dx 0).
  assert.equal(p.data[1 * 2 * 6 + 0], x.data[1 * 6 + 0]);
});

test('a batch of two videos encodes as each alone (per-element caches, latents in (B, z, f, h, w) order)', async () => {
  const encoder = await loadEncoder({ config: WAN21_DIFREF_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    const one = seededTensor([1, 3, 5, 8, 8], 1);
    const two = seededTensor([1, 3, 5, 8, 8], 2);
    const both = { dims: [2, 3, 5, 8, 8], data: Float32Array.from([...one.data, ...two.data]) };
    const [a, b, batch] = [await encoder.encode(one), await encoder.encode(two), await encoder.encode(both)];
    assert.deepEqual(batch.dims, [2, 16, 3, 4, 4]);
    assert.deepEqual(batch.data, Float32Array.from([...a.data, ...b.data]));
  } finally {
    await encoder.dispose();
  }
});

// --sample: the moments, tiled as diffusers' tiled_encode blends them, give its posterior std (difref --save-std).
for (const c of CASES.filter((c) => ['wan', 'wan22', 'qwenimage'].includes(c.name))) {
  test(`${c.label} --sample: the tiled moments' std equals diffusers' (≤ 1e-4 relative), their mean half the tiled mean`, async () => {
    const encoder = await loadEncoder({ config: c.config, weights: 'synthetic', seed: 4 }, { threads: 1, moments: true });
    try {
      setTiling(encoder, { window: { height: c.window, width: c.window }, overlap: { height: c.overlap, width: c.overlap } });
      const moments = await encoder.encode(seededTensor(c.dims, 11));
      const std = latentStd(moments);
      const expected = golden(`${c.name}-encode-std-tiled.npy`);
      assert.deepEqual(std.dims, expected.dims);
      let worst = 0;
      for (let i = 0; i < std.data.length; i++) worst = Math.max(worst, Math.abs(std.data[i]! - expected.data[i]!) / expected.data[i]!);
      assert.ok(worst <= 1e-4, `std relative error ${worst}`);
      const mode = golden(`${c.name}-encode-tiled.npy`);
      const { maxAbs, scale } = difference(latentMean(moments), mode);
      assert.ok(maxAbs <= 1e-4 * scale, `mean half: ${maxAbs}`);
    } finally {
      await encoder.dispose();
    }
  });
}
