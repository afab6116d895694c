// Tolerance checks for tests that compare a float32 result with a float64 reference.
// "Relative 1e-5" means: every element within rtol × (largest |expected| in the tensor). Scaling
// by the tensor's magnitude rather than by each element keeps values near zero (where float32
// rounding of large intermediate sums dominates) from failing a correct result.

import assert from 'node:assert/strict';
import type { NumericTensor } from './reference-ops.js';

export interface Difference {
  maxAbs: number;
  scale: number;
  worstIndex: number;
}

export function difference(actual: NumericTensor, expected: NumericTensor): Difference {
  let maxAbs = 0;
  let scale = 0;
  let worstIndex = -1;
  for (let i = 0; i < expected.data.length; i++) {
    scale = Math.max(scale, Math.abs(expected.data[i]!));
    const d = Math.abs(actual.data[i]! - expected.data[i]!);
    if (!(d <= maxAbs)) {
      maxAbs = d;
      worstIndex = i;
    }
  }
  return { maxAbs, scale, worstIndex };
}

export function assertClose(actual: NumericTensor, expected: NumericTensor, label: string, rtol = 1e-5): void {
  assert.deepEqual([...actual.dims], [...expected.dims], `${label}: dims`);
  assert.equal(actual.data.length, expected.data.length, `${label}: element count`);
  const { maxAbs, scale, worstIndex } = difference(actual, expected);
  const bound = rtol * Math.max(scale, 1e-30);
  assert.ok(
    maxAbs <= bound,
    `${label}: max |actual - expected| = ${maxAbs} at ${worstIndex} (actual ${actual.data[worstIndex]}, expected ${expected.data[worstIndex]}) exceeds ${rtol} x ${scale}`,
  );
}

/** ‖actual − expected‖₂ / ‖expected‖₂ over all elements. */
export function relativeL2Error(actual: NumericTensor, expected: NumericTensor): number {
  let diff = 0;
  let norm = 0;
  for (let i = 0; i < expected.data.length; i++) {
    diff += (actual.data[i]! - expected.data[i]!) ** 2;
    norm += expected.data[i]! ** 2;
  }
  return Math.sqrt(diff / norm);
}

/** Same dims and ‖actual − expected‖ / ‖expected‖ below `tolerance`. */
export function assertRelativeL2(actual: NumericTensor, expected: NumericTensor, label: string, tolerance = 1e-5): void {
  assert.deepEqual([...actual.dims], [...expected.dims], `${label}: dims`);
  const error = relativeL2Error(actual, expected);
  assert.ok(
    error < tolerance,
    `${label}: ‖actual − expected‖/‖expected‖ = ${error} exceeds ${tolerance} (max abs ${difference(actual, expected).maxAbs})`,
  );
}

/** Both criteria at `rtol`: assertClose's max abs against the tensor's scale, and assertRelativeL2. */
export function assertMatchesReference(actual: NumericTensor, expected: NumericTensor, label: string, rtol = 1e-5): void {
  assertClose(actual, expected, label, rtol);
  assertRelativeL2(actual, expected, label, rtol);
}
