// The runtime of each family (graph builders, tile runners, post-processing), looked up by
// name. Kept apart from the registry of declarations so the planner stays free of graphs.

import { reason, refuse } from '../errors.js';
import { klRuntime } from './autoencoder-kl/runtime.js';
import { hunyuanVideoRuntime } from './hunyuan-video/runtime.js';
import { ltx2Runtime } from './ltx2/runtime.js';
import type { FamilyRuntime } from './runtime-types.js';
import { taeRuntime } from './tae/runtime.js';
import { weightBytes } from '../weights/synthetic.js';
import type { FamilyName, FamilySpec, VaeSpec } from './types.js';
import { qwenImageRuntime, wanRuntime } from './wan/runtime.js';

const RUNTIMES: Partial<Record<FamilyName, FamilyRuntime>> = {
  'autoencoder-kl': klRuntime,
  flux2: klRuntime,
  tae: taeRuntime,
  'hunyuan-video': hunyuanVideoRuntime,
  ltx2: ltx2Runtime,
  wan: wanRuntime,
  'qwen-image': qwenImageRuntime,
};

export function runtimeOf(family: FamilySpec): FamilyRuntime {
  const runtime = RUNTIMES[family.name];
  if (!runtime) {
    const available = Object.keys(RUNTIMES).join(', ') || 'none yet';
    refuse(
      'UNSUPPORTED',
      reason(
        'NO_DECODER',
        'family',
        family.name,
        `a family with a decoder: ${available}`,
        `decoding ${family.name} is not implemented yet (decoders: ${available}); planning works for every family`,
      ),
    );
  }
  return runtime;
}

/** Bytes of one copy of the decoder's float32 weights for a VAE's config (no weights read). */
export function decoderWeightBytes(vae: VaeSpec): number {
  return weightBytes(runtimeOf(vae.family).decoderParams(vae.config));
}
