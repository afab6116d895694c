// What a user names as a VAE — a diffusers folder, a single weights file plus a family, or
// synthetic weights for a config — resolved to its family, resolved config and weights, without
// onnxruntime. A `VaeSource` is plain data, so a rank in another thread, process or machine can
// read the same VAE.

import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { reason, refuse } from '../errors.js';
import { createVae, resolveFamily, resolveFamilyConfig } from '../families/registry.js';
import type { FamilyEncoder, FamilyRuntime } from '../families/runtime-types.js';
import { runtimeOf } from '../families/runtimes.js';
import type { FamilySpec, RawConfig, ResolvedConfig, VaeSpec } from '../families/types.js';
import { firstNonFinite, type Tensor } from '../tensor.js';
import { bindWeights } from '../weights/bind.js';
import { checkWeightBytes } from '../weights/budget.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { readConfigJson } from './config-file.js';
import { readWeights } from './weights-file.js';

export const DIFFUSERS_WEIGHTS_FILE = 'diffusion_pytorch_model.safetensors';

/** Where a VAE's architecture and weights come from (serialisable). */
export type VaeSource =
  /** A diffusers folder, or a single weights file (.safetensors / .pth) with `family` (and optionally `config`). */
  | { path: string; family?: string; config?: RawConfig }
  /** Seeded synthetic weights for an architecture config. */
  | { family?: string; config?: RawConfig; weights: 'synthetic'; seed: number };

function isSynthetic(source: VaeSource): source is Extract<VaeSource, { weights: 'synthetic' }> {
  return (source as { weights?: unknown }).weights === 'synthetic';
}

/** The folder's config.json merged with explicit overrides, or the explicit config alone. */
export function sourceConfig(source: VaeSource): RawConfig | undefined {
  if (!isSynthetic(source) && existsSync(source.path) && statSync(source.path).isDirectory()) return { ...readConfigJson(source.path), ...(source.config ?? {}) };
  return source.config;
}

/**
 * The planner's view of a source without reading weights, so a request can be checked before
 * loading; null for a bare weights file with no config (its variant is known only from its keys).
 */
export function vaeSpecOfSource(source: VaeSource): VaeSpec | null {
  const config = sourceConfig(source);
  if (!isSynthetic(source) && config === undefined && !(existsSync(source.path) && statSync(source.path).isDirectory())) return null;
  return createVae(source.family, config);
}

/** Which half of an autoencoder a source is read for. */
export type VaePart = 'decoder' | 'encoder';

/** What reading a source needs of one half: its parameters, the config its weights imply, the keys it ignores. */
function partOf(family: FamilySpec, runtime: FamilyRuntime, part: VaePart): Pick<FamilyEncoder, 'params' | 'configFromWeights' | 'ignoredKeyPrefixes'> {
  if (part === 'decoder') {
    return { params: (c) => runtime.decoderParams(c), configFromWeights: runtime.configFromWeights, ignoredKeyPrefixes: family.ignoredKeyPrefixes };
  }
  if (!runtime.encoder) {
    refuse('UNSUPPORTED', reason('NO_ENCODER', 'family', family.name, 'a family with an encoder (tae)', `the ${family.name} family has no encoder here; encoding is available for tae`));
  }
  return runtime.encoder;
}

/** Reads the architecture and the weights of one half (default: the decoder) a source names (no onnxruntime involved). */
export function readVaeSource(source: VaeSource, part: VaePart = 'decoder'): { family: FamilySpec; config: ResolvedConfig; runtime: FamilyRuntime; weights: Map<string, Tensor> } {
  if (isSynthetic(source)) {
    const family = resolveFamily(source.family, source.config);
    const runtime = runtimeOf(family);
    const half = partOf(family, runtime, part);
    const config = resolveFamilyConfig(family, source.config);
    if (!Number.isSafeInteger(source.seed)) {
      refuse('INVALID_ARGUMENT', reason('SEED_INVALID', 'seed', source.seed, 'an integer'));
    }
    const params = half.params(config);
    checkWeightBytes(params, `the ${family.name} ${part}`);
    return { family, config, runtime, weights: syntheticWeights(params, source.seed) };
  }
  const path = source.path;
  if (!existsSync(path)) {
    refuse('FILE_NOT_FOUND', reason('FILE_NOT_FOUND', 'vae', path, 'a diffusers folder or a weights file', `VAE not found: ${path}`));
  }
  const raw = sourceConfig(source);
  let weightsPath = path;
  if (statSync(path).isDirectory()) {
    weightsPath = join(path, DIFFUSERS_WEIGHTS_FILE);
    if (!existsSync(weightsPath)) {
      refuse('FILE_NOT_FOUND', reason('WEIGHTS_NOT_FOUND', 'vae', weightsPath, `${DIFFUSERS_WEIGHTS_FILE} inside the folder`, `the diffusers folder ${path} has no ${DIFFUSERS_WEIGHTS_FILE}`));
    }
  } else if (source.family === undefined && raw === undefined) {
    refuse('INVALID_ARGUMENT', reason('FAMILY_REQUIRED', 'family', undefined, 'a family for a bare weights file', `${path} is a bare weights file: pass a family (--family) to say which decoder it holds`));
  }
  const family = resolveFamily(source.family, raw);
  const runtime = runtimeOf(family);
  const half = partOf(family, runtime, part);
  const stored = readWeights(weightsPath);
  const weights = runtime.renameKeys ? runtime.renameKeys(stored) : stored;
  const implied = half.configFromWeights?.(weights);
  const config = resolveFamilyConfig(family, implied ? { ...implied, ...(raw ?? {}) } : raw);
  const params = half.params(config);
  checkWeightBytes(params, `the ${family.name} ${part} of ${weightsPath}`);
  const bound = bindWeights(params, weights, { ignorePrefixes: half.ignoredKeyPrefixes, source: weightsPath });
  checkFiniteWeights(bound, weightsPath);
  return { family, config, runtime, weights: bound };
}

/** A NaN or Infinity in the weights would decode into an all-NaN sample (a black image): refused at load, naming the tensor. */
function checkFiniteWeights(weights: ReadonlyMap<string, Tensor>, source: string): void {
  for (const [name, t] of weights) {
    const at = firstNonFinite(t.data);
    if (at < 0) continue;
    refuse('FILE_INVALID', reason('WEIGHT_NOT_FINITE', name, t.data[at], 'finite values', `weight ${name} in ${source} holds ${t.data[at]} at element ${at} of [${t.dims.join(', ')}]: the checkpoint is corrupt (or was saved after training diverged)`));
  }
}

/** A source from a path (with an optional family) or as given. */
export function vaeSourceOf(source: string | VaeSource, family: string | undefined): VaeSource {
  return typeof source === 'string' ? { path: source, ...(family !== undefined ? { family } : {}) } : source;
}
