// What a family supplies to run its decoder: the parameters it owns, a tile runner built from
// bound weights (one onnxruntime session set), and the post-processing diffusers applies after
// assembly. Engine code calls these; it never branches on a family's name.

import type { GraphBuilder } from '../graph/builder.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import type { SessionOptions } from '../runtime/session-types.js';
import type { Tensor } from '../tensor.js';
import type { Shaped } from '../weights/bind.js';
import type { ParamSpec } from '../weights/synthetic.js';
import type { EncodeFrames } from './encode-frames.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from './types.js';

/**
 * A family as the registry lists it: what it declares (read by the planner) and how it decodes.
 * Each family folder exports one; adding a family is that folder and one line of registry.ts.
 */
export interface Family<Name extends string = string> {
  spec: FamilySpec<Name>;
  runtime: FamilyRuntime;
}

/**
 * What the ranks of a row-sharded decode exchange (docs/design.md §6): rows of neighbouring bands
 * for convolutions' halos, GroupNorm band statistics (one all-gather per norm), the keys and values
 * of a softmax attention (gathered), the per-head K·Vᵀ and K sums of a linear attention (one
 * all-reduce), or the keys and values of a frame-causal attention (gathered over frames ≤ f).
 */
export type ShardExchange =
  'halo-rows' | 'group-norm-statistics' | 'attention-keys-values' | 'linear-attention-sums' | 'frame-causal-keys-values';

export interface FamilyRuntime {
  /** Decoder parameters under the checkpoint's own key names, with shapes and synthetic init. */
  decoderParams(config: ResolvedConfig): ParamSpec[];
  /**
   * The fused decoder graph (one input, one output) with these (bound) weights, for locality
   * analysis, staging and row sharding; families without it decode only whole tiles.
   */
  decoderGraph?(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>): GraphBuilder;
  /**
   * Without `decoderGraph`: the op that keeps the decode from being one analysable graph, in
   * words (named in the refusal of row sharding and halo-exact tiles).
   */
  graphWithheld?: string;
  /**
   * With `decoderGraph`: what row sharding exchanges for the published config (the docs' families
   * table shows it). Declared, not analysed, as the published graphs are too big to build for the
   * docs; strategies/shard/family-support.test.ts checks it against the shard plan of each family's
   * tiny config.
   */
  shardExchanges?: readonly ShardExchange[];
  /**
   * What the memory model reads of one tile decode (docs/design.md §13), for families whose
   * runner is not one run of `decoderGraph`: the graphs the runner opens sessions on for a latent
   * tile of these dims and how often each runs. Absent: one run of `decoderGraph`.
   */
  memoryRuns?(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, tileDims: readonly number[]): TileMemoryRuns;
  /** A runner that decodes latent tiles with these (bound) weights. */
  createTileRunner(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, session: SessionOptions): Promise<TileRunner>;
  /**
   * diffusers' post-processing of the assembled raw output (unpatchify, clamp) — `spatiallyTiled`
   * tells whether the spatial tiling loop produced it (Qwen-Image clamps only when it did not);
   * `config` is the VAE's (e.g. Wan 2.2's patch size). May reuse `raw`'s buffer.
   */
  postprocess(raw: Tensor, context: { spatiallyTiled: boolean; config: ResolvedConfig }): Tensor;
  /** Renames legacy checkpoint keys to the ones `decoderParams` lists (as diffusers does on load), before binding. */
  renameKeys?<T>(weights: ReadonlyMap<string, T>): Map<string, T>;
  /** Reads the config a bare weights file implies (e.g. the TAE variant from its keys and shapes), if the family can. */
  configFromWeights?(weights: ReadonlyMap<string, Shaped>): RawConfig;
  /** The encoder (image in [0, 1] → latents), for families that ship one here. */
  encoder?: FamilyEncoder;
}

/**
 * The sessions a tile runner holds for one tile. A graph's inputs are resolved from its declared
 * axes (`batch`, `frames`, `height`, `width` of the latent tile, and products like `height*4`).
 */
export interface TileMemoryRuns {
  /** `slot`: sessions of one slot replace each other (the runner disposes one before it opens the next), so they never coexist; default: the key. */
  sessions: { key: string; model: ModelProto; runs: number; slot?: string }[];
  /** Outputs whose names start with `prefix` are kept by the runner across runs, `copies` of each (a causal history). */
  kept?: { prefix: string; copies: number };
}

