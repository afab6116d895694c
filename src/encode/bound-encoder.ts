// An encoder wherever it runs (loadEncoder in Node, loadWebEncoder in a page): the planner's view
// (family, config, geometry, tiling — windows and overlaps in input pixels, set with `setTiling`
// as for a decoder), its runner, the spatial tiling operation a rank group may replace, and
// `encode`, which checks the image before the runner sees it and the latents after. Each loader
// adds what its host knows (the source read, the page's runtime).

import { defaultTiling } from '../families/registry.js';
import type { TileRunner } from '../families/runtime-types.js';
import type { FamilySpec, ResolvedConfig, TilingState, VaeGeometry } from '../families/types.js';
import type { Tensor } from '../tensor.js';
import {
  encodeImage,
  localTiledEncode,
  type EncodeOptions,
  type EncoderDeclaration,
  type EncodingVae,
  type TiledEncode,
  type TileInputOptions,
} from './engine.js';
import type { ImageInput } from './tile-bands.js';
import { checkImage } from './image-check.js';

/**
 * A loaded encoder: images (B, C, H, W) in the family's input range ([−1, 1] for the diffusers
 * classes, [0, 1] for TAE: io/row-source.ts maps pixels to it) to latents (B, Cz, H/r, W/r) — the latent
 * distribution's mean, what the family's decoder takes. A video encoder (its family declares
 * `frames`) takes (B, C, F, H, W) and returns (B, Cz, f, H/r, W/r).
 */
export class BoundEncoder implements EncodingVae {
  /** The tiling encode uses (off by default, as in diffusers); set it with `setTiling`, never by hand. */
  tiling: TilingState;
  /** The spatial tiling operation; a rank group's replaces it to deal tiles to ranks. */
  tiledEncode: TiledEncode;
  /** The half of the VAE this runs: what the planner and the memory and time models read (VaeSpec.part). */
  readonly part = 'encoder' as const;

  /** The resolved config, its tiling defaults in input pixels (`encoderConfig`). */
  readonly config: ResolvedConfig;
  /** What the family declares of its encoder: frame loop (for this config), temporal tiling, tile units. */
  readonly encoding: EncoderDeclaration;

  constructor(
    readonly family: FamilySpec,
    config: ResolvedConfig,
    readonly runner: TileRunner,
    /** The family's declaration; a frame loop that depends on the config (`framesFor`) is read for this one. */
    encoding: EncoderDeclaration = {},
  ) {
    const { framesFor, ...declared } = encoding;
    const frames = framesFor?.(config) ?? declared.frames;
    this.encoding = frames ? { ...declared, frames } : declared;
    this.config = encoderConfig(config, this.encoding);
    this.tiling = defaultTiling(this);
    this.tiledEncode = localTiledEncode(this, runner);
  }

  /** How images map to latents (the resolved config's geometry). */
  get geometry(): VaeGeometry {
    return this.config.geometry;
  }

  /**
   * Latents of `image` (or video) — a tensor, or rows read band by band (a RowSource: tiles pull
   * their bands, so the float image is never held) — whole or tiled as `tiling` decides; an input
   * the encoder cannot take is refused first (`checkImage`; a streamed image's values are checked
   * band by band).
   */
  async encode(image: ImageInput, options: EncodeOptions & TileInputOptions = {}): Promise<Tensor> {
    checkImage(this.config, image, 'image', this.encoding.frames ? { frames: this.encoding.frames } : {});
    return encodeImage(this, image, options);
  }

  /** Frees the encoder's sessions; it cannot encode afterwards. */
  dispose(): Promise<void> {
    return this.runner.dispose();
  }
}

/**
 * The config an encoder plans with: the decoder's, with the default window and overlap in
 * *input* pixels — × patch size where diffusers counts the encoder's tiles in patchified pixels
 * (Wan 2.2: 256/64 patchified = 512/128 input pixels).
 */
export function encoderConfig(config: ResolvedConfig, encoding: EncoderDeclaration): ResolvedConfig {
  const p = config.geometry.patchSize;
  if (!encoding.patchifiedTiles || p === 1) return config;
  const t = config.tiling;
  const scale = (s: { height: number; width: number }) => ({ height: s.height * p, width: s.width * p });
  return { ...config, tiling: { ...t, window: scale(t.window), overlap: scale(t.overlap) } };
}
