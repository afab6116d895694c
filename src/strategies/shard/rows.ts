// Rows of a tensor along its row axis: slicing a band out, and joining halo rows, band and
// token chunks back together. A "row" is `unit` consecutive entries of the axis: 1 for an
// image's row axis, the row width for tokens (rows·columns flattened row-major), so one code
// path serves both layouts. Frame-major tokens (frames, rows, columns flattened) hold one block
// of rows per frame: viewed with the frames split off (`framedView`, no copy), the same code
// slices and joins each frame's rows.

import { DistVaeError } from '../../errors.js';
import type { Tensor } from '../../tensor.js';

function blocks(dims: readonly number[], axis: number): { outer: number; inner: number } {
  let outer = 1;
  let inner = 1;
  for (let i = 0; i < axis; i++) outer *= dims[i]!;
  for (let i = axis + 1; i < dims.length; i++) inner *= dims[i]!;
  return { outer, inner };
}

/**
 * Rows [from, to) of `t` along `axis`, each `unit` entries long: a copy, or `t` itself when the
 * rows are all of it (a band whose halo lies outside the image has nothing to crop).
 */
export function sliceRows(t: Tensor, axis: number, unit: number, from: number, to: number): Tensor {
  const length = t.dims[axis]!;
  if (from < 0 || to < from || to * unit > length) {
    throw new DistVaeError('TENSOR_INVALID', `rows [${from}, ${to}) of ${unit} entries lie outside axis ${axis} of [${t.dims.join(', ')}]`);
  }
  if (from === 0 && to * unit === length) return t;
  const { outer, inner } = blocks(t.dims, axis);
  const span = (to - from) * unit * inner;
  const out = new Float32Array(outer * span);
  for (let o = 0; o < outer; o++) {
    const source = (o * length + from * unit) * inner;
    out.set(t.data.subarray(source, source + span), o * span);
  }
  const dims = [...t.dims];
  dims[axis] = (to - from) * unit;
  return { dims, data: out };
}

/** `t` with axis `axis` viewed as (frames, the rest): the same data, one more axis. */
export function framedView(t: Tensor, axis: number, frames: number): Tensor {
  const n = t.dims[axis]!;
  if (frames < 1 || n % frames !== 0)
    throw new DistVaeError('TENSOR_INVALID', `axis ${axis} of [${t.dims.join(', ')}] does not hold ${frames} frames of equal length`);
  return { dims: [...t.dims.slice(0, axis), frames, n / frames, ...t.dims.slice(axis + 1)], data: t.data };
}

/** A framed view back to its tokens: axes `axis` and `axis` + 1 merged (no copy). */
export function mergeFrames(t: Tensor, axis: number): Tensor {
  return { dims: [...t.dims.slice(0, axis), t.dims[axis]! * t.dims[axis + 1]!, ...t.dims.slice(axis + 2)], data: t.data };
}

/** `parts` joined along `axis` (equal on every other axis). */
export function concatAxis(parts: readonly Tensor[], axis: number): Tensor {
  const nonEmpty = parts.filter((p) => p.dims[axis]! > 0);
  if (nonEmpty.length === 1) return nonEmpty[0]!;
  const first = parts[0]!;
  for (const p of parts) {
    if (p.dims.length !== first.dims.length || p.dims.some((d, i) => i !== axis && d !== first.dims[i])) {
      throw new DistVaeError('TENSOR_INVALID', `cannot join [${p.dims.join(', ')}] to [${first.dims.join(', ')}] along axis ${axis}`);
    }
  }
  const { outer, inner } = blocks(first.dims, axis);
  const total = parts.reduce((n, p) => n + p.dims[axis]!, 0);
  const out = new Float32Array(outer * total * inner);
  let offset = 0;
  for (const p of parts) {
    const span = p.dims[axis]! * inner;
    for (let o = 0; o < outer; o++) out.set(p.data.subarray(o * span, (o + 1) * span), o * total * inner + offset);
    offset += span;
  }
  const dims = [...first.dims];
  dims[axis] = total;
  return { dims, data: out };
}
