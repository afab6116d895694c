// WebGPU adapters from Node: the device-select layer's listing read into adapters (a two-GPU
// listing as Mesa prints it — several GPUs are otherwise untested), ids this machine lacks and
// identical GPUs the layer cannot tell apart refused with every reason at once, the environment
// that pins a process, and — where an adapter exists — the listing of this machine and a session
// on adapter 0 (skips without an adapter, fails under CI=true).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphBuilder } from '../graph/builder.js';
import { adapterEnvironment, adapterReasons, listAdapters, parseDeviceSelectList, type AdapterListing } from './devices.js';
import { providerRequest } from './providers.js';
import { createSession } from './session.js';
import { needsWebgpu } from './testing/webgpu-adapter.js';

// As Mesa 25's device-select layer prints it (stderr), with a discrete GPU added.
const LISTED = `selectable devices:
  GPU 0: 10de:2330 "NVIDIA H100 80GB HBM3" discrete GPU
  GPU 1: 10de:2330 "NVIDIA H100 80GB HBM3" discrete GPU
  GPU 2: 10005:0 "llvmpipe (LLVM 15.0.6, 256 bits)" CPU
`;

test("the device-select layer's listing becomes adapters with their PCI ids, vendor and type", () => {
  const adapters = parseDeviceSelectList(LISTED);
  assert.deepEqual(
    adapters.map((a) => [a.id, a.name, a.vendorId, a.deviceId, a.vendor, a.type, a.backend]),
    [
      [0, 'NVIDIA H100 80GB HBM3', '10de', '2330', 'NVIDIA', 'discrete GPU', 'vulkan'],
      [1, 'NVIDIA H100 80GB HBM3', '10de', '2330', 'NVIDIA', 'discrete GPU', 'vulkan'],
      [2, 'llvmpipe (LLVM 15.0.6, 256 bits)', '10005', '0', 'Mesa (software)', 'CPU', 'vulkan'],
    ],
  );
  assert.ok(
    adapters.every((a) => a.limits === null && a.shaderF16 === null),
    'limits and features are not readable',
  );
  assert.deepEqual(parseDeviceSelectList('Warning: something else\n'), []);
  assert.deepEqual(adapterEnvironment(adapters[2]!), { MESA_VK_DEVICE_SELECT: '10005:0', MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE: '1' });
});

test('unknown ids and identical GPUs the layer cannot tell apart are refused, every one named', () => {
  const listing: AdapterListing = { method: 'device-select', adapters: parseDeviceSelectList(LISTED), notes: [] };
  assert.deepEqual(adapterReasons([0, 2, 0, undefined], listing), []);
  const reasons = adapterReasons([1, 7], listing);
  assert.deepEqual(
    reasons.map((r) => [r.code, r.field, r.value]),
    [
      ['DEVICE_INVALID', 'devices[0]', 1],
      ['DEVICE_INVALID', 'devices[1]', 7],
    ],
  );
  assert.match(reasons[0]!.message, /same vendor:device id \(10de:2330\) as adapter 0/);
  assert.match(reasons[1]!.message, /no such WebGPU adapter here; valid: .*0 \(NVIDIA H100 80GB HBM3\), 1 .*2 \(llvmpipe/);
  const none: AdapterListing = { method: 'none', adapters: [], notes: [] };
  assert.match(adapterReasons([0], none, 'deviceId')[0]!.message, /^deviceId 0: no such WebGPU adapter here; valid: no id/);
});

test('this machine: the adapters listed, and a session pinned to adapter 0 runs', async (t) => {
  if (!(await needsWebgpu(t))) return;
  const listing = await listAdapters();
  t.diagnostic(`${listing.method}: ${listing.adapters.map((a) => `${a.id} ${a.name}`).join('; ')}`);
  assert.ok(listing.adapters.length >= 1 && listing.adapters[0]!.id === 0);
  if (process.env.CI === 'true')
    assert.equal(listing.method, 'device-select', 'CI installs Mesa, whose device-select layer lists lavapipe');
  const g = new GraphBuilder('pinned');
  g.output('y', g.relu(g.input('x', [2])), [2]);
  const session = await createSession(g.toModelBytes(), { provider: providerRequest('webgpu', 0) });
  try {
    assert.deepEqual([...(await session.run({ x: { dims: [2], data: Float32Array.of(-1, 2) } })).y!.data], [0, 2]);
  } finally {
    await session.dispose();
  }
  await assert.rejects(
    createSession(g.toModelBytes(), { provider: providerRequest('webgpu', listing.adapters.length) }),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && /no such WebGPU adapter here/.test(e.message),
  );
});
