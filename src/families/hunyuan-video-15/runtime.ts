// The runtime of AutoencoderKLHunyuanVideo15: one onnxruntime session with dynamic batch, frames
// and size, over a whole latent or a spatial tile (all its frames); diffusers applies no
// post-processing to the decoded sample. The fused graph is exposed as `decoderGraph`: the
// locality analysis reads its (B, C, F, H, W) values and row sharding runs it in bands of rows.
// The encoder (encoder-graph.ts) is one session too, built only when an encoder is asked for.

import { createSession } from '../../runtime/session.js';
import type { SessionOptions } from '../../runtime/session-types.js';
import type { Tensor } from '../../tensor.js';
import { bindWeights } from '../../weights/bind.js';
import type { FamilyRuntime } from '../runtime-types.js';
import { ENCODER_GRAPH_IO } from '../autoencoder-kl/encoder-graph.js';
import { graphRunner } from '../graph-runner.js';
import { buildHunyuanVideo15EncoderGraph, hunyuanVideo15EncoderParams } from './encoder-graph.js';
import { buildHunyuanVideo15DecoderGraph, hunyuanVideo15DecoderParams } from './graph.js';
import { hunyuanVideo15ConfigFromWeights, renameOriginalKeys } from './original-layout.js';

const bound = (config: Parameters<FamilyRuntime['decoderParams']>[0], weights: ReadonlyMap<string, Tensor>) =>
  bindWeights(hunyuanVideo15DecoderParams(config), weights, { source: 'the weights given to the decoder' });

export const hunyuanVideo15Runtime: FamilyRuntime = {
  decoderParams: hunyuanVideo15DecoderParams,
  // Tencent's original checkpoint names load too (original-layout.ts), their config read from the shapes.
  renameKeys: renameOriginalKeys,
  configFromWeights: hunyuanVideo15ConfigFromWeights,
  decoderGraph: (config, weights) => buildHunyuanVideo15DecoderGraph(config, bound(config, weights)),
  // Per-voxel RMS norms need no statistics; the causal mid-block attention gathers keys and values of frames ≤ f.
  shardExchanges: ['halo-rows', 'frame-causal-keys-values'],
  memoryRuns: (config, weights) => ({
    sessions: [{ key: 'decoder', model: buildHunyuanVideo15DecoderGraph(config, bound(config, weights)).toModel(), runs: 1 }],
  }),
  async createTileRunner(config, weights, session: SessionOptions) {
    const s = await createSession(buildHunyuanVideo15DecoderGraph(config, bound(config, weights)).toModel(), session);
    return {
      async decode(latentTile: Tensor) {
        return (await s.run({ latent: latentTile }))['sample']!;
      },
      dispose: () => s.dispose(),
    };
  },
  postprocess: (raw) => raw,
  encoder: {
    params: hunyuanVideo15EncoderParams,
    // Not exposed to the analysis: it does not model the down-samplers' space-to-channel packing yet.
    graphWithheld:
      'its down-samplers pack rows, columns and frames into channels (`_dcae_downsample_rearrange`: a Reshape to shapes divided in-graph, then a Transpose), which the locality analysis does not model yet',
    // A full original-layout file implies its config through the decoder's shapes, as for decoding.
    configFromWeights: hunyuanVideo15ConfigFromWeights,
    ignoredKeyPrefixes: ['decoder.'],
    // One causal pass over all frames (F = 1 + 4k); diffusers has no temporal tiling for the class.
    frames: { kind: 'causal' },
    moments: true,
    async createRunner(config, weights, session, options = {}) {
      const bound = bindWeights(hunyuanVideo15EncoderParams(config), weights, { source: 'the weights given to the encoder' });
      return graphRunner(buildHunyuanVideo15EncoderGraph(config, bound, { moments: options.moments === true }), ENCODER_GRAPH_IO, session);
    },
  },
};
