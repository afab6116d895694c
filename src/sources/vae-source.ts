// What a user names as a VAE — a diffusers folder, a single weights file plus a family, or
// synthetic weights for a config — resolved to its family, resolved config and weights, without
// onnxruntime. A `VaeSource` is plain data, so a rank in another thread, process or machine can
// read the same VAE.

import { reason, refuse } from '../errors.js';
import { createVae, resolveFamily, resolveFamilyConfig } from '../families/registry.js';
import type { FamilyRuntime } from '../families/runtime-types.js';
import { runtimeOf } from '../families/runtimes.js';
import type { FamilySpec, RawConfig, ResolvedConfig, VaeSpec } from '../families/types.js';
import { firstNonFinite, type Tensor } from '../tensor.js';
import { checkWeightBytes } from '../weights/budget.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { readConfigJson } from './config-file.js';
import { withFileSource } from './file-source.js';
import { partOf, readBoundHalf, type VaePart } from './bind-half.js';
import { locateVae, type VaeLocation } from './locate.js';
import { looksLikeTae, singleFileLayout, type SingleFileLayout } from './single-file.js';
import { openWeights } from './weights-file.js';

export { DIFFUSERS_WEIGHTS_FILE } from './locate.js';

/** The families an original single-file layout can hold (the others' files are read by their diffusers keys). */
const SINGLE_FILE_FAMILIES: ReadonlySet<string> = new Set(['autoencoder-kl', 'flux2'] satisfies SingleFileLayout['family'][]);

/** Where a VAE's architecture and weights come from (serialisable). */
export type VaeSource =
  /**
   * A diffusers VAE folder, a pipeline folder, a Hub repo id `org/name[@revision]` in the local
   * cache, or a single weights file (.safetensors / .pth) with `family` (and optionally
   * `config`); `subfolder` picks a pipeline component other than `vae`, `variant` a weights
   * variant such as `fp16` (see locate.ts for diffusers' rule when it is missing).
   */
  | { path: string; family?: string; config?: RawConfig; subfolder?: string; variant?: string }
  /** Seeded synthetic weights for an architecture config. */
  | { family?: string; config?: RawConfig; weights: 'synthetic'; seed: number };

function isSynthetic(source: VaeSource): source is Extract<VaeSource, { weights: 'synthetic' }> {
  return (source as { weights?: unknown }).weights === 'synthetic';
}

/** Where a path source points (file, VAE folder, pipeline component, cached repo). */
export function locationOf(source: Extract<VaeSource, { path: string }>): VaeLocation {
  return locateVae(source.path, { ...(source.subfolder !== undefined ? { subfolder: source.subfolder } : {}), ...(source.variant !== undefined ? { variant: source.variant } : {}) });
}

/** The VAE folder's config.json merged with explicit overrides, or the explicit config alone. */
export function sourceConfig(source: VaeSource): RawConfig | undefined {
  if (isSynthetic(source)) return source.config;
  const location = locationOf(source);
  if (location.kind === 'folder') return { ...readConfigJson(location.folder), ...(source.config ?? {}) };
  return source.config;
}

/**
 * The planner's view of a source without reading weights, so a request can be checked before
 * loading; null for a bare weights file with no config (its variant is known only from its keys).
 * A config whose declared weights cannot fit the default memory budget is refused (CONFIG_INVALID).
 */
export function vaeSpecOfSource(source: VaeSource): VaeSpec | null {
  const config = sourceConfig(source);
  if (config === undefined) return null;
  const vae = createVae(source.family, config);
  // The weights the config declares are judged before a plan is made for it.
  checkWeightBytes(runtimeOf(vae.family).decoderParams(vae.config), `the ${vae.family.name} decoder`);
  return vae;
}

export type { VaePart };

/** Reads the architecture and the weights of one half (default: the decoder) a source names (no onnxruntime involved). */
export async function readVaeSource(source: VaeSource, part: VaePart = 'decoder'): Promise<{ family: FamilySpec; config: ResolvedConfig; runtime: FamilyRuntime; weights: Map<string, Tensor> }> {
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
  const location = locationOf(source);
  const raw = sourceConfig(source);
  const weightsPath = location.weightsPath;
  return withFileSource(weightsPath, async (file) => {
    const reader = await openWeights(file);
    // A bare file in an original layout (ldm, Flux.2) is the family of its layout, its config from
    // its shapes; one with TAE keys is a TAE.
    const layout = location.kind === 'file' && part === 'decoder' && (source.family === undefined || SINGLE_FILE_FAMILIES.has(source.family)) ? singleFileLayout(reader.entries) : null;
    const inferred = source.family ?? layout?.family ?? (location.kind === 'file' && raw === undefined && looksLikeTae(reader.entries.keys()) ? 'tae' : undefined);
    if (location.kind === 'file' && inferred === undefined && raw === undefined) {
      refuse('INVALID_ARGUMENT', reason('FAMILY_REQUIRED', 'family', undefined, 'a family for a bare weights file', `${path} is a bare weights file: pass a family (--family) to say which decoder it holds`));
    }
    const family = resolveFamily(inferred, raw);
    const runtime = runtimeOf(family);
    const { config, weights } = await readBoundHalf(family, runtime, raw, reader, {
      part,
      source: weightsPath,
      layout,
      checkParams: (params) => checkWeightBytes(params, `the ${family.name} ${part} of ${weightsPath}`),
    });
    checkFiniteWeights(weights, weightsPath);
    return { family, config, runtime, weights };
  });
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
