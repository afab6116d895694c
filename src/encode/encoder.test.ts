import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { tae } from '../families/tae/spec.js';
import { taeRuntime } from '../families/tae/runtime.js';
import { referenceArch, referenceEncode } from '../families/tae/testing/reference.js';
import { TAE_SMALL } from '../families/testing/config-files.js';
import { assertMatchesReference, difference } from '../graph/testing/compare.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../plan/planner.js';
import { referenceTiledEncode, toFloat64 } from './testing/tiled-reference.js';
import { seededTensor } from '../tensor.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { partOf } from '../sources/bind-half.js';
import { checkImage, cropToMultiple, loadEncoder } from './encoder.js';

/** With the GroupNorm pool: the encoder's own mid block is exercised too. */
const TINY = { ...TAE_SMALL, use_midblock_gn: true };

const invalid = (pattern: RegExp) => (e: unknown) => e instanceof DistVaeError && e.code === 'TENSOR_INVALID' && pattern.test(e.message);

test('loadEncoder with synthetic weights encodes like the float64 reference', async () => {
  const source = { family: 'tae', config: TINY, weights: 'synthetic' as const, seed: 8 };
  const encoder = await loadEncoder(source, { threads: 1 });
  try {
    const image = seededTensor([1, 3, 16, 32], 2, 0.5);
    const latents = await encoder.encode(image);
    assert.deepEqual(latents.dims, [1, 4, 2, 4]);
    const weights = syntheticWeights(taeRuntime.encoder!.params(tae.resolveConfig(TINY)), 8);
    assertMatchesReference(latents, referenceEncode(weights, referenceArch(TINY, 'encoder'), image), 'encode');
  } finally {
    await encoder.dispose();
  }
});

test('a tiled TAE encode is the Family T loop in input pixels: diffusers-style blend of float64 reference tile encodes', async () => {
  const source = { family: 'tae', config: TINY, weights: 'synthetic' as const, seed: 8 };
  const encoder = await loadEncoder(source, { threads: 1 });
  try {
    const weights = syntheticWeights(taeRuntime.encoder!.params(tae.resolveConfig(TINY)), 8);
    const arch = referenceArch(TINY, 'encoder');
    const image = seededTensor([1, 3, 40, 64], 5, 0.5);
    // 24 px windows every 16 px (overlap 8 px = 1 latent unit of blend): 3 × 4 tiles, clipped edge tiles.
    setTiling(encoder, tileShapePlan(encoder, 24, 24)!);
    setTiling(encoder, tileOverlapPlan(encoder, 8, 8)!);
    const tiled = await encoder.encode(image);
    const reference = await referenceTiledEncode(image, 8, 24, 8, async (tile) => toFloat64(referenceEncode(weights, arch, tile)));
    assert.deepEqual(tiled.dims, [1, 4, 5, 8]);
    assertMatchesReference(tiled, reference, 'tiled encode');
    setTiling(encoder, 'off');
    assert.ok(difference(await encoder.encode(image), tiled).maxAbs > 1e-3, 'tiling must change the latents (the pools are per tile)');
  } finally {
    await encoder.dispose();
  }
});

test('checkImage refuses sizes off the spatial ratio with the nearest valid ones, and wrong rank, channels or values', () => {
  const config = tae.resolveConfig(TINY);
  assert.throws(
    () => checkImage(config, seededTensor([1, 3, 30, 33], 1)),
    invalid(/height 30 px is not a multiple of 8 \(nearest: 24 or 32\).*width 33 px is not a multiple of 8 \(nearest: 32 or 40\)/),
  );
  assert.throws(() => checkImage(config, seededTensor([1, 3, 4, 8], 1)), invalid(/height 4 px is not a multiple of 8 \(nearest: 8\)/));
  assert.throws(() => checkImage(config, seededTensor([1, 4, 8, 8], 1)), invalid(/4 channels; the encoder takes 3/));
  assert.throws(() => checkImage(config, seededTensor([3, 8, 8], 1)), invalid(/3 dimensions/));
  const nan = seededTensor([1, 3, 8, 8], 1);
  nan.data[70] = Number.NaN;
  assert.throws(() => checkImage(config, nan), invalid(/non-finite value \(NaN\) at flat index 70/));
  assert.doesNotThrow(() => checkImage(config, seededTensor([2, 3, 8, 16], 1)));
});

test('cropToMultiple keeps the centred largest multiple-of-r window', () => {
  const image = { dims: [1, 2, 10, 19], data: Float32Array.from({ length: 380 }, (_, i) => i) };
  const cropped = cropToMultiple(image, 8);
  assert.deepEqual(cropped.dims, [1, 2, 8, 16]);
  // Rows 1..8, columns 1..16 of each plane: (10 − 8) / 2 = 1 and floor((19 − 16) / 2) = 1.
  assert.equal(cropped.data[0], 1 * 19 + 1);
  assert.equal(cropped.data[8 * 16 - 1], 8 * 19 + 16);
  assert.equal(cropped.data[8 * 16], 190 + 19 + 1);
  assert.equal(cropToMultiple(cropped, 8), cropped, 'already valid: unchanged');
  assert.throws(() => cropToMultiple({ dims: [1, 3, 7, 16], data: new Float32Array(336) }, 8), invalid(/smaller than 8 px/));
});

test('reading an encoder of a family runtime without one is refused (NO_ENCODER)', () => {
  // Every registered family now ships an encoder: the refusal is checked on a runtime stripped of it.
  const { encoder: _, ...decoderOnly } = taeRuntime;
  assert.throws(
    () => partOf(tae, decoderOnly, 'encoder'),
    (e: unknown) => e instanceof DistVaeError && e.code === 'UNSUPPORTED' && e.reasons.some((r) => r.code === 'NO_ENCODER'),
  );
});
