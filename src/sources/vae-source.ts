// What a user names as a VAE — a diffusers folder, a single weights file plus a family, or
// synthetic weights for a config — resolved to its family, resolved config and weights, without
// onnxruntime. A `VaeSource` is plain data, so a rank in another thread, process or machine can
// read the same VAE.

import { reason, refuse } from '../errors.js';
import { planningVae, refuseFamilyRequired, resolveFamily, resolveFamilyConfig, runtimeOf } from '../families/registry.js';
import type { FamilyRuntime } from '../families/runtime-types.js';
import type { FamilySpec, RawConfig, ResolvedConfig, VaeSpec } from '../families/types.js';
import { firstNonFinite, type Tensor } from '../tensor.js';
import { checkWeightBytes } from './weight-budget.js';
import { storeSyntheticWeights } from '../weights/synthetic.js';
import { readConfigJson } from './config-file.js';
import { withFileSource } from '../bytes/file-source.js';
import { partOf, readBoundHalf, type VaePart } from './bind-half.js';
import { locateVae, type VaeLocation } from './locate.js';
import { looksLikeTae, singleFileLayout, type SingleFileLayout } from './single-file.js';
import { FileTensor, openWeights } from './weights-file.js';
import { SpillFile } from '../bytes/spill-file.js';
import type { FileBytes } from '../bytes/file-bytes.js';

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
  return locateVae(source.path, {
    ...(source.subfolder !== undefined ? { subfolder: source.subfolder } : {}),
    ...(source.variant !== undefined ? { variant: source.variant } : {}),
  });
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
  const vae = planningVae(source.family, config);
  // The weights the config declares are judged before a plan is made for it.
  checkWeightBytes(runtimeOf(vae.family).decoderParams(vae.config), `the ${vae.family.name} decoder`);
  return vae;
}

export type { VaePart };

/** What reading a source gives: the family, its resolved config and runtime, the bound weights. */
export interface ReadSource {
  family: FamilySpec;
  config: ResolvedConfig;
  runtime: FamilyRuntime;
  weights: Map<string, Tensor>;
  /**
   * Removes the scratch file that weights converted or generated in JS were written to (they
   * can no longer be read after it); it is removed at process exit otherwise.
   */
  release(): void;
}

/**
 * Reads the architecture and the weights of one half (default: the decoder) a source names (no
 * onnxruntime involved). Every weight ends up file-backed (a float32 checkpoint's own bytes, or
 * a scratch file for converted and synthetic ones, written one tensor at a time), so neither
 * the reading nor the decoder's sessions hold a JS copy of the weights.
 */
export async function readVaeSource(source: VaeSource, part: VaePart = 'decoder'): Promise<ReadSource> {
  let spillFile: SpillFile | null = null;
  const spill = (data: Float32Array): FileBytes => (spillFile ??= new SpillFile()).append(data);
  const release = () => spillFile?.close();
  // A 0-d parameter stays in JS (its data is copied: generated tensors arrive in a reused buffer).
  const keep = (t: Tensor): Tensor => (t.dims.length > 0 ? new FileTensor([...t.dims], spill(t.data)) : { dims: [], data: t.data.slice() });
  try {
    return { ...(await readWeightsOf(source, part, spill, keep)), release };
  } catch (e) {
    release();
    throw e;
  }
}

async function readWeightsOf(
  source: VaeSource,
  part: VaePart,
  spill: (data: Float32Array) => FileBytes,
  keep: (t: Tensor) => Tensor,
): Promise<Omit<ReadSource, 'release'>> {
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
    return { family, config, runtime, weights: storeSyntheticWeights(params, source.seed, keep) };
  }
  const path = source.path;
  const location = locationOf(source);
  const raw = sourceConfig(source);
  const weightsPath = location.weightsPath;
  const spilled = new Set<string>();
  return withFileSource(weightsPath, async (file) => {
    const reader = await openWeights(file);
    // A bare file in an original layout (ldm, Flux.2) is the family of its layout, its config from
    // its shapes; one with TAE keys is a TAE. Its encoder is read in the ldm layout only (the keys
    // of Flux.2's are not mapped).
    const detected =
      location.kind === 'file' && (source.family === undefined || SINGLE_FILE_FAMILIES.has(source.family))
        ? singleFileLayout(reader.entries)
        : null;
    const layout = part === 'decoder' || detected?.kind === 'ldm' ? detected : null;
    const inferred =
      source.family ??
      layout?.family ??
      (location.kind === 'file' && raw === undefined && looksLikeTae(reader.entries.keys()) ? 'tae' : undefined);
    if (location.kind === 'file' && inferred === undefined && raw === undefined) {
      refuseFamilyRequired(
        'a family for a bare weights file',
        `${path} is a bare weights file: pass a family (--family) to say which decoder it holds`,
      );
    }
    const family = resolveFamily(inferred, raw);
    const runtime = runtimeOf(family);
    const { config, weights } = await readBoundHalf(family, runtime, raw, reader, {
      part,
      source: weightsPath,
      layout,
      checkParams: (params) => checkWeightBytes(params, `the ${family.name} ${part} of ${weightsPath}`),
      // A converted tensor is checked while its values are in hand, not read back from the spill file.
      spill: (data, name) => {
        checkFinite(name, { dims: [], data }, weightsPath);
        spilled.add(name);
        return spill(data);
      },
    });
    for (const [name, t] of weights) if (!spilled.has(name)) checkFinite(name, t, weightsPath);
    return { family, config, runtime, weights };
  });
}

/** A NaN or Infinity in the weights would decode into an all-NaN sample (a black image): refused at load, naming the tensor. */
function checkFinite(name: string, t: Tensor, source: string): void {
  const data = t.data;
  const at = firstNonFinite(data);
  if (at < 0) return;
  const shape = t.dims.length > 0 ? ` of [${t.dims.join(', ')}]` : ` of ${data.length}`;
  refuse(
    'FILE_INVALID',
    reason(
      'WEIGHT_NOT_FINITE',
      name,
      data[at],
      'finite values',
      `weight ${name} in ${source} holds ${data[at]} at element ${at}${shape}: the checkpoint is corrupt (or was saved after training diverged)`,
    ),
  );
}

/** A source from a path (with an optional family) or as given. */
export function vaeSourceOf(source: string | VaeSource, family: string | undefined): VaeSource {
  return typeof source === 'string' ? { path: source, ...(family !== undefined ? { family } : {}) } : source;
}
