// The runtime of decoders that are one graph with a chunkable single-head mid-block attention
// (AutoencoderKL and Flux.2 here; HunyuanImage reuses it): one onnxruntime session with dynamic
// batch and spatial axes, reused for every tile (rebuilt only when a tile needs another attention
// chunking, or its upsamplers spelled another way: a 2×2 latent tile on WebGPU), and a refusal up front of a call whose mid-block attention chunk alone would
// exceed the machine's memory.

import { hostMemoryBytes } from '../../runtime/host-memory.js';
import { reason, refuse, throwIfAborted } from '../../errors.js';
import { createSession } from '../../runtime/session.js';
import { convMiscomputesOn2x2, type Session, type SessionOptions } from '../../runtime/session-types.js';
import type { Tensor } from '../../tensor.js';
import { bindWeights } from '../../weights/bind.js';
import { buildKlDecoderGraph, klDecoderArchitecture, klDecoderParams, renameLegacyAttentionKeys } from './graph.js';
import type { GraphBuilder } from '../../graph/builder.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import type { FamilyEncoder, FamilyRuntime, ShardExchange, TileRunner } from '../runtime-types.js';
import type { GraphOptions, UpsamplerForm } from '../blocks/blocks.js';
import { buildKlEncoderGraph, ENCODER_GRAPH_IO, klEncoderArchitecture, klEncoderParams } from './encoder-graph.js';
import type { ResolvedConfig } from '../types.js';

/**
 * Bytes the mid-block attention holds at once for a latent (B, C, h, w): the scores and their
 * softmax of one query chunk (⌈N / chunks⌉ × N, N = h·w), float32, for the batch. Unchunked it
 * grows with the fourth power of the side (2048² px in SD: 32 GiB).
 */
export function attentionBytes(latentDims: readonly number[], queryChunks = 1): number {
  const [batch, , h, w] = latentDims as [number, number, number, number];
  const n = h * w;
  return 2 * batch * Math.ceil(n / queryChunks) * n * 4;
}

/** Scores + probabilities one attention chunk may hold in the runner's graph (256 MiB). */
export const ATTENTION_CHUNK_BYTES = 256 * 2 ** 20;

/**
 * Query chunks that keep one chunk's attention within `budgetBytes`: 1 up to about 600² px in
 * SD (a tile of the default plan), a power of two above, so few distinct graphs are built.
 */
export function attentionChunksFor(latentDims: readonly number[], budgetBytes = ATTENTION_CHUNK_BYTES): number {
  const [, , h, w] = latentDims as [number, number, number, number];
  let chunks = 1;
  while (chunks < h * w && attentionBytes(latentDims, chunks) > budgetBytes) chunks *= 2;
  return Math.min(chunks, h * w);
}

/**
 * Refuses, before any work, a decode whose attention alone exceeds `limitBytes` (the machine's
 * memory): it could only end in an allocation failure or the kernel killing the process.
 */
export function checkAttentionMemory(latentDims: readonly number[], limitBytes: number, queryChunks = 1): void {
  const bytes = attentionBytes(latentDims, queryChunks);
  if (bytes <= limitBytes) return;
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
  const [, , h, w] = latentDims as [number, number, number, number];
  refuse(
    'UNSUPPORTED',
    reason(
      'ATTENTION_MEMORY',
      'latents',
      [...latentDims],
      `a decoder call whose attention fits in ${gib(limitBytes)}`,
      `decoding a ${h}×${w} latent in one call needs ${gib(bytes)} for the mid-block attention (${h * w}² scores and probabilities) but this machine has ${gib(limitBytes)}: decode it tiled`,
    ),
  );
}

/** What a decoder with one chunkable mid-block attention gives `chunkedAttentionRuntime`. */
export interface ChunkedAttentionDecoder {
  params(config: ResolvedConfig): ParamSpec[];
  /** The fused graph; the runner asks for `attentionChunks` query chunks and channel parts where the decoder has them. */
  graph(
    config: ResolvedConfig,
    weights: ReadonlyMap<string, Tensor>,
    options?: { attentionChunks?: number; channelParts?: boolean; upsampler?: UpsamplerForm },
  ): GraphBuilder;
  hasAttention(config: ResolvedConfig): boolean;
  /** What row sharding exchanges (FamilyRuntime.shardExchanges). */
  shardExchanges: readonly ShardExchange[];
  /** The family's encoder, when it is one graph of the same kind (its attention at the latent resolution). */
  encoder?: ChunkedAttentionEncoder;
}

