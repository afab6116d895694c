// The encode engine: decides whole or tiled from the encoder's installed plan (the same
// `tiling` state and planner as decoding, read in input pixels), runs the spatial tiling
// operation through the replaceable `tiledEncode`, and checks the latents. A tiled encode is
// diffusers' `_tiled_encode` (docs/design.md §3, tiled encodes): tiles of `window` input
// pixels every `window − overlap`, each encoded alone, blended on the latent over
// E = overlap / r latent units (blend_v before blend_h, in raster order) and cropped to the
// stride — the decode's assembly (tile/assembler.ts) with one output unit per latent unit.
// The image is a tensor or rows read band by band (tile-bands.ts): a tiled encode pulls each
// tile's band as it reaches it; only a whole encode reads every row at once.

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
import { inMemory, TileBands, type ImageInput, type ImageRows } from './tile-bands.js';
import { ProgressCounter, type DecodeProgress } from '../decode/types.js';

/** Options of one encode. */
export interface EncodeOptions {
  signal?: AbortSignal;
  /** Called as each tile finishes (one call for a whole encode). */
  onProgress?: (e: DecodeProgress) => void;
}

/** The spatial tiling operation of an encode: the image's latents from its tiles (one rank's loop, or a rank group's). */
export type TiledEncode = ((
  image: ImageInput,
  options: EncodeOptions & TileInputOptions & { progress?: ProgressCounter },
) => Promise<Tensor>) & {
  /** Set by operations that also take untiled images (row sharding): the engine calls them whatever the plan. */
  readonly encodesUntiled?: boolean;
};

/** How a tiled encode reads tiles of rows read band by band. */
export interface TileInputOptions {
  /** A fresh source of the same rows, for a tile asked for again after its band was dropped (a failed rank's tiles dealt again). */
  reopen?: () => ImageRows & { close?(): void };
  /** Told the most bytes of input bands held at once, when the tiles are done. */
  onBandBytes?: (bytes: number) => void;
}

/** An encoder as the engine sees it: the planner's view (tiling in input pixels), its runner, the tiling operation. */
export interface EncodingVae extends VaeSpec {
  readonly runner: TileRunner;
  tiledEncode: TiledEncode;
}

/** The latent an image (B, C, H, W) encodes to, in latent units (H and W are multiples of r: `checkImage`). */
export function encodedShape(vae: Pick<VaeSpec, 'geometry'>, image: Pick<Tensor, 'dims'>): LatentShape {
  const r = vae.geometry.spatialRatio;
  return { height: image.dims[2]! / r, width: image.dims[3]! / r, frames: 1 };
}

/** The encode's tile grid: the decode grid of the same plan read for an encoder (GridOptions.encode). */
export function encodeGrid(vae: VaeSpec, image: Pick<Tensor, 'dims'>): TileGrid {
  return tileGrid(vae, encodedShape(vae, image), { encode: true, spatialOnly: true });
}

/** The input pixels of a tile of an image in memory: rows [y0·r, y1·r), cols [x0·r, x1·r) of every plane (copied). */
export function sliceImage(image: Tensor, tile: Pick<Tile, 'y0' | 'y1' | 'x0' | 'x1'>, r: number): Tensor {
  const whole = asPlanes(image);
  const rows = sliceRows(whole, tile.y0 * r, Math.min(tile.y1 * r, whole.height));
  const block = sliceCols(rows, tile.x0 * r, Math.min(tile.x1 * r, whole.width));
  return { dims: [...image.dims.slice(0, -2), block.height, block.width], data: block.data };
}

/** Every row of an image input (a whole encode takes the image at once). */
export function wholeImage(image: ImageInput): Tensor {
  return inMemory(image) ? image : image.rows(0, image.dims.at(-2)!);
}

/** `encoder.encode`: whole, or tiled as the encoder's tiling and the image size decide. */
export async function encodeImage(vae: EncodingVae, image: ImageInput, options: EncodeOptions & TileInputOptions = {}): Promise<Tensor> {
  throwIfAborted(options.signal);
  const grid = encodeGrid(vae, image);
  const progress = new ProgressCounter(grid.tiles.length, options.onProgress);
  if (grid.tiled || vae.tiledEncode.encodesUntiled) return vae.tiledEncode(image, { ...options, progress });
  const whole = wholeImage(image);
  const latents = await vae.runner.decode(whole, options.signal);
  checkFiniteOutput(latents, 'the encode');
  progress.tileDone();
  return latents;
}

/** The single-rank tiling operation: tiles in raster order on this process's runner, blended as they finish. */
export function localTiledEncode(vae: VaeSpec, runner: TileRunner): TiledEncode {
  return async (image, options) => {
    const grid = encodeGrid(vae, image);
    const layout = tileLayout(grid);
    const bands = new TileBands(image, grid.tiles, vae.geometry.spatialRatio, options.reopen);
    let assembler: RasterAssembler | null = null;
    let leading: number[] = [];
    for (const tile of grid.tiles) {
      throwIfAborted(options.signal);
      const latents = await runner.decode(bands.tile(tile.index), options.signal);
      checkFiniteOutput(latents, `encoder tile ${tile.index}`);
      const tilePlanes = asPlanes(latents);
      if (!assembler) {
        leading = latents.dims.slice(0, -2) as number[];
        assembler = new RasterAssembler(layout, planes(tilePlanes.planes, layout.outHeight, layout.outWidth));
      }
      assembler.add(tile.index, tilePlanes);
      options.progress?.tileDone();
    }
    options.onBandBytes?.(bands.peakBytesHeld);
    return { dims: [...leading, layout.outHeight, layout.outWidth], data: assembler!.output.data };
  };
}