/**
 * An encoder: the counterpart of the decoder entries above. Its runner's `decode` runs the
 * encoder on an image (B, C, H, W) — or, for a video encoder (one that declares `frames`), a
 * video (B, C, F, H, W) with F a count `frames` accepts — with H and W multiples of the
 * geometry's spatial ratio, in the family's input range (`FamilySpec.sampleRange`: [−1, 1] for
 * the diffusers classes, [0, 1] for TAE), and returns the latents the family's decoder takes
 * (the distribution's mean): (B, Cz, H/r, W/r), or (B, Cz, f, H/r, W/r) with f =
 * `encodedFrames(frames, rt, F)`. One runner call is one diffusers `_encode` of that input with
 * tiling off (its own frame loop and causal cache included, cleared per call); the engine
 * (encode/engine.ts, docs/design.md §3 'Video encodes') cuts space into tiles, carrying every
 * frame whole, and cuts time only where the encoder declares `temporalTiling`.
 */
export interface FamilyEncoder {
  params(config: ResolvedConfig): ParamSpec[];
  /**
   * The fused encoder graph (one input `io.input`, one output `io.output`) with these (bound)
   * weights, for locality analysis and row sharding; encoders without it run only whole tiles.
   * `moments: true` (only where `moments` is declared) outputs the moments, as the runner does:
   * the graph ranks run when they row-shard or halo-tile a `--sample` encode.
   */
  graph?(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, options?: { moments?: boolean }): GraphBuilder;
  /** The graph's input and output names (with `graph`). */
  io?: { input: string; output: string };
  /**
   * Why row sharding and halo-exact tiles cannot run this encoder as one graph, in words (named
   * in their NO_ENCODER_GRAPH refusal, up front): set where there is no `graph` (an encode
   * stepped frame by frame in JS, a chain of stage graphs, a graph the analysis cannot read yet)
   * and where `graph` is one step of a loop the runner runs around it (so the graph alone is not
   * the encode; `graph` then still serves the memory model).
   */
  graphWithheld?: string;
  /**
   * What the memory model reads of one tile encode, for encoders whose runner is not one run of
   * `graph` (the KL encoder chunks its attention by the tile's size): as `FamilyRuntime.memoryRuns`,
   * for an image tile of these dims (B, C, H, W) in input pixels. Absent: one run of `graph`.
   */
  memoryRuns?(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, tileDims: readonly number[]): TileMemoryRuns;
  /** The runner; `moments: true` (only where `moments` is declared) makes it return the distribution's moments, (B, 2Cz, …). */
  createRunner(
    config: ResolvedConfig,
    weights: ReadonlyMap<string, Tensor>,
    session: SessionOptions,
    options?: { moments?: boolean },
  ): Promise<TileRunner>;
  /**
   * The runner returns the moments (mean then log-variance on axis 1) when asked: what `--sample`
   * draws from. Absent: the encoder gives the mean only, and sampling is refused for the family.
   */
  moments?: boolean;
  /** Reads the config a bare encoder weights file implies, if the family can (from shapes alone). */
  configFromWeights?(weights: ReadonlyMap<string, Shaped>): RawConfig;
  /** Key prefixes of a full checkpoint that the encoder does not own (e.g. `decoder.`). */
  ignoredKeyPrefixes: readonly string[];
  /**
   * A video encoder's frame loop (families/encode-frames.ts): which input frame counts it takes
   * and how many latent frames they give. Absent: an image encoder, input (B, C, H, W).
   */
  frames?: EncodeFrames;
  /** A frame loop that depends on the config (MiniMax-H3's `clip_length` / `token_drop`), read for the loaded config; wins over `frames`. */
  framesFor?(config: ResolvedConfig): EncodeFrames;
  /**
   * diffusers tiles this encoder over time (`_temporal_tiled_encode`, HunyuanVideo / LTX): with
   * the encoder's frame tiling on (`tiling.frames`, window and overlap in *input* frames) and
   * more input frames than the window, the engine encodes chunks of window + 1 input frames every
   * window − overlap, each through the spatial tiling operation (or whole), drops `dropFrame` of
   * every chunk after the first, blends (`blend_t`) over overlap/rt latent frames, keeps
   * (window − overlap)/rt latent frames per chunk (+1 for the first) and slices to the encoded
   * frame count. Absent: time is never cut; every call gets all frames.
   */
  temporalTiling?: { dropFrame: 'first' | 'last' };
  /**
   * diffusers counts this encoder's tiles in patchified pixels (Wan 2.2's `tiled_encode` runs on
   * the patchified input, its `_encode` compares the *input* size with the same numbers). Our
   * encoder windows are always input pixels, so the default window and overlap are the config's
   * × patch size p, and the image tiles once it exceeds window/p on an axis (diffusers' test).
   */
  patchifiedTiles?: boolean;
}

/** Decodes latent tiles to raw decoder output on one rank (one onnxruntime session set). */
export interface TileRunner {
  /**
   * Raw decoder output of one latent tile (B, C, [F,] h, w) — before unpatchify and clamp —
   * exactly as the family's decoder produces it for that tile alone.
   */
  decode(latentTile: Tensor, signal?: AbortSignal): Promise<Tensor>;
  dispose(): Promise<void>;
}
