// From stored weights to a bound VAE half: the family's key renames, the config the weights
// imply merged under the given one, and strict binding to the half's own parameters. Pure (no
// file access), so the Node loader (vae.ts) and the page loader (web/load.ts) share it.

import { DistVaeError, reason } from '../errors.js';
import { resolveFamilyConfig } from '../families/registry.js';
import type { FamilyEncoder, FamilyRuntime } from '../families/runtime-types.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from '../families/types.js';
import type { Tensor } from '../tensor.js';
import { bindWeights } from '../weights/bind.js';
import type { StoredTensor } from '../weights/dtype.js';

/** Which half of an autoencoder a source is read for. */
export type VaePart = 'decoder' | 'encoder';

/** What reading a source needs of one half: its parameters, the config its weights imply, the keys it ignores. */
export function partOf(family: FamilySpec, runtime: FamilyRuntime, part: VaePart): Pick<FamilyEncoder, 'params' | 'configFromWeights' | 'ignoredKeyPrefixes'> {
  if (part === 'decoder') {
    return { params: (c) => runtime.decoderParams(c), configFromWeights: runtime.configFromWeights, ignoredKeyPrefixes: family.ignoredKeyPrefixes };
  }
  if (!runtime.encoder) {
    const r = reason('NO_ENCODER', 'family', family.name, 'a family with an encoder (tae)', `the ${family.name} family has no encoder here; encoding is available for tae`);
    throw new DistVaeError('UNSUPPORTED', r.message, { reasons: [r] });
  }
  return runtime.encoder;
}

/** Binds stored weights to one half of a family's VAE; `source` names them in errors. */
export function bindStoredWeights(
  family: FamilySpec,
  runtime: FamilyRuntime,
  raw: RawConfig | undefined,
  stored: Map<string, StoredTensor>,
  part: VaePart,
  source: string,
): { config: ResolvedConfig; weights: Map<string, Tensor> } {
  const half = partOf(family, runtime, part);
  const weights = runtime.renameKeys ? runtime.renameKeys(stored) : stored;
  const implied = half.configFromWeights?.(weights);
  const config = resolveFamilyConfig(family, implied ? { ...implied, ...(raw ?? {}) } : raw);
  return { config, weights: bindWeights(half.params(config), weights, { ignorePrefixes: half.ignoredKeyPrefixes, source }) };
}
