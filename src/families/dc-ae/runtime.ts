// The runtime of AutoencoderDC: one graph per tile, run as AutoencoderKL's is
// (autoencoder-kl/runtime.ts `chunkedAttentionRuntime`: one session with dynamic axes, reused
// for every tile), for the decoder and the encoder alike. Its linear attention holds no N × N
// matrix, so nothing is chunked or refused for attention memory; diffusers applies no
// post-processing to the decoded sample, and its encoder returns the latent itself.

import { chunkedAttentionRuntime } from '../autoencoder-kl/runtime.js';
import type { FamilyRuntime } from '../runtime-types.js';
import { buildDcaeEncoderGraph, dcaeEncoderParams } from './encoder-graph.js';
import { buildDcaeDecoderGraph, dcaeDecoderParams } from './graph.js';

export const dcaeRuntime: FamilyRuntime = chunkedAttentionRuntime({
  params: dcaeDecoderParams,
  graph: (config, weights) => buildDcaeDecoderGraph(config, weights),
  // No softmax attention to chunk: the linear attention's largest tensor is d × (d + 1) per head.
  hasAttention: () => false,
  // Per-pixel RMSNorm needs no statistics; the linear attention one all-reduce of its sums per head.
  shardExchanges: ['halo-rows', 'linear-attention-sums'],
  encoder: {
    params: dcaeEncoderParams,
    graph: buildDcaeEncoderGraph,
    hasAttention: () => false,
    ignoredKeyPrefixes: ['decoder.'],
  },
});
