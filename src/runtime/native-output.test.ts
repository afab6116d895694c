// The GPU drivers' own stderr lines (as Dawn, the Vulkan loader and Mesa print them, copied from
// real runs) are recognised and left out of a child's forwarded stderr unless shown; every
// other line — distvae's messages, Node's warnings, a JavaScript stack — passes untouched.

import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { forwardFilteredStderr, isNativeOutputLine } from './native-output.js';

const NATIVE = [
  'Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 1000000 to 16 to fit dynamic offset allocation limit.',
  'Warning: maxDynamicStorageBuffersPerPipelineLayout artificially reduced from 1000000 to 16 to fit dynamic offset allocation limit.',
  'Warning: vkCreateInstance: Found no drivers!',
  'Warning: vkCreateInstance failed with VK_ERROR_INCOMPATIBLE_DRIVER',
  '    at CheckVkSuccessImpl (/build/Release/_deps/dawn-src/src/dawn/native/vulkan/VulkanError.cpp:106)',
  "ERROR: [Loader Message] Code 0 : loader_scanned_icd_add: Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0",
  'WARNING | DRIVER:    terminator_CreateInstance: Failed to CreateInstance in ICD 0.',
  'WARNING: lavapipe is not a conformant vulkan implementation, testing use only.',
  'MESA-LOADER: failed to open swrast: /usr/lib/dri/swrast_dri.so',
];

const OURS = [
  "PROVIDER_UNAVAILABLE: execution provider 'webgpu' is not available: it failed to initialise on this machine",
  'note: loaded the pipeline through its vae/ component',
  '(node:1234) Warning: Closing file descriptor 21 on garbage collection',
  '    at decode (file:///work/src/decode/engine.ts:10:5)',
  'warning: --window 8x8 over the default budget',
];

test('the drivers’ own lines are recognised; distvae’s, Node’s and JavaScript stacks are not', () => {
  assert.deepEqual(
    NATIVE.filter((l) => !isNativeOutputLine(l)),
    [],
  );
  assert.deepEqual(
    OURS.filter((l) => isNativeOutputLine(l)),
    [],
  );
});

async function forwarded(text: string[], show: boolean): Promise<string> {
  const stream = new PassThrough();
  let out = '';
  forwardFilteredStderr(stream, (t) => (out += t), show);
  const all = text.join('\n') + '\n';
  // In pieces that split lines, as a pipe delivers them.
  for (let i = 0; i < all.length; i += 7) stream.write(all.slice(i, i + 7));
  stream.end();
  await new Promise((done) => stream.on('end', done));
  return out;
}

test('a child’s stderr is forwarded without the drivers’ lines (and the blank line after a located one), or whole when shown', async () => {
  const lines = [OURS[0]!, NATIVE[2]!, NATIVE[3]!, NATIVE[4]!, '', OURS[2]!, NATIVE[0]!, OURS[3]!];
  assert.equal(await forwarded(lines, false), [OURS[0], OURS[2], OURS[3]].join('\n') + '\n');
  assert.equal(await forwarded(lines, true), lines.join('\n') + '\n');
});
