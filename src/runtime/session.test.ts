// Sessions: running on our Tensor type, input validation before any work, and providers that
// cannot be served failing loudly (PROVIDER_UNAVAILABLE with the list of what is available).

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { GraphBuilder } from '../graph/builder.js';
import type { Tensor } from '../tensor.js';
import { openSafetensorsFile } from '../sources/weights-file.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { EXECUTION_PROVIDERS, listProviders, providerConfig, providerRequest } from './providers.js';
import { createSession, ortOptions } from './session.js';

function affineModel(): Uint8Array {
  const g = new GraphBuilder('affine');
  const x = g.input('x', ['n', 3]);
  g.output('y', g.add(g.mul(x, 2), 1), ['n', 3]);
  g.output('relu', g.relu(x), ['n', 3]);
  return g.toModelBytes();
}

const isCode = (code: string) => (e: unknown) => e instanceof DistVaeError && e.code === code;

test('run: feeds and outputs are our Tensor type; inputs are left unchanged', async () => {
  const session = await createSession(affineModel(), { intraOpThreads: 1, graphOptimization: 'basic' });
  assert.deepEqual(session.inputNames, ['x']);
  assert.deepEqual(session.outputNames, ['y', 'relu']);
  const x = { dims: [2, 3], data: Float32Array.of(-1, 0, 1, 2, 3, -4) };
  const out = await session.run({ x });
  assert.deepEqual(out.y!.dims, [2, 3]);
  assert.deepEqual(Array.from(out.y!.data), [-1, 1, 3, 5, 7, -7]);
  assert.deepEqual(Array.from(out.relu!.data), [0, 0, 1, 2, 3, 0]);
  assert.ok(out.y!.data instanceof Float32Array);
  assert.deepEqual(Array.from(x.data), [-1, 0, 1, 2, 3, -4]);
  await session.dispose();
});

test('run: pre-allocated outputs are written in place (a view into a larger buffer included); the rest arrive fresh', async () => {
  const session = await createSession(affineModel(), { intraOpThreads: 1 });
  const x = { dims: [2, 3], data: Float32Array.of(-1, 0, 1, 2, 3, -4) };
  const backing = new Float32Array(10).fill(9);
  const y = { dims: [2, 3], data: backing.subarray(2, 8) };
  const out = await session.run({ x }, { y });
  assert.equal(out.y!.data, y.data);
  assert.deepEqual(Array.from(backing), [9, 9, -1, 1, 3, 5, 7, -7, 9, 9]);
  assert.deepEqual(Array.from(out.relu!.data), [0, 0, 1, 2, 3, 0]);
  await assert.rejects(session.run({ x }, { z: y }), (e: unknown) => isCode('INVALID_ARGUMENT')(e) && /outputs/.test((e as Error).message));
  await assert.rejects(
    session.run({ x }, { y: { dims: [2, 3], data: new Float32Array(6) }, relu: { dims: [3, 2], data: new Float32Array(6) } }),
    isCode('RUNTIME_FAILED'),
  );
  await session.dispose();
});

test('run refuses missing, unknown and mis-sized feeds before running', async () => {
  const session = await createSession(affineModel(), { intraOpThreads: 1 });
  await assert.rejects(session.run({}), (e: unknown) => isCode('INVALID_ARGUMENT')(e) && /missing x/.test((e as Error).message));
  const x = { dims: [1, 3], data: new Float32Array(3) };
  await assert.rejects(session.run({ x, z: x }), (e: unknown) => isCode('INVALID_ARGUMENT')(e) && /unknown z/.test((e as Error).message));
  await assert.rejects(session.run({ x: { dims: [2, 3], data: new Float32Array(5) } }), isCode('INVALID_ARGUMENT'));
  // A shape the graph rejects is reported as a runtime failure (onnxruntime's message kept).
  await assert.rejects(session.run({ x: { dims: [1, 4], data: new Float32Array(4) } }), isCode('RUNTIME_FAILED'));
  await session.dispose();
});

test('session options are validated', async () => {
  await assert.rejects(createSession(affineModel(), { intraOpThreads: 0 }), isCode('INVALID_ARGUMENT'));
  await assert.rejects(createSession(affineModel(), { interOpThreads: 1.5 }), isCode('INVALID_ARGUMENT'));
  // A device id for the CPU provider: the compiler refuses it in a typed request; a user's is refused where it enters.
  await assert.rejects(
    async () => createSession(affineModel(), { provider: providerRequest('cpu', 0) }),
    (e: unknown) => isCode('INVALID_ARGUMENT')(e) && (e as DistVaeError).reasons[0]!.field === 'deviceId',
  );
  await assert.rejects(createSession(Uint8Array.of(1, 2, 3)), isCode('RUNTIME_FAILED'));
});

test("the memory pattern is off with the arena (a second run would add its block to the first run's regions) and on without it", () => {
  const cpu = providerConfig('cpu');
  assert.equal(ortOptions({}, cpu, undefined).enableMemPattern, false);
  assert.equal(ortOptions({ enableCpuMemArena: false }, cpu, undefined).enableMemPattern, true);
  assert.equal(ortOptions({ enableMemPattern: true }, cpu, undefined).enableMemPattern, true);
  const extra = ortOptions({ sessionConfig: { disable_prepacking: '1' } }, cpu, '/w').extra as { session: Record<string, string> };
  assert.deepEqual(extra.session, {
    disable_prepacking: '1',
    'intra_op.allow_spinning': '1',
    model_external_initializers_file_folder_path: '/w',
  });
});

