// Where an encode's latents go: a .npy, a .safetensors (tensor `latents`, docs/design.md §9) or a
// ComfyUI .latent (`latent_tensor` beside the empty `latent_format_version_0` marker ComfyUI's
// SaveLatent writes, so its LoadLatent reads them unscaled) — each written atomically (a
// temporary file renamed on success), so a failed write leaves nothing. readLatents reads all
// three back. ComfyUI scales latents itself when it samples, so a .latent holds raw latents and
// a pipeline-scaled .latent is refused.

import { reason, refuse, type Reason } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { COMFY_FORMAT_MARKER, COMFY_LATENT_KEY, LATENTS_KEY } from './latents.js';
import { writeNpy } from './npy.js';

/** The latent files an encode writes. */
export const LATENT_OUTPUT_EXTENSIONS = ['.npy', '.safetensors', '.latent'] as const;

/** What is written beside the latents. */
export interface LatentsOutputOptions {
  /** The latents are a pipeline's (scaled); refused for a ComfyUI .latent, which holds raw latents. */
  scaled?: boolean;
}

const extensionOf = (path: string): string | undefined => LATENT_OUTPUT_EXTENSIONS.find((e) => path.toLowerCase().endsWith(e));

/** The refusals of a latents output path (`option` as the caller spells it): its extension, a scaled .latent. */
export function latentsOutputReasons(path: string, options: LatentsOutputOptions = {}, option = 'out', scaledOption = 'scaled'): Reason[] {
  const ext = extensionOf(path);
  if (ext === undefined) {
    return [
      reason(
        'INVALID_ARGUMENT',
        option,
        path,
        `a path ending in ${LATENT_OUTPUT_EXTENSIONS.join(', ')}`,
        `${option} ${JSON.stringify(path)} must end in ${LATENT_OUTPUT_EXTENSIONS.join(', ')}`,
      ),
    ];
  }
  if (ext === '.latent' && options.scaled) {
    return [
      reason(
        'INVALID_ARGUMENT',
        scaledOption,
        true,
        'raw latents in a ComfyUI .latent',
        `${option} ${path} is a ComfyUI .latent, which holds raw latents (ComfyUI scales them when it samples); drop ${scaledOption} or write .npy / .safetensors`,
      ),
    ];
  }
  return [];
}

/** Writes latents to `path` in the format its extension names (see the header), atomically. */
export function writeLatentsFile(path: string, latents: Tensor, options: LatentsOutputOptions = {}): void {
  const reasons = latentsOutputReasons(path, options);
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  const ext = extensionOf(path)!;
  if (ext === '.npy') writeNpy(path, latents);
  else if (ext === '.safetensors') writeSafetensors(path, { [LATENTS_KEY]: latents });
  else writeSafetensors(path, { [COMFY_LATENT_KEY]: latents, [COMFY_FORMAT_MARKER]: { dims: [0], data: new Float32Array(0) } });
}
