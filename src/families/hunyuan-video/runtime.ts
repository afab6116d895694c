// The runtime of HunyuanVideo: one onnxruntime session with dynamic batch, frames and size, for
// the decoder and for the encoder (encoder-graph.ts), each built only when asked for.

import { createSession } from '../../runtime/session.js';
import type { SessionOptions } from '../../runtime/session-types.js';
import type { Tensor } from '../../tensor.js';
import { bindWeights } from '../../weights/bind.js';
import { renameLegacyAttentionKeys } from '../autoencoder-kl/graph.js';
import { ENCODER_GRAPH_IO } from '../autoencoder-kl/encoder-graph.js';
import { graphRunner } from '../graph-runner.js';
import { buildHunyuanVideoDecoderGraph, hunyuanVideoDecoderParams } from './graph.js';
import { buildHunyuanVideoEncoderGraph, hunyuanVideoEncoderParams } from './encoder-graph.js';
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
  shardExchanges: ['halo-rows', 'group-norm-statistics', 'frame-causal-keys-values'],
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
  // Video (B, C, F, H, W) in [−1, 1] → the mean latents (the moments with --sample). The fused graph is exposed, as the
  // decoder's is: row sharding runs it over bands of rows of every frame (docs/design.md §6).
  encoder: {
    params: hunyuanVideoEncoderParams,
    graph: (config, weights, options = {}) => buildHunyuanVideoEncoderGraph(config, weights, { moments: options.moments === true }),
    io: ENCODER_GRAPH_IO,
    ignoredKeyPrefixes: ['decoder.', 'post_quant_conv.'],
    // One causal pass over all frames (F = 1 + 4k); diffusers' `_temporal_tiled_encode` drops the first latent frame of later chunks.
    frames: { kind: 'causal' },
    temporalTiling: { dropFrame: 'first' },
    moments: true,
    async createRunner(config, weights, session, options = {}) {
      const bound = bindWeights(hunyuanVideoEncoderParams(config), weights, { source: 'the weights given to the encoder' });
      return graphRunner(buildHunyuanVideoEncoderGraph(config, bound, { moments: options.moments === true }), ENCODER_GRAPH_IO, session);
    },
  },
};
