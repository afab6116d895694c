// What a loaded decoder is wherever it runs (loadVae in Node, loadWebVae in a page): the
// planner's view (family, config, geometry, tiling), its tile runner, the spatial tiling
// operation a rank group may replace, and the bound weights its graph is built from. Loading,
// hashing and caching differ by host and stay in the subclasses.

import { defaultTiling } from '../families/registry.js';
import type { FamilyRuntime, TileRunner } from '../families/runtime-types.js';
import type { FamilySpec, ResolvedConfig, TilingState, VaeGeometry } from '../families/types.js';
import type { Tensor } from '../tensor.js';
import { localTiledDecode, type DecodingVae } from './engine.js';
import type { TiledDecode } from './types.js';

/** What Vae (Node) and WebVae (a page) share: the planner's view, the runner, the tiling decode uses; `R` is the host's kind of tile runner. */
export abstract class BoundVae<R extends TileRunner = TileRunner> implements DecodingVae {
  /** The tiling decode uses; set it with `setTiling`, never by hand. */
  tiling: TilingState;
  /** The spatial tiling operation; replace it with a rank group's `tiledDecodeFor(vae, group)`. */
  tiledDecode: TiledDecode;

  constructor(
    readonly family: FamilySpec,
    readonly config: ResolvedConfig,
    readonly runtime: FamilyRuntime,
    readonly runner: R,
    protected readonly weights: ReadonlyMap<string, Tensor>,
  ) {
    this.tiling = defaultTiling(this);
    this.tiledDecode = localTiledDecode(this, runner);
  }

  /** How latents map to samples (the resolved config's geometry). */
  get geometry(): VaeGeometry {
    return this.config.geometry;
  }

  /** Frees the decoder's sessions; the VAE cannot decode afterwards. */
  dispose(): Promise<void> {
    return this.runner.dispose();
  }
}
