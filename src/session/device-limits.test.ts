// A decode session against buffer limits: on webgpu the default per-tensor cap is WebGPU's
// default limits; --max-tensor (maxTensor) replaces it; an exact window whose largest tensor is
// over it is refused before any work, naming the tensor, its size and the limit; and with no plan
// options the policy's plan fits it. The limit path is decoded on WebGPU with a tiny SD-layout
// config and a lowered limit, equal to the CPU decode of the same plan (skips without an adapter,
// fails under CI=true: runtime/testing/webgpu-adapter.ts).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadVae } from '../decode/vae.js';
import { DistVaeError } from '../errors.js';
import { KL_SMALL } from '../families/testing/config-files.js';
import { difference } from '../graph/testing/compare.js';
import { readNpy, writeNpy } from '../io/npy.js';
import { analysisModelOf, predictMemory } from '../memory/model.js';
import { predictDeviceMemory } from '../memory/device-memory.js';
import { planTensorBytes, WEBGPU_DEFAULT_LIMITS } from '../memory/device-limits.js';
import { setTiling } from '../plan/planner.js';
import { needsWebgpu } from '../runtime/testing/webgpu-adapter.js';
import { seededTensor } from '../tensor.js';
import { decodeFiles } from './decode-files.js';
import { readDecodeRequest, type DecodeFilesOptions } from './options.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-device-limits-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const Z = join(dir, 'z.npy');
const latents = seededTensor([1, 4, 16, 16], 5);
writeNpy(Z, latents);
const VAE: DecodeFilesOptions['vae'] = { family: 'autoencoder-kl', config: KL_SMALL, weights: 'synthetic', seed: 2 };

/** The whole decode's largest tensor: a limit below it forces tiles. */
async function wholeLargest(): Promise<number> {
  const vae = await loadVae(VAE, { threads: 1 });
  try {
    return planTensorBytes(vae, analysisModelOf(vae)!, latents.dims, 'whole').largest.bytes;
  } finally {
    await vae.dispose();
  }
}

test('maxDeviceMemory needs a GPU provider; on one an exact request predicted over it is refused', async () => {
  const out = join(dir, 'device.npy');
  assert.throws(
    () => readDecodeRequest({ vae: VAE, latents: Z, out, maxDeviceMemory: 2 ** 30 }),
    (e: unknown) =>
      e instanceof DistVaeError && e.reasons.some((r) => r.field === 'maxDeviceMemory' && /cpu provider has none/.test(r.message)),
  );
  const vae = await loadVae(VAE, { threads: 1 });
  try {
    setTiling(vae, 'off');
    const prediction = predictMemory(vae, { strategy: 'whole', ranks: 1 }, { height: 32, width: 32 });
    const device = predictDeviceMemory(prediction);
    // Weights and the live activations, never more than the host prediction that adds the CPU provider's own terms.
    assert.ok(device.peakBytes >= prediction.weightBytes && device.peakBytes < prediction.peakBytes, JSON.stringify(device));
  } finally {
    await vae.dispose();
  }
  await assert.rejects(
    decodeFiles({ vae: VAE, latents: Z, out, full: true, provider: 'webgpu', maxDeviceMemory: 1024, threads: 1 }),
    (e: unknown) => e instanceof DistVaeError && e.code === 'BUDGET_EXCEEDED' && /device memory is predicted at/.test(e.message),
  );
});

test("webgpu caps each tensor at WebGPU's default limits; maxTensor replaces them; cpu has no cap", () => {
  const base = { vae: VAE, latents: Z, out: join(dir, 'x.npy') };
  assert.equal(readDecodeRequest({ ...base, provider: 'webgpu' }).budget.maxTensorBytes, WEBGPU_DEFAULT_LIMITS.maxStorageBufferBindingSize);
  assert.equal(readDecodeRequest({ ...base, provider: 'webgpu', maxTensor: 2 ** 31 }).budget.maxTensorBytes, 2 ** 31);
  assert.equal(readDecodeRequest(base).budget.maxTensorBytes, undefined);
  assert.equal(readDecodeRequest(base).limits, null);
});

