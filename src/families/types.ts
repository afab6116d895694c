// What a VAE family declares: how it reads its diffusers config, the compression ratios and
// patch size the engine computes with, its tiling defaults and the rule for a valid window,
// and how it iterates time. Engine code reads these declarations; it never branches on a
// family's name.

import type { Reason } from '../errors.js';
import type { ClipGeometry } from './clip-frames.js';

/** A height and a width (output pixels or latent units, as the field says). */
export interface Size2 {
  height: number;
  width: number;
}

/** Raw config as read from a diffusers `config.json` (or given in code). */
export type RawConfig = Readonly<Record<string, unknown>>;

/** How latents map to samples: spatial and temporal ratios, patch size, channels, and whether latents carry frames. */
export interface VaeGeometry {
  /** Output pixels per latent unit along height and width (diffusers' spatial compression ratio). */
  spatialRatio: number;
  /** Output frames per latent frame step (1 for image families). */
  temporalRatio: number;
  /**
   * Spatial patch size folded into the decoder's channels (Wan 2.2: 2). Blending happens on the
   * raw decoder output, at spatialRatio / patchSize px per latent unit.
   */
  patchSize: number;
  latentChannels: number;
  outChannels: number;
  /** Latents are 5-D (B, C, F, H, W) when true, 4-D (B, C, H, W) otherwise. */
  fiveDimLatents: boolean;
  /**
   * A decoder that runs on fixed clips of latent frames (MiniMax-H3): output frames follow the
   * clip loop (families/clip-frames.ts), not (F − 1)·rt + 1. Absent for every other family.
   */
  clips?: ClipGeometry;
}

/** How a tile's frames are produced (docs/design.md §3, temporal policy). */
export type TemporalPolicy =
  /** Image family: no time axis. */
  | { kind: 'none' }
  /** Wan / Qwen-Image: inside each spatial tile, step through latent frames with a causal cache cleared per tile. */
  | { kind: 'frame-steps' }
  /**
   * HunyuanVideo 1.5: 5-D latents, and every decoder call (a whole latent or a spatial tile) takes
   * all latent frames at once; diffusers has no temporal tiling for the class, so none is offered.
   */
  | { kind: 'all-frames' }
  /**
   * HunyuanVideo / LTX-2: temporal chunks of window/rt + 1 latent frames every stride/rt; the
   * spatial tiling operation runs once per chunk; chunks after the first drop one decoded frame.
   */
  | { kind: 'temporal-chunks'; dropFrame: 'first' | 'last' }
  /**
   * MiniMax-H3: the decoder runs on fixed clips of latent frames (its runner chunks, decodes and
   * cross-fades them inside each spatial tile); the engine hands every tile all frames, as with
   * 'frame-steps'. Output frames are not 1 + k·rt (docs/design.md §3).
   */
  | { kind: 'clip-chunks' };

/** How diffusers itself expresses this family's tiling, to say whether a plan is diffusers-equivalent. */
export type DiffusersTiling =
  /** AutoencoderKL / Flux.2: square `tile_sample_min_size` + `tile_overlap_factor`. */
  | 'square-with-overlap-factor'
  /** HunyuanVideo 1.5: `tile_sample_min_{height,width}` per axis with one `tile_overlap_factor` for both. */
  | 'windows-with-overlap-factor'
  /** Family B: `tile_sample_min_{height,width}` + `tile_sample_stride_{height,width}` in pixels. */
  | 'window-and-stride'
  /**
   * MiniMax-H3's own loop (`_split_tiles` / `_stitch_tiles`): the window is the tile and the overlap a
   * *minimum*; tiles are added and the slack spread over the seams in whole latent units, so each
   * seam's overlap is derived (plan/grid.ts `splitSpans`); blends read raw neighbours and the
   * trailing overlap of every tile is dropped (docs/design.md §3).
   */
  | 'tile-and-min-overlap'
  /** No diffusers tiling loop of its own (TAE): the project's loop is used. */
  | 'none';

/** Temporal tiling: on or off, window and overlap in output frames. */
export interface FrameTiling {
  /** Whether temporal tiling is on. */
  enabled: boolean;
  /** Window and overlap in output frames (multiples of the temporal ratio). */
  window: number;
  overlap: number;
}

