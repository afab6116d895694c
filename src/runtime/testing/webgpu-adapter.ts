// Whether this machine has a WebGPU adapter for onnxruntime-node, asked once per test process
// (the provider probe is memoised), and what a test that needs one does without it: skip and say
// why — except under CI=true, where .ci/run installs a Vulkan driver (Mesa's lavapipe), so a
// missing adapter is a broken install and fails the test instead of turning it into a silent skip.

import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { checkProvider } from '../session.js';

let probed: Promise<string | null> | null = null;

/** Null when a WebGPU adapter initialises here, else why not (onnxruntime's message). */
export function webgpuUnavailable(): Promise<string | null> {
  probed ??= checkProvider({ provider: 'webgpu' }).then(
    () => null,
    (e: unknown) => (e instanceof DistVaeError ? e.message : String(e)),
  );
  return probed;
}

/** True when the test can run on WebGPU; otherwise skips it (false), or fails it under CI=true. */
export async function needsWebgpu(t: TestContext): Promise<boolean> {
  const why = await webgpuUnavailable();
  if (why === null) return true;
  assert.notEqual(process.env.CI, 'true', `CI=true but there is no WebGPU adapter (.ci/run installs lavapipe): ${why}`);
  t.skip(`no WebGPU adapter on this machine: ${why}`);
  return false;
}
