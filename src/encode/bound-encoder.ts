// An encoder wherever it runs (loadEncoder in Node, loadWebEncoder in a page): the planner's view
// (family, config, geometry, tiling — windows and overlaps in input pixels, set with `setTiling`
// as for a decoder), its runner, the spatial tiling operation a rank group may replace, and
// `encode`, which checks the image before the runner sees it and the latents after. Each loader
// adds what its host knows (the source read, the page's runtime).

import { defaultTiling } from '../families/registry.js';
import type { TileRunner } from '../families/runtime-types.js';
import type { FamilySpec, ResolvedConfig, TilingState, VaeGeometry } from '../families/types.js';
import type { Tensor } from '../tensor.js';
import { encodeImage, localTiledEncode, type EncodeOptions, type EncodingVae, type TiledEncode, type TileInputOptions } from './engine.js';
import type { ImageInput } from './tile-bands.js';
import { checkImage } from './image-check.js';

/**
 * A loaded encoder: images (B, C, H, W) in the family's input range ([−1, 1] for the diffusers
 * classes, [0, 1] for TAE: io/row-source.ts maps pixels to it) to latents (B, Cz, H/r, W/r) — the latent
 * distribution's mean, what the family's decoder takes.
 */
export class BoundEncoder implements EncodingVae {
  /** The tiling encode uses (off by default, as in diffusers); set it with `setTiling`, never by hand. */
  tiling: TilingState;
  /** The spatial tiling operation; a rank group's replaces it to deal tiles to ranks. */
  tiledEncode: TiledEncode;
  /** The half of the VAE this runs: what the planner and the memory and time models read (VaeSpec.part). */
  readonly part = 'encoder' as const;

  constructor(
    readonly family: FamilySpec,
    readonly config: ResolvedConfig,
    readonly runner: TileRunner,
  ) {
    this.tiling = defaultTiling(this);
    this.tiledEncode = localTiledEncode(this, runner);
  }

  /** How images map to latents (the resolved config's geometry). */
  get geometry(): VaeGeometry {
    return this.config.geometry;
  }

  /**
   * Latents of `image` — a tensor, or rows read band by band (a RowSource: tiles pull their bands,
   * so the float image is never held) — whole or tiled as `tiling` decides; an image the encoder
   * cannot take is refused first (`checkImage`; a streamed image's values are checked band by band).
   */
  async encode(image: ImageInput, options: EncodeOptions & TileInputOptions = {}): Promise<Tensor> {
    checkImage(this.config, image);
    return encodeImage(this, image, options);
  }

  /** Frees the encoder's sessions; it cannot encode afterwards. */
  dispose(): Promise<void> {
    return this.runner.dispose();
  }
}
