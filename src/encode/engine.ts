// The encode engine: decides whole or tiled from the encoder's installed plan (the same
// `tiling` state and planner as decoding, read in input pixels), runs the spatial tiling
// operation through the replaceable `tiledEncode`, and checks the latents. A tiled encode is
// diffusers' `_tiled_encode` (docs/design.md §3, tiled encodes): tiles of `window` input
// pixels every `window − overlap`, each encoded alone, blended on the latent over
// E = overlap / r latent units (blend_v before blend_h, in raster order) and cropped to the
// stride — the decode's assembly (tile/assembler.ts) with one output unit per latent unit.
//
// Video (B, C, F, H, W), for encoders that declare their frame loop (FamilyEncoder.frames): a
// spatial tile carries every frame (the runner runs the family's own frame loop and causal
// cache inside it, as diffusers' `tiled_encode` does per tile), so tiles are planes of
// B·C·F and the same assembly blends them. Time is cut only for encoders that declare
// `temporalTiling` (diffusers' `_temporal_tiled_encode`): input chunks of window + 1 frames,
// each through the spatial operation, assembled by the decode's TemporalAssembler on latent
// frames (tile/temporal.ts).
//
// The image is a tensor or rows read band by band (tile-bands.ts): a tiled encode pulls each
// tile's band as it reaches it; only a whole encode reads every row at once.

import { throwIfAborted } from '../errors.js';
import { encodedFrames } from '../families/encode-frames.js';
import type { FamilyEncoder, TileRunner } from '../families/runtime-types.js';
import type { VaeSpec } from '../families/types.js';
import { axisSpans, tileGrid, type Span, type Tile, type TileGrid } from '../plan/grid.js';
import type { LatentShape } from '../plan/shapes.js';
import type { Tensor } from '../tensor.js';
import { RasterAssembler } from '../tile/assembler.js';
import { planes, sliceCols, sliceRows } from '../tile/blend.js';
import { checkFiniteOutput } from '../tile/finite.js';
import { tileLayout } from '../tile/layout.js';
import { TemporalAssembler } from '../tile/temporal.js';
import { asPlanes } from '../decode/engine.js';
import { sliceFrames } from '../decode/latents.js';
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

/** A tiling operation that also takes untiled images (`encodesUntiled`), with the statistics of its last call. */
export type UntiledEncode<S> = TiledEncode & { readonly lastStats: S | null };

/**
 * `encode` marked `encodesUntiled` (the engine calls it whatever the plan), its `lastStats` read
 * through `stats`: how row sharding and halo-exact tiles present their encodes.
 */
export function untiledEncode<S>(encode: TiledEncode, stats: () => S | null): UntiledEncode<S> {
  return Object.defineProperties(encode, {
    encodesUntiled: { value: true, enumerable: true },
    lastStats: { get: stats, enumerable: true },
  }) as UntiledEncode<S>;
}

/** How a tiled encode reads tiles of rows read band by band. */
export interface TileInputOptions {
  /** A fresh source of the same rows, for a tile asked for again after its band was dropped (a failed rank's tiles dealt again). */
  reopen?: () => ImageRows & { close?(): void };
  /** Told the most bytes of input bands held at once, when the tiles are done. */
  onBandBytes?: (bytes: number) => void;
}

/** What the engine reads of a family's encoder declaration (FamilyEncoder; `framesFor` is read into `frames` when an encoder is made). */
export type EncoderDeclaration = Pick<FamilyEncoder, 'frames' | 'framesFor' | 'temporalTiling' | 'patchifiedTiles'>;

/** An encoder as the engine sees it: the planner's view (tiling in input pixels), its declaration, its runner, the tiling operation. */
export interface EncodingVae extends EncodingSpec {
  readonly runner: TileRunner;
  tiledEncode: TiledEncode;
}

/** An encoder as its grid and shapes are computed: the planner's view and the family's encoder declaration. */
export interface EncodingSpec extends VaeSpec {
  readonly encoding: EncoderDeclaration;
}

/**
 * The latent an input encodes to, in latent units: an image (B, C, H, W), or a video
 * (B, C, F, H, W) whose frames the declaration maps (`encodedFrames`). H, W and F are ones the
 * encoder takes (`checkImage`).
 */
