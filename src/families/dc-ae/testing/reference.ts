// Float64 references of SANA's multi-scale attention core, written from diffusers'
// SanaMultiscaleLinearAttention: its linear form (v padded with a row of ones, (v·kᵀ)·q, the
// last row the denominator) and its "quadratic" form (kᵀ·q scores normalised over keys, then
// v·scores), per head, for q, k, v already through ReLU and laid out (heads, d, N).

/** One head's operands: `d` × `n` row-major (channel i, position m at i·n + m). */
export interface HeadOperands {
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  d: number;
  n: number;
}

/** diffusers' apply_linear_attention for one head: ([v; 1]·kᵀ)·q, the first d rows over the last (+ eps). Output d × n. */
export function linearForm({ q, k, v, d, n }: HeadOperands, eps: number): Float64Array {
  const vk = new Float64Array((d + 1) * d);
  for (let i = 0; i <= d; i++)
    for (let j = 0; j < d; j++) {
      let s = 0;
      for (let m = 0; m < n; m++) s += (i < d ? v[i * n + m]! : 1) * k[j * n + m]!;
      vk[i * d + j] = s;
    }
  const out = new Float64Array(d * n);
  for (let p = 0; p < n; p++) {
    let den = 0;
    for (let j = 0; j < d; j++) den += vk[d * d + j]! * q[j * n + p]!;
    for (let i = 0; i < d; i++) {
      let num = 0;
      for (let j = 0; j < d; j++) num += vk[i * d + j]! * q[j * n + p]!;
      out[i * n + p] = num / (den + eps);
    }
  }
  return out;
}

/** diffusers' apply_quadratic_attention for one head: scores = kᵀ·q normalised over keys (+ eps), then v·scores. Output d × n. */
export function quadraticForm({ q, k, v, d, n }: HeadOperands, eps: number): Float64Array {
  const scores = new Float64Array(n * n);
  for (let a = 0; a < n; a++)
    for (let p = 0; p < n; p++) {
      let s = 0;
      for (let j = 0; j < d; j++) s += k[j * n + a]! * q[j * n + p]!;
      scores[a * n + p] = s;
    }
  for (let p = 0; p < n; p++) {
    let sum = 0;
    for (let a = 0; a < n; a++) sum += scores[a * n + p]!;
    for (let a = 0; a < n; a++) scores[a * n + p]! /= sum + eps;
  }
  const out = new Float64Array(d * n);
  for (let i = 0; i < d; i++)
    for (let p = 0; p < n; p++) {
      let s = 0;
      for (let a = 0; a < n; a++) s += v[i * n + a]! * scores[a * n + p]!;
      out[i * n + p] = s;
    }
  return out;
}
