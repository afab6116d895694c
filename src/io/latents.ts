// Reads the latents to decode from a .npy file or a .safetensors file (tensor `latents`, or
// the file's only tensor), and refuses empty tensors and non-finite values before any work
// starts. Rank and channel checks against a family happen where the family is known.

import { DistVaeError, reason, refuse } from '../errors.js';
import { stridesOf, type Tensor } from '../tensor.js';
import { readSafetensors } from '../weights/safetensors.js';
import { readNpy } from './npy.js';

/** The tensor name DESIGN §9 fixes for latents in a .safetensors file. */
export const LATENTS_KEY = 'latents';

export function readLatents(path: string): Tensor {
  const lower = path.toLowerCase();
  let latents: Tensor;
  if (lower.endsWith('.npy')) {
    latents = readNpy(path);
  } else if (lower.endsWith('.safetensors')) {
    const { tensors } = readSafetensors(path);
    // A file holding exactly one tensor is unambiguous, whatever its name.
    const only = tensors.size === 1 ? [...tensors.values()][0] : undefined;
    const found = tensors.get(LATENTS_KEY) ?? only;
    if (!found) {
      const keys = [...tensors.keys()].map((k) => JSON.stringify(k)).join(', ') || 'none';
      throw new DistVaeError('FILE_INVALID', `${path}: no tensor named "${LATENTS_KEY}" (tensors in the file: ${keys})`);
    }
    latents = found;
  } else {
    refuse('INVALID_ARGUMENT', reason('INVALID_ARGUMENT', 'latents', path, 'a .npy or .safetensors file'));
  }
  validateLatents(latents, path);
  return { dims: latents.dims, data: latents.data };
}

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
