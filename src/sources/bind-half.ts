// From an opened weights file to one bound half of a VAE: the layout's key mapping (an original
// ldm or Flux.2 single file becomes diffusers' keys), the family's key renames, the config the weights
// imply merged under the given one, then only the half's own tensors read (shapes bound
// first). Pure (a TensorReader over any ByteSource), so the Node loader (vae-source.ts) and
// the page loader (web/load.ts) share it.

import { reason, refuse } from '../errors.js';
import { familyNamesWhere, resolveFamilyConfig } from '../families/registry.js';
import type { FamilyEncoder, FamilyRuntime } from '../families/runtime-types.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from '../families/types.js';
import type { FileBytes } from '../bytes/file-bytes.js';
import type { Tensor } from '../tensor.js';
import type { TensorReader } from '../weights/reader.js';
import type { ParamSpec } from '../weights/synthetic.js';
import { singleFileConfig, singleFileToDiffusers, type SingleFileLayout } from './single-file.js';
import { readBoundWeights } from './weights-file.js';

/** Which half of an autoencoder a source is read for. */
export type VaePart = 'decoder' | 'encoder';

/** What reading a source needs of one half: its parameters, the config its weights imply, the keys it ignores. */
export function partOf(
  family: FamilySpec,
  runtime: FamilyRuntime,
  part: VaePart,
): Pick<FamilyEncoder, 'params' | 'configFromWeights' | 'ignoredKeyPrefixes'> {
  if (part === 'decoder') {
    return {
      params: (c) => runtime.decoderParams(c),
      configFromWeights: runtime.configFromWeights,
      ignoredKeyPrefixes: family.ignoredKeyPrefixes,
    };
  }
  if (!runtime.encoder) {
    refuse(
      'UNSUPPORTED',
      reason(
        'NO_ENCODER',
        'family',
        family.name,
        `a family with an encoder (${encoderFamilies().join(', ')})`,
        `the ${family.name} family has no encoder here; encoding is available for ${encoderFamilies().join(', ')}`,
      ),
    );
  }
  return runtime.encoder;
}

/** How to read one half: which file it is, its key layout, and a check of its parameters before any tensor is read. */
export interface HalfReading {
  part: VaePart;
  /** Names the file in errors. */
  source: string;
  /** The original layout of a single file (ldm, Flux.2); null for diffusers' keys. */
  layout?: SingleFileLayout | null;
  /** Runs on the half's parameter list before any tensor is read (e.g. refuse absurd weight bytes). */
  checkParams?: (params: ParamSpec[]) => void;
  /** Where tensors converted to float32 in JS are written (readBoundWeights' `spill`). */
  spill?: (data: Float32Array, name: string) => FileBytes;
}

/** The resolved config and bound weights of one half from an opened weights file. */
export async function readBoundHalf(
  family: FamilySpec,
  runtime: FamilyRuntime,
  raw: RawConfig | undefined,
  reader: TensorReader,
  reading: HalfReading,
): Promise<{ config: ResolvedConfig; weights: Map<string, Tensor> }> {
  const half = partOf(family, runtime, reading.part);
  const layout = reading.layout ?? null;
  const stored = layout !== null ? singleFileToDiffusers(reader.entries, layout) : reader.entries;
  const entries = runtime.renameKeys ? runtime.renameKeys(stored) : stored;
  const implied = layout !== null ? singleFileConfig(reader.entries, layout) : half.configFromWeights?.(entries);
  const config = resolveFamilyConfig(family, implied ? { ...implied, ...(raw ?? {}) } : raw);
  const params = half.params(config);
  reading.checkParams?.(params);
  const weights = await readBoundWeights(reader, entries, params, {
    ignorePrefixes: half.ignoredKeyPrefixes,
    source: reading.source,
    ...(reading.spill ? { spill: reading.spill } : {}),
  });
  return { config, weights };
}

/** The families that ship an encoder, from the registry. */
function encoderFamilies(): string[] {
  return familyNamesWhere((r) => r.encoder !== undefined);
}
