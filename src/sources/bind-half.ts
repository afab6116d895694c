// From an opened weights file to one bound half of a VAE: the family's key renames, the config
// the weights imply merged under the given one, then only the half's own tensors read (shapes
// bound first). Pure (a TensorReader over any ByteSource), so the Node loader (vae-source.ts)
// and the page loader (web/load.ts) share it.

import { DistVaeError, reason } from '../errors.js';
import { resolveFamilyConfig } from '../families/registry.js';
import type { FamilyEncoder, FamilyRuntime } from '../families/runtime-types.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from '../families/types.js';
import type { Tensor } from '../tensor.js';
import type { TensorReader } from '../weights/reader.js';
import { readBoundWeights } from './weights-file.js';

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

/** The resolved config and bound weights of one half from an opened weights file; `source` names it in errors. */
export async function readBoundHalf(family: FamilySpec, runtime: FamilyRuntime, raw: RawConfig | undefined, reader: TensorReader, part: VaePart, source: string): Promise<{ config: ResolvedConfig; weights: Map<string, Tensor> }> {
  const half = partOf(family, runtime, part);
  const entries = runtime.renameKeys ? runtime.renameKeys(reader.entries) : reader.entries;
  const implied = half.configFromWeights?.(entries);
  const config = resolveFamilyConfig(family, implied ? { ...implied, ...(raw ?? {}) } : raw);
  const weights = await readBoundWeights(reader, entries, half.params(config), { ignorePrefixes: half.ignoredKeyPrefixes, source });
  return { config, weights };
}