export function encodedShape(vae: Pick<EncodingSpec, 'geometry' | 'encoding'>, image: Pick<Tensor, 'dims'>): LatentShape {
  const r = vae.geometry.spatialRatio;
  const [h, w] = image.dims.slice(-2) as [number, number];
  const frames = vae.encoding.frames;
  const f = image.dims.length === 5 && frames ? encodedFrames(frames, vae.geometry.temporalRatio, image.dims[2]!) : 1;
  return { height: h / r, width: w / r, frames: f };
}

/**
 * The encode's (spatial) tile grid: the decode grid of the same plan read for an encoder
 * (GridOptions.encode), tiling past window/p when diffusers counts the encoder's tiles in
 * patchified pixels (FamilyEncoder.patchifiedTiles).
 */
export function encodeGrid(vae: EncodingSpec, image: Pick<Tensor, 'dims'>): TileGrid {
  const { spatialRatio: r, patchSize: p } = vae.geometry;
  const w = vae.tiling.window;
  const above = vae.encoding.patchifiedTiles ? { tilesAbove: { height: w.height / (r * p), width: w.width / (r * p) } } : {};
  return tileGrid(vae, encodedShape(vae, image), { encode: true, spatialOnly: true, ...above });
}

/**
 * The temporal chunks of a video encode (FamilyEncoder.temporalTiling), in input frames, with the
 * latent blend and keep; null when time is not cut (no declaration, frame tiling off, or no more
 * frames than the window — diffusers' `num_frames > tile_sample_min_num_frames`).
 */
export function encodeChunks(vae: EncodingSpec, image: Pick<Tensor, 'dims'>): { chunks: Span[]; blend: number; keep: number } | null {
  const frames = vae.tiling.frames;
  if (!vae.encoding.temporalTiling || !frames?.enabled || image.dims.length !== 5) return null;
  const f = image.dims[2]!;
  if (f <= frames.window) return null;
  const rt = vae.geometry.temporalRatio;
  const stride = frames.window - frames.overlap;
  return { chunks: axisSpans(f, frames.window + 1, stride), blend: frames.overlap / rt, keep: stride / rt };
}

/** The input pixels of a tile of an image in memory: rows [y0·r, y1·r), cols [x0·r, x1·r) of every plane — every frame of a video (copied). */
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

/**
 * `encoder.encode`: whole, spatially tiled, and for encoders that tile time, in temporal chunks —
 * as the encoder's tiling and the input size decide. Rows read band by band are pulled by the
 * tiles; a whole encode, and a video's temporal chunks, take the input whole.
 */
export async function encodeImage(vae: EncodingVae, image: ImageInput, options: EncodeOptions & TileInputOptions = {}): Promise<Tensor> {
  throwIfAborted(options.signal);
  const grid = encodeGrid(vae, image);
  const time = encodeChunks(vae, image);
  const progress = new ProgressCounter(grid.tiles.length * (time?.chunks.length ?? 1), options.onProgress);
  const encodeChunk = async (input: ImageInput, chunk?: number): Promise<Tensor> => {
    throwIfAborted(options.signal);
    if (grid.tiled || vae.tiledEncode.encodesUntiled) return vae.tiledEncode(input, { ...options, progress });
    const latents = await vae.runner.decode(wholeImage(input), options.signal);
    checkFiniteOutput(latents, chunk === undefined ? 'the encode' : `the encode of temporal chunk ${chunk}`);
    progress.tileDone(chunk === undefined ? {} : { chunk });
    return latents;
  };
  if (!time) return encodeChunk(image);
  const video = wholeImage(image);
  const outFrames = encodedShape(vae, video).frames;
  let assembler: TemporalAssembler | null = null;
  for (const [i, span] of time.chunks.entries()) {
    const out = await encodeChunk(sliceFrames(video, span), i);
    const [b, c, , h, w] = out.dims as number[];
    assembler ??= new TemporalAssembler(
      { chunks: time.chunks.length, blend: time.blend, keep: time.keep, dropFrame: vae.encoding.temporalTiling!.dropFrame, outFrames },
      { batch: b!, channels: c!, height: h!, width: w! },
    );
    assembler.add(i, out);
  }
  return { dims: assembler!.outputDims, data: assembler!.output };
}

/** The single-rank tiling operation: tiles in raster order on this process's runner, blended as they finish. */
export function localTiledEncode(vae: EncodingSpec, runner: TileRunner): TiledEncode {
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
