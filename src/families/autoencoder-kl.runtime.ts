// The runtime of AutoencoderKL and Flux.2: one onnxruntime session with dynamic batch and
// spatial axes, reused for every tile, and a refusal up front of a call whose mid-block
// attention alone would exceed the machine's memory.

import { totalmem } from 'node:os';
import { reason, refuse } from '../errors.js';
import { createSession, type SessionOptions } from '../runtime/session.js';
import type { Tensor } from '../tensor.js';
import { bindWeights } from '../weights/bind.js';
import { buildKlDecoderGraph, klDecoderArchitecture, klDecoderParams, renameLegacyAttentionKeys } from './autoencoder-kl.graph.js';
import type { FamilyRuntime } from './runtime-types.js';

/**
 * Bytes the mid-block attention holds at once for a latent (B, C, h, w): the N × N scores and
 * their softmax, N = h·w, float32, per sample. It grows with the fourth power of the side, so a
 * whole decode of a large image needs more than most machines have (2048² px in SD: 32 GiB).
 */
export function attentionBytes(latentDims: readonly number[]): number {
  const [batch, , h, w] = latentDims as [number, number, number, number];
  return 2 * batch * (h * w) ** 2 * 4;
}

/**
 * Refuses, before any work, a decode whose attention alone exceeds `limitBytes` (the machine's
 * memory): it could only end in an allocation failure or the kernel killing the process.
 */
export function checkAttentionMemory(latentDims: readonly number[], limitBytes: number): void {
  const bytes = attentionBytes(latentDims);
  if (bytes <= limitBytes) return;
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
  const [, , h, w] = latentDims as [number, number, number, number];
  refuse('UNSUPPORTED', reason(
    'ATTENTION_MEMORY',
    'latents',
    [...latentDims],
    `a decoder call whose attention fits in ${gib(limitBytes)}`,
    `decoding a ${h}×${w} latent in one call needs ${gib(bytes)} for the mid-block attention (${h * w}² scores and probabilities) but this machine has ${gib(limitBytes)}: decode it tiled`,
  ));
}

/** Runtime shared by autoencoder-kl and flux2: the decoder differs only by config. */
export const klRuntime: FamilyRuntime = {
  decoderParams: klDecoderParams,
  decoderGraph: buildKlDecoderGraph,
  renameKeys: renameLegacyAttentionKeys,
  async createTileRunner(config, weights, session: SessionOptions) {
    const bound = bindWeights(klDecoderParams(config), weights, { source: 'the weights given to the decoder' });
    const s = await createSession(buildKlDecoderGraph(config, bound).toModelBytes(), session);
    return {
      async decode(latentTile: Tensor) {
        if (klDecoderArchitecture(config).midAttention) checkAttentionMemory(latentTile.dims, totalmem());
        return (await s.run({ latent: latentTile }))['sample']!;
      },
      dispose: () => s.dispose(),
    };
  },
  postprocess: (raw) => raw,
};
