// AutoencoderKLHunyuanVideo's encoder against diffusers' own `encode(x).latent_dist.mode()`: the
// difref tiny config, synthetic encoder weights seed 4, a seeded video in [−1, 1]
// (testing/goldens/README.md): whole (diffusers' framewise encoding off, as ref_encode.py runs it),
// and tiled through loadEncoder and the planner — spatial tiles, temporal chunks
// (`_temporal_tiled_encode`), and both; --sample's moments against diffusers' std.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { difference } from '../../graph/testing/compare.js';
import { latentMean, latentStd } from '../../io/latent-sample.js';
import { readNpy } from '../../io/npy.js';
import { loadEncoder } from '../../encode/encoder.js';
import { setTiling, tileShapePlan } from '../../plan/planner.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { hunyuanVideoRuntime } from './runtime.js';
import { hunyuanVideo } from './spec.js';
import { HUNYUAN_VIDEO_DIFREF_SMALL, HUNYUAN_VIDEO_DIFREF_TINY } from './testing/configs.js';

const golden = (name: string) => readNpy(fileURLToPath(new URL(`./testing/goldens/${name}.npy`, import.meta.url)));

test('hunyuan-video tiny: whole encodes of 9 and 17 frames match diffusers (≤ 1e-4 of the largest value)', async () => {
  const config = resolveFamilyConfig(hunyuanVideo, HUNYUAN_VIDEO_DIFREF_TINY);
  const encoder = hunyuanVideoRuntime.encoder!;
  const runner = await encoder.createRunner(config, syntheticWeights(encoder.params(config), 4), { intraOpThreads: 1 });
  try {
    for (const [dims, seed, file] of [
      [[1, 3, 9, 32, 48], 11, 'tiny-encode-whole'],
      [[1, 3, 17, 32, 48], 12, 'tiny-encode-whole17'],
    ] as const) {
      const whole = await runner.decode(seededTensor(dims, seed));
      const expected = golden(file);
      assert.deepEqual(whole.dims, expected.dims);
      const w = difference(whole, expected);
      // Measured when made: 6.0e-6 of 5.0 (9 frames), 7.0e-6 of 3.8 (17 frames).
      assert.ok(w.maxAbs <= 1e-4 * w.scale, `${file}: max |ours − diffusers| = ${w.maxAbs} (largest ${w.scale})`);
    }
  } finally {
    await runner.dispose();
  }
});

test('hunyuan-video small (the published depth, 8× / 4×): the whole encode matches diffusers (≤ 1e-4 of the largest value)', async () => {
  const config = resolveFamilyConfig(hunyuanVideo, HUNYUAN_VIDEO_DIFREF_SMALL);
  const encoder = hunyuanVideoRuntime.encoder!;
  const runner = await encoder.createRunner(config, syntheticWeights(encoder.params(config), 4), { intraOpThreads: 1 });
  try {
    const out = await runner.decode(seededTensor([1, 3, 9, 64, 64], 14));
    const expected = golden('small-encode-whole');
    assert.deepEqual(out.dims, expected.dims);
    const d = difference(out, expected);
    // Measured when made: 5.3e-6 of 3.7.
    assert.ok(d.maxAbs <= 1e-4 * d.scale, `small: max |ours − diffusers| = ${d.maxAbs} (largest ${d.scale})`);
  } finally {
    await runner.dispose();
  }
});

test('hunyuan-video tiny: spatial, temporal and temporal-of-spatial tiled encodes through loadEncoder match diffusers (≤ 1e-4 of the largest value)', async () => {
  const encoder = await loadEncoder({ config: HUNYUAN_VIDEO_DIFREF_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    assert.equal(encoder.family.name, 'hunyuan-video');
    // diffusers' defaults: spatial tiling off, framewise encoding on at 16 frames every 12.
    assert.deepEqual(encoder.tiling, {
      enabled: false,
      window: { height: 256, width: 256 },
      overlap: { height: 64, width: 64 },
      frames: { enabled: true, window: 16, overlap: 4 },
    });
    const x9 = seededTensor([1, 3, 9, 32, 48], 11);
    const x17 = seededTensor([1, 3, 17, 32, 48], 12);
    const check = (out: Tensor, file: string) => {
      const expected = golden(file);
      assert.deepEqual(out.dims, expected.dims, file);
      const d = difference(out, expected);
      assert.ok(d.maxAbs <= 1e-4 * d.scale, `${file}: max |ours − diffusers| = ${d.maxAbs} (largest ${d.scale})`);
    };
    // Spatial tiles of 16 px every 8 (diffusers' tile_sample_min 16, stride 8), time whole.
    setTiling(encoder, { window: { height: 16, width: 16 }, overlap: { height: 8, width: 8 }, frames: null });
    check(await encoder.encode(x9), 'tiny-encode-tiled');
    // Temporal chunks of 8 + 1 frames every 4 (the last chunk one frame), no spatial tiles.
    setTiling(encoder, 'off');
    setTiling(encoder, { window: { height: 32, width: 48 }, overlap: { height: 0, width: 0 }, frames: { window: 8, overlap: 4 } });
    check(await encoder.encode(x17), 'tiny-encode-frames');
    // Each chunk tiled in space: 16 × 24 px every 12 × 16 (overlaps 4 and 8 px).
    setTiling(encoder, { window: { height: 16, width: 24 }, overlap: { height: 4, width: 8 }, frames: { window: 8, overlap: 4 } });
    check(await encoder.encode(x17), 'tiny-encode-frames-tiled');
    // An exact request is refused, never rounded: 18 px is not a multiple of r = 4.
    assert.equal(tileShapePlan(encoder, 18, 16), null);
  } finally {
    await encoder.dispose();
  }
});

test("hunyuan-video tiny --sample: moments blended over temporal chunks and spatial tiles give diffusers' std (≤ 1e-4 relative)", async () => {
  const encoder = await loadEncoder({ config: HUNYUAN_VIDEO_DIFREF_TINY, weights: 'synthetic', seed: 4 }, { threads: 1, moments: true });
  try {
    setTiling(encoder, { window: { height: 16, width: 24 }, overlap: { height: 4, width: 8 }, frames: { window: 8, overlap: 4 } });
    const moments = await encoder.encode(seededTensor([1, 3, 17, 32, 48], 12));
    assert.deepEqual(moments.dims, [1, 32, 5, 8, 12]);
    const std = latentStd(moments);
    const expected = golden('tiny-encode-std-frames-tiled');
    let worst = 0;
    for (let i = 0; i < std.data.length; i++) worst = Math.max(worst, Math.abs(std.data[i]! - expected.data[i]!) / expected.data[i]!);
    assert.ok(worst <= 1e-4, `std relative error ${worst}`);
    const d = difference(latentMean(moments), golden('tiny-encode-frames-tiled'));
    assert.ok(d.maxAbs <= 1e-4 * d.scale, `mean half: ${d.maxAbs}`);
  } finally {
    await encoder.dispose();
  }
});
