// Which precision a load asks for and gets (resolvePrecision), and the refusals made before any
// work: fp16 on the CPU, --force-fp16 without fp16. No GPU needed (runtime/webgpu-fp16.test.ts
// decodes in fp16).

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cli, refusalOf } from '../cli/testing/in-process.js';
import { isDistVaeError } from '../errors.js';
import { configFile, KL_SMALL, TAE_SMALL } from '../families/testing/config-files.js';
import { writeNpy } from '../io/npy.js';
import { seededTensor } from '../tensor.js';
import { loadVae, resolvePrecision } from './vae.js';

const config = (fields: Record<string, unknown>, className = 'AutoencoderKL') =>
  ({ className, fields }) as unknown as Parameters<typeof resolvePrecision>[0];

test('force_upcast keeps fp32 with a note unless fp16 is forced; configs without it get fp16', () => {
  const upcast = resolvePrecision(config({ force_upcast: true }), { provider: 'webgpu', precision: 'fp16' });
  assert.equal(upcast.precision, 'fp32');
  assert.match(upcast.note!, /AutoencoderKL config sets force_upcast.*--force-fp16/);
  assert.deepEqual(resolvePrecision(config({ force_upcast: true }), { provider: 'webgpu', precision: 'fp16', forceFp16: true }), {
    precision: 'fp16',
  });
  assert.deepEqual(resolvePrecision(config({ force_upcast: false }), { provider: 'webgpu', precision: 'fp16' }), { precision: 'fp16' });
  assert.deepEqual(resolvePrecision(config({}, 'AutoencoderTiny'), { provider: 'webgpu', precision: 'fp16' }), { precision: 'fp16' });
  assert.deepEqual(resolvePrecision(config({ force_upcast: true }), {}), { precision: 'fp32' });
});

const refused = (f: () => unknown, field: string) =>
  assert.throws(
    f,
    (e) => isDistVaeError(e) && e.code === 'INVALID_ARGUMENT' && e.reasons[0]?.field === field && /fp16|fp32/.test(e.message),
  );

test('fp16 on the CPU, an unknown precision and forceFp16 without fp16 are refused', async () => {
  refused(() => resolvePrecision(config({ force_upcast: true }), { precision: 'fp16' }), 'precision');
  refused(() => resolvePrecision(config({}), { provider: 'cpu', precision: 'fp16', forceFp16: true }), 'precision');
  refused(() => resolvePrecision(config({}), { provider: 'webgpu', precision: 'bf16' as 'fp16' }), 'precision');
  refused(() => resolvePrecision(config({}), { provider: 'webgpu', forceFp16: true }), 'forceFp16');
  // loadVae refuses before reading weights or opening a session (the default AutoencoderKL sets force_upcast).
  await assert.rejects(
    loadVae({ family: 'autoencoder-kl', config: KL_SMALL, weights: 'synthetic', seed: 0 }, { precision: 'fp16' }),
    (e) => isDistVaeError(e) && e.code === 'INVALID_ARGUMENT' && /provider 'cpu' computes in float32 only/.test(e.message),
  );
});

test('distvae decode --precision fp16 on the CPU exits 2 before any work, naming --precision; --force-fp16 alone too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-fp16-'));
  const cfg = configFile(dir, 'tae.json', TAE_SMALL);
  const latents = join(dir, 'z.npy');
  writeNpy(latents, seededTensor([1, 4, 4, 4], 1));
  const out = join(dir, 'out.png');
  const base = ['decode', '--synthetic', '--config', cfg, '--latents', latents, '--out', out, '--json'];
  const cpu = await cli(...base, '--precision', 'fp16');
  assert.equal(cpu.code, 2, cpu.stderr);
  assert.equal(refusalOf(cpu).reasons[0]!.field, 'precision');
  assert.match(refusalOf(cpu).message, /float32 only/);
  const forced = await cli(...base, '--force-fp16');
  assert.equal(forced.code, 2, forced.stderr);
  assert.match(forced.stdout + forced.stderr, /--force-fp16/);
  const bad = await cli(...base, '--precision', 'fp8');
  assert.equal(bad.code, 2);
});