/** A family's default tiling for a resolved config (what `setTiling(vae)` installs). */
export interface TilingDefaults {
  window: Size2;
  overlap: Size2;
  /** Temporal tiling defaults for families that have it; null otherwise. */
  frames: FrameTiling | null;
  /** Whether a freshly loaded VAE tiles (diffusers' `use_tiling` at construction); absent: off, as in most classes. */
  enabled?: boolean;
}

/** A family's config after defaults were applied and derived values computed. */
export interface ResolvedConfig {
  /** The diffusers `_class_name` this config corresponds to (or the TAE variant). */
  className: string;
  geometry: VaeGeometry;
  tiling: TilingDefaults;
  /** Every field the family reads, with defaults filled in, for graph builders and reports. */
  fields: Readonly<Record<string, unknown>>;
}

/** A per-channel normalisation of pixels: the sample is `(pixel − mean[c]) / std[c]`, one entry per output channel. */
export interface ChannelNormalization {
  readonly mean: readonly number[];
  readonly std: readonly number[];
}

/**
 * What a family's decoded sample holds, for image output and encoder input (docs/design.md §9):
 * a [0, 1] pixel is `sample · std[c] + mean[c]` (clamped to [0, 1]) and the encoder takes
 * `(pixel − mean[c]) / std[c]`, each step in float32 as torch computes it. 'signed' is diffusers'
 * [−1, 1] (mean = std = 0.5 on every channel: x/2 + 0.5), 'unit' TAE's [0, 1] (mean 0, std 1); a
 * `{ mean, std }` has one entry per output channel (MiniMax-H3: ImageNet's, as its pipeline undoes).
 */
export type SampleRange = 'signed' | 'unit' | ChannelNormalization;

/** What a VAE family declares: its names, how diffusers tiles it, its config reader and the checks the planner applies (the engine reads these, never a family name). */
export interface FamilySpec<Name extends string = string> {
  /** The family's name (`--family`, `planningVae`); the registry derives `FamilyName` from these. */
  name: Name;
  /** One line for humans: which models use it. */
  description: string;
  /** diffusers `_class_name` values that select this family. */
  classNames: readonly string[];
  diffusersTiling: DiffusersTiling;
  temporal: TemporalPolicy;
  /** Key prefixes of a full checkpoint that the decoder does not own (skipped by strict binding). */
  ignoredKeyPrefixes: readonly string[];
  /** Smallest window, in latent units, the decoder accepts on an axis. */
  minWindowLatent: number;
  /** What the decoded sample's values are, per channel, for image output and encoder input (see SampleRange). */
  sampleRange: SampleRange;
  /**
   * What the encoder's output is: 'diagonal-gaussian' (absent: the diffusers KL classes) — mean and
   * log-variance, of which `encode` returns the mean and `--sample` draws — or 'none' (TAE, DC-AE),
   * the latents themselves, with nothing to sample from.
   */
  latentDistribution?: 'diagonal-gaussian' | 'none';
  /** Reads a raw config (absent → published defaults); throws CONFIG_INVALID with reasons. */
  resolveConfig(raw: RawConfig | undefined): ResolvedConfig;
  /**
   * Family-specific refusals of an otherwise valid window (beyond whole latent units and
   * overlap < window). Empty when the family adds none.
   */
  extraWindowReasons?(config: ResolvedConfig, window: Size2): Reason[];
}

/** The tiling a VAE will use, in output pixels / frames. Written only by the planner (`setTiling`; `installTiling` for a rank's copy). */
export interface TilingState {
  /** Whether decode tiles at all (diffusers' `use_tiling`). */
  enabled: boolean;
  window: Size2;
  overlap: Size2;
  frames: FrameTiling | null;
}

/** A VAE as the planner sees it: family, resolved config and current tiling. */
export interface VaeSpec {
  readonly family: FamilySpec;
  readonly config: ResolvedConfig;
  readonly geometry: VaeGeometry;
  tiling: TilingState;
  /** The precision the decoder computes in (a loaded Vae's; absent: fp32): the memory model sizes float16 tensors at 2 bytes. */
  readonly precision?: 'fp32' | 'fp16';
  /**
   * Which half of the VAE runs (absent: the decoder). An encoder's plan tiles its input image
   * (windows in input pixels, latent-unit grid as for decoding) and the memory and time models
   * read its encoder graphs (image tiles in, latents out).
   */
  readonly part?: 'decoder' | 'encoder';
}
