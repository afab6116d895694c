// The runtime of AutoencoderKLHunyuanImage: one graph per tile with a chunkable mid-block
// attention, run as AutoencoderKL's is (autoencoder-kl/runtime.ts `chunkedAttentionRuntime`);
// diffusers applies no post-processing to the decoded sample.

import { chunkedAttentionRuntime } from '../autoencoder-kl/runtime.js';
import type { FamilyRuntime } from '../runtime-types.js';
import { buildHunyuanImageEncoderGraph, hunyuanImageEncoderParams } from './encoder-graph.js';
import { buildHunyuanImageDecoderGraph, hunyuanImageDecoderParams } from './graph.js';

export const hunyuanImageRuntime: FamilyRuntime = chunkedAttentionRuntime({
  params: hunyuanImageDecoderParams,
  // No channel-parts spelling: every resnet keeps its width, so no upsampler feeds a narrowing one.
  graph: (config, weights, options) => buildHunyuanImageDecoderGraph(config, weights, { attentionChunks: options?.attentionChunks ?? 1 }),
  hasAttention: () => true,
  // As KL: GroupNorm statistics and the mid-block attention.
  shardExchanges: ['halo-rows', 'group-norm-statistics', 'attention-keys-values'],
  encoder: {
    params: hunyuanImageEncoderParams,
    graph: buildHunyuanImageEncoderGraph,
    hasAttention: () => true,
    moments: true,
    ignoredKeyPrefixes: ['decoder.'],
  },
});
