// The session contract, checked by the compiler: the Node and page session modules (swapped by
// package.json's `browser` map, which tsc cannot follow) both implement SessionModule, and the
// providers the typed requests give a device id (webgpu: an adapter) are the ones EXECUTION_PROVIDERS says take one.
// A drift in either fails type-checking (`npm test` runs tsc first); the tests below only check
// that the requests users' strings become are the typed ones.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXECUTION_PROVIDERS, providerRequest } from './providers.js';
import type { DeviceProviderName, ProviderName, ProviderRequest, SessionModule } from './session-types.js';

type Implements<M extends SessionModule> = M;
type Holds<T extends true> = T;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type TakesDeviceId = { [K in ProviderName]: (typeof EXECUTION_PROVIDERS)[K]['takesDeviceId'] extends true ? K : never }[ProviderName];

export type SessionModulesChecked = [
  Implements<typeof import('./session.js')>,
  Implements<typeof import('./web-session.js')>,
  Holds<Same<TakesDeviceId, DeviceProviderName | 'webgpu'>>,
];

test('a user provider name and device id become the typed request onnxruntime takes', () => {
  assert.equal(providerRequest('cpu'), 'cpu');
  assert.deepEqual(providerRequest('cuda', 1), { name: 'cuda', deviceId: 1 } satisfies ProviderRequest);
  // The compiler refuses what the boundary refuses at run time.
  // @ts-expect-error no device id for the CPU provider
  const cpuWithDevice: ProviderRequest = { name: 'cpu', deviceId: 0 };
  // @ts-expect-error preferredLayout is a WebGPU setting
  const cudaWithLayout: ProviderRequest = { name: 'cuda', preferredLayout: 'NHWC' };
  assert.ok(cpuWithDevice && cudaWithLayout);
  // A webgpu device id is an adapter this process is pinned to (runtime/devices.ts), never passed to onnxruntime.
  assert.deepEqual(providerRequest('webgpu', 1), { name: 'webgpu', adapter: 1 } satisfies ProviderRequest);
  assert.throws(
    () => providerRequest('coreml', 0),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && /only cuda, tensorrt, webgpu, dml take one/.test(e.message),
  );
});
