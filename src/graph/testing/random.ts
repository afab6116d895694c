// Deterministic test data: a float32 tensor of pseudo-random values uniform in [-scale, scale)
// from a 32-bit LCG, so a seed always gives the same tensor on every machine.

import type { Tensor } from '../../tensor.js';

export function seededTensor(dims: readonly number[], seed: number, scale = 1): Tensor {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = ((s >>> 8) / 16777216 * 2 - 1) * scale;
  }
  return { dims: [...dims], data };
}
