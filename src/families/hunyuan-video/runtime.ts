// The runtime of HunyuanVideo: one onnxruntime session with dynamic batch, frames and size.

import { createSession } from '../../runtime/session.js';
import type { SessionOptions } from '../../runtime/session-types.js';
import type { Tensor } from '../../tensor.js';
import { bindWeights } from '../../weights/bind.js';
import { renameLegacyAttentionKeys } from '../autoencoder-kl/graph.js';
import { buildHunyuanVideoDecoderGraph, hunyuanVideoDecoderParams } from './graph.js';
import type { FamilyRuntime } from '../runtime-types.js';

export const hunyuanVideoRuntime: FamilyRuntime = {
  decoderParams: hunyuanVideoDecoderParams,
  // The mid-block attention is diffusers' `_from_deprecated_attn_block`: old names load too.
  renameKeys: renameLegacyAttentionKeys,
  // The fused graph, for the locality analysis and row sharding (its GroupNorms over frames × H × W
  // merge band statistics by Chan's formula like an image decoder's).
  decoderGraph: (config, weights) =>
    buildHunyuanVideoDecoderGraph(
      config,
      bindWeights(hunyuanVideoDecoderParams(config), weights, { source: 'the weights given to the decoder' }),
    ),
  // One session over the whole temporal chunk.
  memoryRuns: (config, weights) => ({
    sessions: [
      {
        key: 'decoder',
        model: buildHunyuanVideoDecoderGraph(
          config,
          bindWeights(hunyuanVideoDecoderParams(config), weights, { source: 'the weights given to the decoder' }),
        ).toModel(),
        runs: 1,
      },
    ],
  }),
  async createTileRunner(config, weights, session: SessionOptions) {
    const bound = bindWeights(hunyuanVideoDecoderParams(config), weights, { source: 'the weights given to the decoder' });
    const s = await createSession(buildHunyuanVideoDecoderGraph(config, bound).toModel(), session);
    return {
      async decode(latentTile: Tensor) {
        return (await s.run({ latent: latentTile }))['sample']!;
      },
      dispose: () => s.dispose(),
    };
  },
  postprocess: (raw) => raw,
};
