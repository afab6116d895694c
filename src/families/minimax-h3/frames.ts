// Frame slicing, padding and concatenation of 5-D (B, C, T, H, W) tensors: what MiniMax-H3's
// clip loops do to time in both directions (the decoder's latent clips, the encoder's 17-frame
// pixel clips), as diffusers' `x[:, :, a:b]`, `x[:, :, -1:].repeat(...)` and `torch.cat(dim=2)`.

import type { Tensor } from '../../tensor.js';

/** Frames [start, start + count) of a (B, C, T, h, w) tensor, past the end clipped. */
export function framesOf(z: Tensor, start: number, count: number): Tensor {
  const [b, c, t, h, w] = z.dims as [number, number, number, number, number];
  const n = Math.min(count, t - start);
  const plane = h * w;
  const data = new Float32Array(b * c * n * plane);
  for (let p = 0; p < b * c; p++) data.set(z.data.subarray((p * t + start) * plane, (p * t + start + n) * plane), p * n * plane);
  return { dims: [b, c, n, h, w], data };
}

/** z with its last frame repeated `pad` more times (diffusers' `z[:, :, -1:].repeat`). */
export function padFrames(z: Tensor, pad: number): Tensor {
  if (pad === 0) return z;
  const [b, c, t, h, w] = z.dims as [number, number, number, number, number];
  const plane = h * w;
  const data = new Float32Array(b * c * (t + pad) * plane);
  for (let p = 0; p < b * c; p++) {
    data.set(z.data.subarray(p * t * plane, (p + 1) * t * plane), p * (t + pad) * plane);
    const last = z.data.subarray((p * t + t - 1) * plane, (p * t + t) * plane);
    for (let k = 0; k < pad; k++) data.set(last, (p * (t + pad) + t + k) * plane);
  }
  return { dims: [b, c, t + pad, h, w], data };
}

/** Tensors of the same (B, C, ·, h, w) joined along frames (`torch.cat(dim=2)`). */
export function concatFrames(parts: readonly Tensor[]): Tensor {
  if (parts.length === 1) return parts[0]!;
  const [b, c, , h, w] = parts[0]!.dims as [number, number, number, number, number];
  const plane = h * w;
  const total = parts.reduce((n, t) => n + t.dims[2]!, 0);
  const data = new Float32Array(b * c * total * plane);
  let at = 0;
  for (const part of parts) {
    const t = part.dims[2]!;
    for (let p = 0; p < b * c; p++) data.set(part.data.subarray(p * t * plane, (p + 1) * t * plane), (p * total + at) * plane);
    at += t;
  }
  return { dims: [b, c, total, h, w], data };
}
