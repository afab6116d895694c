// The encode engine: decides whole or tiled from the encoder's installed plan (the same
// `tiling` state and planner as decoding, read in input pixels), runs the spatial tiling
// operation through the replaceable `tiledEncode`, and checks the latents. A tiled encode is
// diffusers' `_tiled_encode` (docs/design.md §3, tiled encodes): tiles of `window` input
// pixels every `window − overlap`, each encoded alone, blended on the latent over
// E = overlap / r latent units (blend_v before blend_h, in raster order) and cropped to the
// stride — the decode's assembly (tile/assembler.ts) with one output unit per latent unit.

import { throwIfAborted } from '../errors.js';
import type { TileRunner } from '../families/runtime-types.js';
import type { VaeSpec } from '../families/types.js';
import { tileGrid, type Tile, type TileGrid } from '../plan/grid.js';
import type { LatentShape } from '../plan/shapes.js';
import type { Tensor } from '../tensor.js';
import { RasterAssembler } from '../tile/assembler.js';
import { planes, sliceCols, sliceRows } from '../tile/blend.js';
import { checkFiniteOutput } from '../tile/finite.js';
import { tileLayout } from '../tile/layout.js';
import { asPlanes } from '../decode/engine.js';
import { ProgressCounter, type DecodeProgress } from '../decode/types.js';

/** Options of one encode. */
export interface EncodeOptions {
  signal?: AbortSignal;
  /** Called as each tile finishes (one call for a whole encode). */
  onProgress?: (e: DecodeProgress) => void;
}

/** The spatial tiling operation of an encode: the image's latents from its tiles (one rank's loop, or a rank group's). */
export type TiledEncode = ((image: Tensor, options: EncodeOptions & { progress?: ProgressCounter }) => Promise<Tensor>) & {
  /** Set by operations that also take untiled images (row sharding): the engine calls them whatever the plan. */
  readonly encodesUntiled?: boolean;
};

/** An encoder as the engine sees it: the planner's view (tiling in input pixels), its runner, the tiling operation. */
export interface EncodingVae extends VaeSpec {
  readonly runner: TileRunner;
  tiledEncode: TiledEncode;
}

/** The latent an image (B, C, H, W) encodes to, in latent units (H and W are multiples of r: `checkImage`). */
export function encodedShape(vae: Pick<VaeSpec, 'geometry'>, image: Tensor): LatentShape {
  const r = vae.geometry.spatialRatio;
  return { height: image.dims[2]! / r, width: image.dims[3]! / r, frames: 1 };
}

/** The encode's tile grid: the decode grid of the same plan read for an encoder (GridOptions.encode). */
export function encodeGrid(vae: VaeSpec, image: Tensor): TileGrid {
  return tileGrid(vae, encodedShape(vae, image), { encode: true, spatialOnly: true });
}

/** The input pixels of a tile: rows [y0·r, y1·r), cols [x0·r, x1·r) of every plane (copied). */
export function sliceImage(image: Tensor, tile: Pick<Tile, 'y0' | 'y1' | 'x0' | 'x1'>, r: number): Tensor {
  const whole = asPlanes(image);
  const rows = sliceRows(whole, tile.y0 * r, Math.min(tile.y1 * r, whole.height));
  const block = sliceCols(rows, tile.x0 * r, Math.min(tile.x1 * r, whole.width));
  return { dims: [...image.dims.slice(0, -2), block.height, block.width], data: block.data };
}

/** `encoder.encode`: whole, or tiled as the encoder's tiling and the image size decide. */
export async function encodeImage(vae: EncodingVae, image: Tensor, options: EncodeOptions = {}): Promise<Tensor> {
  throwIfAborted(options.signal);
  const grid = encodeGrid(vae, image);
  const progress = new ProgressCounter(grid.tiles.length, options.onProgress);
  if (grid.tiled || vae.tiledEncode.encodesUntiled) return vae.tiledEncode(image, { ...options, progress });
  const latents = await vae.runner.decode(image, options.signal);
  checkFiniteOutput(latents, 'the encode');
  progress.tileDone();
  return latents;
}

/** The single-rank tiling operation: tiles in raster order on this process's runner, blended as they finish. */
export function localTiledEncode(vae: VaeSpec, runner: TileRunner): TiledEncode {
  return async (image, options) => {
    const grid = encodeGrid(vae, image);
    const layout = tileLayout(grid);
    const r = vae.geometry.spatialRatio;
    let assembler: RasterAssembler | null = null;
    let leading: number[] = [];
    for (const tile of grid.tiles) {
      throwIfAborted(options.signal);
      const latents = await runner.decode(sliceImage(image, tile, r), options.signal);
      checkFiniteOutput(latents, `encoder tile ${tile.index}`);
      const tilePlanes = asPlanes(latents);
      if (!assembler) {
        leading = latents.dims.slice(0, -2) as number[];
        assembler = new RasterAssembler(layout, planes(tilePlanes.planes, layout.outHeight, layout.outWidth));
      }
      assembler.add(tile.index, tilePlanes);
      options.progress?.tileDone();
    }
    return { dims: [...leading, layout.outHeight, layout.outWidth], data: assembler!.output.data };
  };
}