/** An encoder that is one graph with one chunkable mid-block attention: image (B, C, H, W) → latents (B, Cz, H/r, W/r). */
export interface ChunkedAttentionEncoder {
  params(config: ResolvedConfig): ParamSpec[];
  graph(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, options?: GraphOptions): GraphBuilder;
  hasAttention(config: ResolvedConfig): boolean;
  /** The graph takes `moments: true` (outputs mean and log-variance, 2·Cz channels): FamilyEncoder.moments. */
  moments?: boolean;
  /** Key prefixes of a full checkpoint that the encoder does not own (the decoder's). */
  ignoredKeyPrefixes: readonly string[];
}

/** The (B, Cz, h, w) an encoder's mid-block attention runs at for an image (B, C, H, W): the latent's. */
function encoderAttentionDims(config: ResolvedConfig, [b, , h, w]: readonly number[]): number[] {
  const r = config.geometry.spatialRatio;
  return [b!, config.geometry.latentChannels, Math.ceil(h! / r), Math.ceil(w! / r)];
}

/** The FamilyEncoder of a chunked-attention encoder: its fused graph, and a runner that chunks the attention as the decoder's does. */
export function chunkedAttentionEncoder(e: ChunkedAttentionEncoder): FamilyEncoder {
  return {
    params: e.params,
    graph: (config, weights, options = {}) => e.graph(config, weights, { moments: options.moments === true && e.moments === true }),
    io: ENCODER_GRAPH_IO,
    ignoredKeyPrefixes: e.ignoredKeyPrefixes,
    // The graph the runner opens for this image tile (its attention, at the latent resolution, chunked by size).
    memoryRuns: (config, weights, dims) => {
      const chunks = e.hasAttention(config) ? attentionChunksFor(encoderAttentionDims(config, dims)) : 1;
      return {
        sessions: [
          { key: `encoder/${chunks}`, slot: 'encoder', model: e.graph(config, weights, { attentionChunks: chunks }).toModel(), runs: 1 },
        ],
      };
    },
    ...(e.moments ? { moments: true } : {}),
    async createRunner(config, weights, session, options = {}) {
      const bound = bindWeights(e.params(config), weights, { source: 'the weights given to the encoder' });
      const moments = options.moments === true && e.moments === true;
      return chunkedAttentionRunner({
        graph: (chunks) => e.graph(config, bound, { attentionChunks: chunks, moments }),
        io: ENCODER_GRAPH_IO,
        attention: e.hasAttention(config),
        latentDims: (dims) => encoderAttentionDims(config, dims),
        session,
      });
    },
  };
}

/**
 * The runtime of a decoder that is one graph over the whole tile with a single-head mid-block
 * attention (AutoencoderKL, Flux.2, HunyuanImage): one onnxruntime session with dynamic batch and
 * spatial axes, reused for every tile and rebuilt only when a tile needs another attention
 * chunking, and a refusal up front of a call whose attention chunk alone exceeds the machine's memory.
 */
export function chunkedAttentionRuntime(d: ChunkedAttentionDecoder): FamilyRuntime {
  // The graph the runner opens for a chunking (the memory model reads the same one, with the default upsamplers).
  const runnerGraph = (config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, chunks: number, upsampler?: UpsamplerForm) =>
    d.graph(config, weights, { attentionChunks: chunks, channelParts: true, ...(upsampler ? { upsampler } : {}) });
  return {
    decoderParams: d.params,
    decoderGraph: (config, weights) => d.graph(config, weights),
    shardExchanges: d.shardExchanges,
    // The graph the runner opens for this tile (its attention chunking depends on the tile's size).
    memoryRuns: (config, weights, dims) => {
      const chunks = d.hasAttention(config) ? attentionChunksFor(dims) : 1;
      // One session at a time: a tile needing another chunking replaces it (createTileRunner).
      return { sessions: [{ key: `decoder/${chunks}`, slot: 'decoder', model: runnerGraph(config, weights, chunks).toModel(), runs: 1 }] };
    },
    async createTileRunner(config, weights, session: SessionOptions) {
      const bound = bindWeights(d.params(config), weights, { source: 'the weights given to the decoder' });
      // A latent tile of at most 2×2 feeds the first upsampler's 2×2 phase convolutions a 2×2
      // input, which a provider may miscompute (convMiscomputesOn2x2): there they are spelled
      // as Resize + 3×3 Conv, the same function.
      const tinyConvWrong = convMiscomputesOn2x2(session.provider);
      return chunkedAttentionRunner({
        graph: (chunks, variant) => runnerGraph(config, bound, chunks, variant as UpsamplerForm | undefined),
        variantOf: (dims) => {
          const [h, w] = dims.slice(-2) as [number, number];
          return tinyConvWrong && h <= 2 && w <= 2 ? 'resize-conv' : undefined;
        },
        io: { input: 'latent', output: 'sample' },
        attention: d.hasAttention(config),
        latentDims: (dims) => dims,
        session,
      });
    },
    postprocess: (raw) => raw,
    ...(d.encoder ? { encoder: chunkedAttentionEncoder(d.encoder) } : {}),
  };
}

