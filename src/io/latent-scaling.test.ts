import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { seededTensor, type Tensor } from '../tensor.js';
import { latentScalingOf, patchifyLatents, scaleLatents, unpatchifyLatents, unscaleLatents, type LatentScaling } from './latent-scaling.js';

/** torch's own results of the pipelines' expressions (testing/latent-scaling-golden.py says which line each mirrors). */
interface GoldenCase {
  dims: number[];
  x: number[];
  scaledDims: number[];
  scaled: number[];
  unscaled: number[];
  scalingFactor?: number;
  shiftFactor?: number;
  latentsMean?: number[];
  latentsStd?: number[];
  bnMean?: number[];
  bnVar?: number[];
  eps?: number;
}
const golden = JSON.parse(readFileSync(new URL('./testing/latent-scaling-golden.json', import.meta.url), 'utf8')) as {
  torch: string;
  cases: Record<string, GoldenCase>;
};

function fieldsOf(c: GoldenCase): Record<string, unknown> {
  return {
    ...(c.scalingFactor !== undefined ? { scaling_factor: c.scalingFactor } : {}),
    ...(c.shiftFactor !== undefined ? { shift_factor: c.shiftFactor } : {}),
    ...(c.latentsMean ? { latents_mean: c.latentsMean, latents_std: c.latentsStd } : {}),
    ...(c.eps !== undefined ? { batch_norm_eps: c.eps, patch_size: [2, 2] } : {}),
  };
}

function scalingOf(c: GoldenCase): LatentScaling {
  const batchNorm = c.bnMean ? { mean: Float32Array.from(c.bnMean), variance: Float32Array.from(c.bnVar!) } : undefined;
  return latentScalingOf(fieldsOf(c), 'test', batchNorm ? { batchNorm } : {});
}

const t = (dims: number[], values: number[]): Tensor => ({ dims, data: Float32Array.from(values) });

for (const [name, c] of Object.entries(golden.cases)) {
  test(`${name}: scaleLatents and unscaleLatents equal the pipeline's torch expressions (torch ${golden.torch})`, () => {
    const scaling = scalingOf(c);
    const scaled = scaleLatents(t(c.dims, c.x), scaling);
    assert.deepEqual(scaled.dims, c.scaledDims);
    // Bit for bit: one float32 rounding per operation, in torch's order.
    assert.deepEqual([...scaled.data], c.scaled);
    // FLUX.2's unscale takes the patchified grid (the golden unscales its own scaled latents); the others the raw latents.
    const unscaled = unscaleLatents(name === 'flux2' ? t(c.scaledDims, c.scaled) : t(c.dims, c.x), scaling);
    assert.deepEqual(unscaled.dims, c.dims);
    assert.deepEqual([...unscaled.data], c.unscaled);
  });

  test(`${name}: unscaleLatents(scaleLatents(x)) gives x back (round trip through both files' scaling)`, () => {
    const scaling = scalingOf(c);
    const x = seededTensor(c.dims, 5, 3);
    const back = unscaleLatents(scaleLatents(x, scaling), scaling);
    assert.deepEqual(back.dims, x.dims);
    const scale = Math.max(...x.data.map(Math.abs));
    x.data.forEach((v, i) => assert.ok(Math.abs(back.data[i]! - v) <= 1e-6 * scale, `index ${i}: ${back.data[i]} vs ${v}`));
  });
}

test('patchify and unpatchify are inverse permutations with the pipeline channel order c·4 + dy·2 + dx', () => {
  const x = { dims: [1, 2, 2, 4], data: Float32Array.from({ length: 16 }, (_, i) => i) };
  const p = patchifyLatents(x, [2, 2]);
  assert.deepEqual(p.dims, [1, 8, 1, 2]);
  // channel 0 (c 0, dy 0, dx 0): x[0, 0, 0, 0] and x[0, 0, 0, 2]; channel 3 (dy 1, dx 1): x[0, 0, 1, 1], x[0, 0, 1, 3].
  assert.deepEqual([...p.data.subarray(0, 2)], [0, 2]);
  assert.deepEqual([...p.data.subarray(6, 8)], [5, 7]);
  assert.deepEqual(unpatchifyLatents(p, [2, 2]), x);
  assert.throws(() => patchifyLatents({ dims: [1, 1, 3, 2], data: new Float32Array(6) }, [2, 2]), { code: 'TENSOR_INVALID' });
});

test('latentScalingOf reads what the config declares and refuses what it lacks', () => {
  assert.deepEqual(latentScalingOf({ scaling_factor: 0.5, latents_mean: null }, 'x'), { scalingFactor: 0.5 });
  assert.throws(() => latentScalingOf({}, 'tae'), { code: 'CONFIG_INVALID', message: /tae VAE config has no scaling_factor/ });
  assert.throws(() => latentScalingOf({ latents_mean: [1, 2], latents_std: [1] }, 'wan'), { code: 'CONFIG_INVALID' });
  assert.throws(() => latentScalingOf({ latents_mean: [1], latents_std: [0] }, 'wan'), { code: 'CONFIG_INVALID' });
  assert.throws(() => latentScalingOf({ batch_norm_eps: 1e-4 }, 'flux2'), { code: 'CONFIG_INVALID', message: /bn\.running_mean/ });
  assert.throws(() => scaleLatents(t([1, 2], [1, 2]), { scalingFactor: 0 }), { code: 'CONFIG_INVALID' });
  const wan = latentScalingOf({ latents_mean: [0, 1], latents_std: [1, 2] }, 'wan');
  assert.throws(() => scaleLatents(seededTensor([1, 3, 2, 2], 1), wan), { code: 'TENSOR_INVALID', message: /3 channels.*have 2/ });
});
