// The runtime of LTX-2: the decoder's stage graphs chained in one staged session, fed the decode
// timestep (config `decode_timestep`) when the decoder is conditioned; the encoder
// (encoder-graph.ts) its stage graphs chained the same way (one stage unless its weights pass
// 1 GiB, as the published encoder's do), built only when an encoder is asked for.

import { reason, refuse, throwIfAborted } from '../../errors.js';
import type { SessionOptions } from '../../runtime/session-types.js';
import { createStagedSession } from '../../runtime/staged-session.js';
import type { Tensor } from '../../tensor.js';
import { bindWeights } from '../../weights/bind.js';
import { buildLtx2DecoderStages, ltx2Architecture, ltx2DecoderParams } from './graph.js';
import type { FamilyRuntime } from '../runtime-types.js';
import { ENCODER_GRAPH_IO } from '../autoencoder-kl/encoder-graph.js';
import { buildLtx2EncoderStages, ltx2EncoderParams } from './encoder-graph.js';
import type { ResolvedConfig } from '../types.js';

/** The decode timestep a conditioned decoder is fed (config `decode_timestep`, diffusers' pipeline default 0). */
export function decodeTimestepOf(config: ResolvedConfig): number | null {
  return config.fields['timestep_conditioning'] ? (config.fields['decode_timestep'] as number) : null;
}

export const ltx2Runtime: FamilyRuntime = {
  decoderParams: ltx2DecoderParams,
  // Why no fused graph: protobuf's 2 GiB limit makes the decoder a chain of stage graphs, and a
  // conditioned one takes the decode timestep as a second input — not the one-input graph the
  // locality analysis reads, so row sharding is refused up front.
  graphWithheld:
    'its decoder is a chain of per-block stage graphs (no single graph, to stay under protobuf’s 2 GiB) that a conditioned decoder also feeds the decode timestep',
  async createTileRunner(config, weights, session: SessionOptions) {
    const a = ltx2Architecture(config);
    const bound = bindWeights(ltx2DecoderParams(config), weights, { source: 'the weights given to the decoder' });
    const s = await createStagedSession(buildLtx2DecoderStages(config, bound), session);
    const timestep = decodeTimestepOf(config);
    return {
      async decode(latentTile: Tensor) {
        const [batch, , , h, w] = latentTile.dims as number[];
        if (a.spatialPadding === 'reflect' && (h! < 2 || w! < 2)) {
          // torch's reflect padding needs two rows and columns; diffusers raises here too.
          refuse(
            'TENSOR_INVALID',
            reason(
              'TILE_TOO_SMALL',
              'latent tile',
              [h, w],
              'at least 2 x 2 latent units with reflect padding',
              `a latent tile of ${h} x ${w} cannot be decoded: reflect padding needs at least 2 latent rows and columns (diffusers raises the same)`,
            ),
          );
        }
        const feeds: Record<string, Tensor> = { latent: latentTile };
        if (timestep !== null) feeds['timestep'] = { dims: [batch!], data: new Float32Array(batch!).fill(timestep) };
        return (await s.run(feeds))['sample']!;
      },
      dispose: () => s.dispose(),
    };
  },
  postprocess: (raw) => raw,
  encoder: {
    params: ltx2EncoderParams,
    // One graph, but not one the locality analysis reads yet: refused up front rather than failing inside the analysis.
    graphWithheld:
      'its encoder patchifies the input and its down-samplers pack rows, columns and frames into channels (space-to-channel reshapes), which the locality analysis does not model yet',
    // latents_mean / latents_std are the pipeline's normalisation buffers.
    ignoredKeyPrefixes: ['decoder.', 'latents_mean', 'latents_std'],
    // One causal pass over all frames (F = 1 + rt·k); `_temporal_tiled_encode` drops the first latent frame of later chunks.
    frames: { kind: 'causal' },
    temporalTiling: { dropFrame: 'first' },
    moments: true,
    async createRunner(config, weights, session, options = {}) {
      const bound = bindWeights(ltx2EncoderParams(config), weights, { source: 'the weights given to the encoder' });
      const s = await createStagedSession(buildLtx2EncoderStages(config, bound, { moments: options.moments === true }), session);
      return {
        async decode(video, signal) {
          throwIfAborted(signal);
          return (await s.run({ [ENCODER_GRAPH_IO.input]: video }))[ENCODER_GRAPH_IO.output]!;
        },
        dispose: () => s.dispose(),
      };
    },
  },
};
