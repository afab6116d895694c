// Reads the latents to decode: a .npy file; a .safetensors file (tensor `latents`, the file's
// only tensor, or the one named by `file.safetensors:name`); or a ComfyUI `.latent` file (a
// safetensors file holding `latent_tensor`). Empty tensors and non-finite values are refused
// before any work starts. Rank and channel checks against a family happen where the family is
// known; a pipeline's scaling is io/latent-scaling.ts.

import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DistVaeError, reason, refuse } from '../errors.js';
import { withFileSource } from '../bytes/file-source.js';
import type { Tensor } from '../tensor.js';
import { openSafetensors } from '../weights/safetensors.js';
import { validateLatents } from './latents-check.js';
import { readNpy } from './npy.js';

export { validateLatents };

/** The tensor name docs/design.md §9 fixes for latents in a .safetensors file. */
export const LATENTS_KEY = 'latents';

/** ComfyUI's SaveLatent keys: the latent, and the marker of the current (unscaled) format. */
export const COMFY_LATENT_KEY = 'latent_tensor';
export const COMFY_FORMAT_MARKER = 'latent_format_version_0';
/**
 * ComfyUI's LoadLatent multiplies a file without the marker by 1 / 0.18215: such files predate
 * the marker and hold SD 1.x latents multiplied by its scaling factor.
 */
const COMFY_LEGACY_SCALE = 0.18215;

/** Options of `readLatents`. */
export interface ReadLatentsOptions {
  /** A line worth telling the user about how the file was read (a legacy ComfyUI .latent rescaled). */
  onNote?: (text: string) => void;
}

/**
 * Reads latents from `spec`: a path, or `path.safetensors:tensor` to pick a tensor by name.
 * Returns float32 data in the stored layout ((B, C, H, W) or (B, C, F, H, W)).
 */
export async function readLatents(spec: string, options: ReadLatentsOptions = {}): Promise<Tensor> {
  const { path, tensor } = splitLatentsSpec(spec);
  const lower = path.toLowerCase();
  let latents: Tensor;
  if (lower.endsWith('.npy') && tensor === undefined) {
    latents = readNpy(path);
  } else if (lower.endsWith('.safetensors') || lower.endsWith('.latent')) {
    latents = await readSafetensorsLatents(path, tensor, lower.endsWith('.latent'), options);
  } else {
    refuse(
      'INVALID_ARGUMENT',
      reason('INVALID_ARGUMENT', 'latents', spec, 'a .npy, .safetensors (optionally file.safetensors:tensor) or ComfyUI .latent file'),
    );
  }
  validateLatents(latents, spec);
  return { dims: latents.dims, data: latents.data };
}

const LATENT_FILE = /\.(npy|safetensors|latent)$/i;

/**
 * The latent files an argument names: a folder (its .npy / .safetensors / .latent files), a
 * glob whose last part holds `*` or `?` (matched in its folder), or one file as given. Sorted;
 * a folder or glob matching nothing is refused.
 */
export function expandLatentsArg(arg: string): string[] {
  const isFolder = existsSync(arg) && statSync(arg).isDirectory();
  const name = basename(arg);
  if (!isFolder && !/[*?]/.test(name)) return [arg];
  const folder = isFolder ? arg : dirname(arg);
  const pattern = isFolder
    ? null
    : new RegExp(
        `^${name
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.')}$`,
      );
  const files =
    existsSync(folder) && statSync(folder).isDirectory()
      ? readdirSync(folder)
          .filter((f) => LATENT_FILE.test(f) && (!pattern || pattern.test(f)))
          .sort()
      : [];
  if (files.length === 0) {
    const r = reason(
      'NO_LATENTS',
      'latents',
      arg,
      'a folder or glob matching .npy / .safetensors / .latent files',
      `--latents ${arg} matches no .npy, .safetensors or .latent file`,
    );
    throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
  }
  return files.map((f) => join(folder, f));
}

/** The output stem of a latent file: its name without the extension. */
export function latentsStem(path: string): string {
  return basename(path).replace(LATENT_FILE, '');
}

/** `file.safetensors:name` names a tensor, unless a file of that whole name exists. */
function splitLatentsSpec(spec: string): { path: string; tensor?: string } {
  const m = /^(.+\.(?:safetensors|latent)):([^/\\]+)$/i.exec(spec);
  if (!m || existsSync(spec)) return { path: spec };
  return { path: m[1]!, tensor: m[2]! };
}

async function readSafetensorsLatents(
  path: string,
  tensor: string | undefined,
  comfy: boolean,
  options: ReadLatentsOptions,
): Promise<Tensor> {
  return withFileSource(path, async (source) => {
    const file = await openSafetensors(source);
    const names = [...file.entries.keys()];
    const listed = names.map((k) => JSON.stringify(k)).join(', ') || 'none';
    if (tensor !== undefined) {
      if (!file.entries.has(tensor))
        throw new DistVaeError('FILE_INVALID', `${path}: no tensor named ${JSON.stringify(tensor)} (tensors in the file: ${listed})`);
      return file.readTensor(tensor);
    }
    if (comfy || file.entries.has(COMFY_LATENT_KEY)) {
      if (!file.entries.has(COMFY_LATENT_KEY))
        throw new DistVaeError(
          'FILE_INVALID',
          `${path}: a ComfyUI .latent file holds "${COMFY_LATENT_KEY}" (tensors in the file: ${listed})`,
        );
      const t = await file.readTensor(COMFY_LATENT_KEY);
      if (file.entries.has(COMFY_FORMAT_MARKER)) return t;
      options.onNote?.(
        `note: ${path} has no "${COMFY_FORMAT_MARKER}" tensor, so it is read as an older ComfyUI .latent (SD 1.x latents times 0.18215) and rescaled by 1/${COMFY_LEGACY_SCALE}, as ComfyUI's LoadLatent does`,
      );
      return { dims: t.dims, data: t.data.map((v) => v / COMFY_LEGACY_SCALE) };
    }
    // A file holding exactly one tensor is unambiguous, whatever its name.
    const name = file.entries.has(LATENTS_KEY) ? LATENTS_KEY : names.length === 1 ? names[0]! : undefined;
    if (name === undefined) {
      throw new DistVaeError(
        'FILE_INVALID',
        `${path}: no tensor named "${LATENTS_KEY}" (tensors in the file: ${listed}); pick one with ${path}:<name>`,
      );
    }
    return file.readTensor(name);
  });
}
