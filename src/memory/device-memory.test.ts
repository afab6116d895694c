// Device memory of a webgpu rank: onnxruntime's WebGPU provider gives every tensor the smallest
// bucket of its buffer cache that holds it, so the device peak is the liveness peak over
// bucket-sized buffers. Checked against the buckets by hand: a 96² latent's chunked attention
// holds two 84.9 MB score buffers, each a 128 MiB bucket.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import { KL_SMALL } from '../families/testing/config-files.js';
import { setTiling } from '../plan/planner.js';
import { deviceBytesOf, predictDeviceMemory, webgpuBufferBytes } from './device-memory.js';
import { predictMemory } from './model.js';

const MIB = 2 ** 20;

test('webgpuBufferBytes: the smallest bucket that holds a tensor; past the largest, its own size rounded to 16 bytes', () => {
  assert.deepEqual([0, 1, 64, 65, 513, 3 * MIB, 81 * MIB, 128 * MIB, 128 * MIB + 1].map(webgpuBufferBytes), [
    0,
    64,
    64,
    128,
    2048,
    4 * MIB,
    128 * MIB,
    128 * MIB,
    160 * MIB,
  ]);
  assert.equal(webgpuBufferBytes(200 * MIB + 1), 200 * MIB + 16);
});

test("a webgpu rank's device peak counts its buffers at bucket size: the 96² attention scores as 128 MiB each", () => {
  const vae = planningVae('autoencoder-kl', KL_SMALL);
  setTiling(vae, 'off');
  const prediction = predictMemory(vae, { strategy: 'whole', ranks: 1 }, { height: 96 * 2, width: 96 * 2 });
  const terms = prediction.coordinator.terms;
  const scores = 2304 * 9216 * 4; // one of 4 query chunks of 9216 positions, float32
  assert.ok(terms.activation >= 2 * scores, `activation ${terms.activation}`);
  assert.ok(terms.deviceActivation - terms.activation >= 2 * (webgpuBufferBytes(scores) - scores), JSON.stringify(terms));
  assert.equal(predictDeviceMemory(prediction).peakBytes, deviceBytesOf(terms));
  assert.equal(deviceBytesOf(terms), terms.sessionWeights + terms.deviceActivation);
});
