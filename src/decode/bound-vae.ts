// What a loaded decoder is wherever it runs (loadVae in Node, loadWebVae in a page): the
// planner's view (family, config, geometry, tiling), its tile runner, the spatial tiling
// operation a rank group may replace, and the bound weights its graph is built from. Loading,
// hashing and caching differ by host and stay in the subclasses.

import { defaultTiling } from '../families/registry.js';
import type { FamilyRuntime } from '../families/runtime-types.js';
import type { FamilySpec, ResolvedConfig, TilingState, VaeGeometry } from '../families/types.js';
import type { Tensor } from '../tensor.js';
import { localTiledDecode, type DecodingVae } from './engine.js';
import type { TiledDecode, TileRunner } from './types.js';

/** A loaded decoder; `R` is the kind of tile runner its host gives it. */
export abstract class BoundVae<R extends TileRunner = TileRunner> implements DecodingVae {
  /** The tiling decode uses; set it with `setTiling` / `disableTiling`, never by hand. */
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

  get geometry(): VaeGeometry {
    return this.config.geometry;
  }

  dispose(): Promise<void> {
    return this.runner.dispose();
  }
}