/** What `chunkedAttentionRunner` runs: a graph per query chunking, its input and output, and the attention's latent dims for an input. */
export interface ChunkedAttentionGraph {
  /** The graph for a query chunking and a variant (variantOf's answer; undefined: the default spelling). */
  graph(attentionChunks: number, variant?: string): GraphBuilder;
  /** A spelling of the graph an input needs besides its chunking (a 2×2 latent tile on a provider that miscomputes its convs). */
  variantOf?(inputDims: readonly number[]): string | undefined;
  io: { input: string; output: string };
  /** Whether the graph has an attention to chunk at all. */
  attention: boolean;
  /** The (B, C, h, w) the mid-block attention runs at for an input of these dims (a decoder: the latent's; an encoder: the image's / r). */
  latentDims(inputDims: readonly number[]): readonly number[];
  session: SessionOptions;
}

/**
 * A TileRunner over a graph with one chunkable single-head attention (a KL decoder or encoder):
 * one session at a time, for the attention chunking an input needs (1 for the default plan's
 * tiles) — a second session would hold a second copy of the weights in onnxruntime — and a
 * refusal up front of an input whose attention chunk alone exceeds the machine's memory.
 */
export function chunkedAttentionRunner(spec: ChunkedAttentionGraph): TileRunner {
  let current: { key: string; session: Promise<Session> } | null = null;
  const sessionFor = async (chunks: number, variant: string | undefined): Promise<Session> => {
    const key = `${chunks}/${variant ?? 'default'}`;
    if (current?.key !== key) {
      const previous = current?.session;
      current = null;
      await previous?.then(
        (s) => s.dispose(),
        () => undefined,
      );
      current = { key, session: createSession(spec.graph(chunks, variant).toModel(), spec.session) };
    }
    return current.session;
  };
  return {
    async decode(input: Tensor, signal?: AbortSignal) {
      throwIfAborted(signal);
      const dims = spec.latentDims(input.dims);
      const chunks = spec.attention ? attentionChunksFor(dims) : 1;
      if (spec.attention) checkAttentionMemory(dims, hostMemoryBytes(), chunks);
      return (await (await sessionFor(chunks, spec.variantOf?.(input.dims))).run({ [spec.io.input]: input }))[spec.io.output]!;
    },
    dispose: async () => {
      const s = current?.session;
      current = null;
      await s?.then(
        (x) => x.dispose(),
        () => undefined,
      );
    },
  };
}

/** Runtime shared by autoencoder-kl and flux2: the decoder differs only by config. */
export const klRuntime: FamilyRuntime = {
  ...chunkedAttentionRuntime({
    params: klDecoderParams,
    graph: buildKlDecoderGraph,
    hasAttention: (config) => klDecoderArchitecture(config).midAttention,
    // The mid-block attention is on by default (`mid_block_add_attention`); without it only halos and statistics.
    shardExchanges: ['halo-rows', 'group-norm-statistics', 'attention-keys-values'],
    encoder: {
      params: klEncoderParams,
      graph: buildKlEncoderGraph,
      hasAttention: (config) => klEncoderArchitecture(config).midAttention,
      moments: true,
      // Flux.2's batch-norm statistics are the pipeline's, like the decoder's halves.
      ignoredKeyPrefixes: ['decoder.', 'post_quant_conv.', 'bn.'],
    },
  }),
  renameKeys: renameLegacyAttentionKeys,
};
