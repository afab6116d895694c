// Plans against buffer limits, in Node (the module is pure): the largest tensor of a plan is the
// graph's for the plan's largest latent tile, the largest fitting window is the biggest side
// whose tiles fit (and one latent unit more does not), halo-exact reads are sized with their
// halo, and a plan over the limit is refused with the bytes, the limit and its source.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { planningVae, resolveFamilyConfig } from '../families/registry.js';
import { tae } from '../families/tae/spec.js';
import { taeRuntime } from '../families/tae/runtime.js';
import { architectureModel } from '../decode/decoder-model.js';
import {
  checkPlanFits,
  installWindow,
  largestFittingWindow,
  planTensorBytes,
  tensorLimitBytes,
  type BufferLimits,
} from './device-limits.js';

const config = resolveFamilyConfig(tae, { variant: 'taesd' });
const model = architectureModel(tae, taeRuntime, config);
const LATENT = [1, 4, 24, 32];
const MIB = 2 ** 20;
const activation = (hPx: number, wPx: number) => 64 * hPx * wPx * 4;

test('the largest tensor of a plan is 64 channels at the largest tile (whole, tiled, halo-exact)', () => {
  const vae = planningVae('tae', { variant: 'taesd' });
  assert.equal(planTensorBytes(vae, model, LATENT, 'whole').largest.bytes, activation(192, 256));
  installWindow(vae, { height: 24, width: 32 }, { height: 128, width: 128 }, { height: 32, width: 32 });
  const tiled = planTensorBytes(vae, model, LATENT, 'tiled');
  assert.deepEqual([tiled.tile, tiled.tiles, tiled.largest.bytes], [{ height: 16, width: 16 }, 6, activation(128, 128)]);
  const exact = planTensorBytes(vae, model, LATENT, 'exact');
  // Cores of 12 latent rows and columns (the stride) read with the decoder's halo on each side.
  assert.ok(exact.tile.height > 12 && exact.tile.height <= 24, `exact read ${exact.tile.height} rows`);
  assert.equal(exact.largest.bytes, activation(exact.tile.height * 8, exact.tile.width * 8));
});

test('largestFittingWindow: the biggest side whose tiles fit, and one latent unit more does not', () => {
  const vae = planningVae('tae', { variant: 'taesd' });
  const limit = 8 * MIB;
  const window = largestFittingWindow(vae, model, LATENT, limit)!;
  assert.deepEqual(window, { height: 176, width: 176 });
  assert.ok(activation(176, 176) <= limit && activation(184, 184) > limit);
  assert.deepEqual(largestFittingWindow(vae, model, LATENT, 1e9), { height: 192, width: 256 }, 'the whole image when it fits');
  assert.equal(largestFittingWindow(vae, model, LATENT, 1000), null, 'not even one latent unit fits 1000 bytes');
  assert.equal(vae.tiling.enabled, false, 'probing leaves the VAE as it was');
});

test('a plan over the limit is refused with its bytes, the limit and where the limit comes from', () => {
  const limits: BufferLimits = {
    maxBufferSize: 256 * MIB,
    maxStorageBufferBindingSize: 128 * MIB,
    capBytes: 8 * MIB,
    source: 'WebGPU device (test)',
  };
  assert.equal(tensorLimitBytes(limits), 8 * MIB);
  assert.equal(tensorLimitBytes({ ...limits, capBytes: undefined }), 128 * MIB);
  const vae = planningVae('tae', { variant: 'taesd' });
  const { largest } = planTensorBytes(vae, model, LATENT, 'whole');
  assert.throws(
    () => checkPlanFits(largest, limits, 'a whole decode of 192x256 px', { height: 176, width: 176 }),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'PLAN_REFUSED' &&
      e.reasons[0]!.code === 'TENSOR_EXCEEDS_DEVICE_LIMIT' &&
      e.message.includes('needs a 12582912-byte (12.0 MiB) tensor') &&
      e.message.includes(
        'over the 8388608-byte (8.0 MiB) limit of the WebGPU device (test): maxBufferSize 256.0 MiB, maxStorageBufferBindingSize 128.0 MiB, cap 8.0 MiB; the largest window that fits is 176x176 px',
      ),
  );
  checkPlanFits(largest, { ...limits, capBytes: undefined }, 'a whole decode');
});
