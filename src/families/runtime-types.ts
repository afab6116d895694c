// What a family supplies to run its decoder: the parameters it owns, a tile runner built from
// bound weights (one onnxruntime session set), and the post-processing diffusers applies after
// assembly. Engine code calls these; it never branches on a family's name.

import type { GraphBuilder } from '../graph/builder.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import type { SessionOptions } from '../runtime/session-types.js';
import type { Tensor } from '../tensor.js';
import type { Shaped } from '../weights/bind.js';
import type { ParamSpec } from '../weights/synthetic.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from './types.js';

/**
 * A family as the registry lists it: what it declares (read by the planner) and how it decodes.
 * Each family folder exports one; adding a family is that folder and one line of registry.ts.
 */
export interface Family<Name extends string = string> {
  spec: FamilySpec<Name>;
  runtime: FamilyRuntime;
}

export interface FamilyRuntime {
  /** Decoder parameters under the checkpoint's own key names, with shapes and synthetic init. */
  decoderParams(config: ResolvedConfig): ParamSpec[];
  /**
   * The fused decoder graph (one input, one output) with these (bound) weights, for locality
   * analysis, staging and row sharding; families without it decode only whole tiles.
   */
  decoderGraph?(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>): GraphBuilder;
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
 * encoder on an image (B, C, H, W) with H and W multiples of the geometry's spatial ratio, in
 * the family's input range (`FamilySpec.sampleRange`: [−1, 1] for the diffusers classes, [0, 1]
 * for TAE), and returns the latents the family's decoder takes (the distribution's mean).
 */
export interface FamilyEncoder {
  params(config: ResolvedConfig): ParamSpec[];
  /**
   * The fused encoder graph (one input `io.input`, one output `io.output`) with these (bound)
   * weights, for locality analysis and row sharding; encoders without it run only whole tiles.
   */
  graph?(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>): GraphBuilder;
  /** The graph's input and output names (with `graph`). */
  io?: { input: string; output: string };
  /**
   * What the memory model reads of one tile encode, for encoders whose runner is not one run of
   * `graph` (the KL encoder chunks its attention by the tile's size): as `FamilyRuntime.memoryRuns`,
   * for an image tile of these dims (B, C, H, W) in input pixels. Absent: one run of `graph`.
   */
  memoryRuns?(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, tileDims: readonly number[]): TileMemoryRuns;
  createRunner(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, session: SessionOptions): Promise<TileRunner>;
  /** Reads the config a bare encoder weights file implies, if the family can (from shapes alone). */
  configFromWeights?(weights: ReadonlyMap<string, Shaped>): RawConfig;
  /** Key prefixes of a full checkpoint that the encoder does not own (e.g. `decoder.`). */
  ignoredKeyPrefixes: readonly string[];
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