test('an exact window over the tensor limit is refused before any work, naming the tensor, its size and the limit', async () => {
  const limit = Math.floor((await wholeLargest()) / 2);
  const out = join(dir, 'refused.npy');
  await assert.rejects(decodeFiles({ vae: VAE, latents: Z, out, full: true, maxTensor: limit, threads: 1 }), (e: unknown) => {
    assert.ok(e instanceof DistVaeError && e.code === 'PLAN_REFUSED', String(e));
    assert.equal(e.reasons[0]!.code, 'TENSOR_EXCEEDS_DEVICE_LIMIT');
    const value = e.reasons[0]!.value as { tensor: string; bytes: number };
    assert.ok(value.bytes > limit && value.tensor.length > 0);
    assert.match(e.message, new RegExp(`${value.bytes}-byte .* over the ${limit}-byte`));
    return true;
  });
});

test('with no plan options the policy picks tiles within a lowered limit; on webgpu they decode as the CPU decodes that plan', async (t) => {
  const limit = Math.floor((await wholeLargest()) / 2);
  const out = join(dir, 'limited.npy');
  // CPU first: the policy's plan under the limit (the limit is the same with --max-tensor on either provider).
  const [cpuFile] = await decodeFiles({ vae: VAE, latents: Z, out, maxTensor: limit, threads: 1, fallback: false });
  const choice = cpuFile!.report.choice!;
  assert.equal(choice.strategy, 'tile');
  assert.ok(cpuFile!.report.memory.predictedMaxTensorBytes! <= limit);
  const vae = await loadVae(VAE, { threads: 1 });
  try {
    setTiling(vae, { window: choice.window!, overlap: choice.overlap! });
    const planned = planTensorBytes(vae, analysisModelOf(vae)!, latents.dims, 'tiled');
    assert.ok(planned.tiles >= 2 && planned.largest.bytes <= limit, `${planned.tiles} tiles, largest ${planned.largest.bytes} B`);
    const expected = await vae.decode(latents);
    assert.ok(difference(readNpy(out) as never, expected as never).maxAbs < 1e-5);
    if (!(await needsWebgpu(t))) return;
    const gpuOut = join(dir, 'limited-webgpu.npy');
    const [gpuFile] = await decodeFiles({
      vae: VAE,
      latents: Z,
      out: gpuOut,
      provider: 'webgpu',
      maxTensor: limit,
      maxDeviceMemory: 2 ** 30,
      threads: 1,
      fallback: false,
    });
    // The same plan; its reason says the times were priced by the CPU's calibration (webgpu has none yet).
    const { reason: gpuReason, ...gpuChoice } = gpuFile!.report.choice!;
    const { reason: cpuReason, ...cpuChoice } = choice;
    assert.deepEqual(gpuChoice, cpuChoice);
    assert.equal(gpuReason.replaceAll(' (CPU-calibrated)', ''), cpuReason);
    assert.match(gpuReason, /\(CPU-calibrated\)/);
    // Each decoding rank's predicted device peak, with the adapter it ran on, within the cap.
    const device = gpuFile!.report.deviceMemory!;
    assert.equal(device.limitBytes, 2 ** 30);
    assert.ok(device.ranks.length >= 1 && device.ranks.every((r) => r.device === 0 && r.predictedBytes > 0 && r.predictedBytes <= 2 ** 30));
    const largest = expected.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const { maxAbs } = difference(readNpy(gpuOut) as never, expected as never);
    t.diagnostic(
      `webgpu within ${limit} B per tensor (${planned.tiles} tiles): max abs ${maxAbs.toExponential(2)} of ${largest.toExponential(2)}`,
    );
    assert.ok(maxAbs <= 1e-4 * largest, `max abs ${maxAbs}`);
  } finally {
    await vae.dispose();
  }
});
