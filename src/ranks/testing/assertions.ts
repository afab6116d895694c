// Assertions the rank-group test suites share: bitwise equality of decoded tensors (distributed
// output must equal the single-rank decode bit for bit) and a DistVaeError with a given code.

import assert from 'node:assert/strict';
import { DistVaeError } from '../../errors.js';
import type { Tensor } from '../../tensor.js';

export function assertSameBits(actual: Tensor, expected: Tensor, what: string): void {
  assert.deepEqual(actual.dims, expected.dims, `${what}: dims`);
  const a = new Uint32Array(actual.data.buffer, actual.data.byteOffset, actual.data.length);
  const b = new Uint32Array(expected.data.buffer, expected.data.byteOffset, expected.data.length);
  const first = a.findIndex((v, i) => v !== b[i]);
  assert.equal(first, -1, `${what}: first differing value at ${first}: ${actual.data[first]} vs ${expected.data[first]}`);
}

/** Awaits `promise`, which must reject with a DistVaeError of `code` whose message matches; returns it. */
export async function rejectsWith(promise: Promise<unknown>, code: string, pattern: RegExp): Promise<DistVaeError> {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof DistVaeError, `expected a DistVaeError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.match(e.message, pattern);
    return e;
  }
  assert.fail(`expected ${code}`);
}
