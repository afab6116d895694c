// Latents refused before any work: an empty tensor, or NaN / infinite values (counted, with the
// first offending index). Pure, so the page decoder checks latents as the Node one does.

import { DistVaeError } from '../errors.js';
import { stridesOf, type Tensor } from '../tensor.js';

/** Refuses an empty tensor and reports the NaN/Inf count and the first offending index. */
export function validateLatents(latents: Tensor, source: string): void {
  if (latents.data.length === 0) {
    throw new DistVaeError('TENSOR_INVALID', `${source}: latents of shape [${latents.dims.join(', ')}] are empty`);
  }
  let nan = 0;
  let inf = 0;
  let first = -1;
  for (let i = 0; i < latents.data.length; i++) {
    const v = latents.data[i]!;
    if (Number.isFinite(v)) continue;
    if (Number.isNaN(v)) nan++;
    else inf++;
    if (first < 0) first = i;
  }
  if (first < 0) return;
  const index = stridesOf(latents.dims).map((s, d) => Math.floor(first / s) % latents.dims[d]!);
  throw new DistVaeError(
    'TENSOR_INVALID',
    `${source}: latents hold ${nan} NaN and ${inf} infinite values of ${latents.data.length}; ` +
      `the first at flat index ${first}, index [${index.join(', ')}] of shape [${latents.dims.join(', ')}] (value ${latents.data[first]})`,
  );
}
