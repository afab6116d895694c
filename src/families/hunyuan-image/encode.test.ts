// AutoencoderKLHunyuanImage's encoder: the whole encode against diffusers' own
// `encode(x).latent_dist.mode()` (the difref tiny config, synthetic encoder weights seed 4, a
// seeded image in [−1, 1]: testing/goldens/README.md), and the tiled encode — diffusers' own
// `tiled_encode` raises on 4-D input (a diffusers bug, docs/design.md §3), so ours mirrors its
// tiled decode's geometry — against diffusers' loop written out in float64 over our whole encodes
// of each tile (encode/testing/tiled-reference.ts).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadEncoder } from '../../encode/encoder.js';
import { referenceTiledEncode, toFloat64 } from '../../encode/testing/tiled-reference.js';
import { difference } from '../../graph/testing/compare.js';
import { latentMean, latentStd } from '../../io/latent-sample.js';
import { readNpy } from '../../io/npy.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { HUNYUAN_IMAGE_TINY } from './testing/configs.js';

const golden = (name: string) => readNpy(fileURLToPath(new URL(`./testing/goldens/${name}.npy`, import.meta.url)));

test('hunyuan-image tiny: the whole encode matches diffusers, the tiled one its loop over whole tile encodes (≤ 1e-4 of the largest value)', async () => {
  const encoder = await loadEncoder({ config: HUNYUAN_IMAGE_TINY, weights: 'synthetic', seed: 4 }, { threads: 1 });
  try {
    assert.equal(encoder.family.name, 'hunyuan-image');
    const x = seededTensor([1, 3, 32, 48], 11);
    const whole = await encoder.encode(x);
    const expected = golden('tiny-encode-whole');
    assert.deepEqual(whole.dims, expected.dims);
    const w = difference(whole, expected);
    assert.ok(w.maxAbs <= 1e-4 * w.scale, `whole: max |ours − diffusers| = ${w.maxAbs} (largest ${w.scale})`);

    // The class's default: tiles of sample_size 32 px, overlap int(32 · 0.25) = 8 px (2 latent units).
    setTiling(encoder);
    const tiled = await encoder.encode(x);
    setTiling(encoder, 'off');
    const reference = await referenceTiledEncode(x, 4, 32, 8, async (tile: Tensor) => toFloat64(await encoder.encode(tile)));
    const t = difference(tiled, { dims: reference.dims, data: Float32Array.from(reference.data) });
    assert.ok(t.maxAbs <= 1e-5 * t.scale, `tiled: max |ours − reference| = ${t.maxAbs}`);
    assert.ok(difference(whole, tiled).maxAbs > 0.01, 'tiling must change the latents');
    // An exact request goes through the same planner, in input pixels.
    assert.equal(tileShapePlan(encoder, 30, 32), null, 'a window off the ratio is refused, never rounded');
    setTiling(encoder, tileShapePlan(encoder, 16, 24)!);
    setTiling(encoder, tileOverlapPlan(encoder, 4, 8)!);
    assert.deepEqual((await encoder.encode(x)).dims, [1, 64, 8, 12]);
  } finally {
    await encoder.dispose();
  }
});

test("hunyuan-image tiny --sample: the moments' std matches diffusers' --save-std (≤ 1e-4 relative); tiled moments are the blend of whole tile moments", async () => {
  const encoder = await loadEncoder({ config: HUNYUAN_IMAGE_TINY, weights: 'synthetic', seed: 4 }, { threads: 1, moments: true });
  try {
    const x = seededTensor([1, 3, 32, 48], 11);
    const moments = await encoder.encode(x);
    assert.deepEqual(moments.dims, [1, 128, 8, 12]);
    const mode = golden('tiny-encode-whole');
    const m = difference(latentMean(moments), mode);
    assert.ok(m.maxAbs <= 1e-4 * m.scale, `mean half: ${m.maxAbs}`);
    const std = latentStd(moments);
    const expected = golden('tiny-encode-std-whole');
    let worst = 0;
    for (let i = 0; i < std.data.length; i++) worst = Math.max(worst, Math.abs(std.data[i]! - expected.data[i]!) / expected.data[i]!);
    assert.ok(worst <= 1e-4, `std relative error ${worst}`);
    // diffusers blends the moments across tiles (its tiled_encode raises on 4-D input, so the float64 loop stands in).
    setTiling(encoder);
    const tiled = await encoder.encode(x);
    setTiling(encoder, 'off');
    const reference = await referenceTiledEncode(x, 4, 32, 8, async (tile: Tensor) => toFloat64(await encoder.encode(tile)));
    const t = difference(tiled, { dims: reference.dims, data: Float32Array.from(reference.data) });
    assert.ok(t.maxAbs <= 1e-5 * t.scale, `tiled moments: max |ours − reference| = ${t.maxAbs}`);
    assert.ok(difference(latentStd(moments), latentStd(tiled)).maxAbs > 1e-3, 'tiling must change the std');
  } finally {
    await encoder.dispose();
  }
});