test('every optimisation level gives the same result', async () => {
  const x = { dims: [1, 3], data: Float32Array.of(0.5, -2, 3) };
  for (const level of ['disabled', 'basic', 'extended', 'all'] as const) {
    const session = await createSession(affineModel(), {
      intraOpThreads: 1,
      graphOptimization: level,
      allowSpinning: false,
      enableCpuMemArena: false,
    });
    assert.deepEqual(Array.from((await session.run({ x })).y!.data), [2, -3, 7], level);
    await session.dispose();
  }
});

test('an unknown provider name is PROVIDER_UNAVAILABLE and lists what is available', async () => {
  await assert.rejects(
    async () => createSession(affineModel(), { provider: providerRequest('cdua') }),
    (e: unknown) => {
      assert.ok(isCode('PROVIDER_UNAVAILABLE')(e));
      const err = e as DistVaeError;
      assert.equal(err.reasons[0]!.field, 'provider');
      assert.equal(err.reasons[0]!.value, 'cdua');
      assert.match(err.message, /available here: .*cpu/);
      return true;
    },
  );
});

test('a known provider this build or machine cannot serve is PROVIDER_UNAVAILABLE, never a CPU session', async (t) => {
  const compiledIn = new Set(listProviders().map((p) => p.name));
  const missing = Object.keys(EXECUTION_PROVIDERS).filter((name) => !compiledIn.has(name));
  assert.ok(missing.length > 0, 'some provider of the table is absent from every onnxruntime-node build');
  for (const name of missing) {
    await assert.rejects(
      async () => createSession(affineModel(), { provider: providerRequest(name) }),
      (e: unknown) => isCode('PROVIDER_UNAVAILABLE')(e) && /does not include it/.test((e as Error).message),
    );
  }
  const notInstalled = listProviders().filter((p) => !p.available);
  if (notInstalled.length === 0) t.diagnostic('every compiled-in provider is installed here; the not-installed case is not exercised');
  for (const { name } of notInstalled) {
    await assert.rejects(async () => createSession(affineModel(), { provider: providerRequest(name) }), isCode('PROVIDER_UNAVAILABLE'));
  }
});

test('a compiled-in provider that fails to initialise here is PROVIDER_UNAVAILABLE and then listed as unavailable', async (t) => {
  const candidate = listProviders().find((p) => p.available && p.name !== 'cpu');
  if (candidate === undefined) return t.skip('no non-CPU provider is installed in this build');
  // The probe's child inherits this: with the Vulkan drivers hidden (CI installs lavapipe) WebGPU has no adapter on Linux.
  const hidden = process.env.VK_ICD_FILENAMES;
  process.env.VK_ICD_FILENAMES = '/nonexistent';
  t.after(() => (hidden === undefined ? delete process.env.VK_ICD_FILENAMES : (process.env.VK_ICD_FILENAMES = hidden)));
  let session;
  try {
    session = await createSession(affineModel(), { provider: providerRequest(candidate.name) });
  } catch (e) {
    assert.ok(isCode('PROVIDER_UNAVAILABLE')(e), String(e));
    assert.match((e as Error).message, /failed to initialise on this machine/);
    assert.equal(listProviders().find((p) => p.name === candidate.name)!.available, false);
    return;
  }
  await session.dispose();
  assert.ok(!(process.platform === 'linux' && candidate.name === 'webgpu'), 'webgpu initialised with the Vulkan drivers hidden');
  t.diagnostic(`${candidate.name} initialised on this machine`);
  assert.equal(session.provider, candidate.name);
});

test('weights as external data in checkpoint files run as the same weights held in memory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-session-'));
  try {
    const w = { dims: [2, 3], data: Float32Array.of(1, -2, 3, 0.5, 4, -1) };
    const b = { dims: [2], data: Float32Array.of(0.25, -3) };
    mkdirSync(join(dir, 'other'));
    writeSafetensors(join(dir, 'w.safetensors'), { pad: { dims: [3], data: new Float32Array(3) }, w });
    writeSafetensors(join(dir, 'other', 'b.safetensors'), { b });
    const build = (weight: Tensor, bias: Tensor) => {
      const g = new GraphBuilder('linear');
      const x = g.input('x', [1, 3]);
      g.output('y', g.add(g.op('MatMul', [x, g.op('Transpose', [g.param('w', weight)])]), g.param('b', bias)), [1, 2]);
      return g.toModel();
    };
    // Two folders: the one most bytes share is the session's external folder, the other is read in.
    const fromFiles = build(
      (await openSafetensorsFile(join(dir, 'w.safetensors'))).tensors.get('w')!,
      (await openSafetensorsFile(join(dir, 'other', 'b.safetensors'))).tensors.get('b')!,
    );
    assert.equal(
      fromFiles.graph!.initializer!.every((t) => t.raw_data === undefined && t.data_location === 1),
      true,
    );
    const x = { dims: [1, 3], data: Float32Array.of(1, 2, 3) };
    const external = await createSession(fromFiles, { intraOpThreads: 1 });
    const inMemory = await createSession(build(w, b), { intraOpThreads: 1 });
    const got = (await external.run({ x })).y!;
    assert.deepEqual([...got.data], [...(await inMemory.run({ x })).y!.data]);
    assert.deepEqual([...got.data], [1 - 4 + 9 + 0.25, 0.5 + 8 - 3 - 3]);
    await Promise.all([external.dispose(), inMemory.dispose()]);
  } finally {
    rmSync(dir, { recursive: true });
  }
});
