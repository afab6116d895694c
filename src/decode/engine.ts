// The decode engine: validates latents, decides whole / tiled / temporally chunked from the
// installed plan (docs/design.md §3), runs the spatial tiling operation through the replaceable
// `tiledDecode` once per temporal chunk, assembles chunks, and applies the family's
// post-processing once, after assembly — never per tile.

import { abortedError, throwIfAborted } from '../errors.js';
import type { FamilyRuntime, TileRunner } from '../families/runtime-types.js';
import type { VaeSpec } from '../families/types.js';
import { tileGrid, type TileGrid } from '../plan/grid.js';
import type { Tensor } from '../tensor.js';
import { planes, type Planes } from '../tile/blend.js';
import { RasterAssembler } from '../tile/assembler.js';
import { checkFiniteOutput } from '../tile/finite.js';
import { tileLayout } from '../tile/layout.js';
import { TemporalAssembler } from '../tile/temporal.js';
import { checkLatents, sliceFrames, sliceLatent } from './latents.js';
import { ProgressCounter, type DecodeOptions, type TiledDecode } from './types.js';

export interface DecodingVae extends VaeSpec {
  readonly runtime: FamilyRuntime;
  readonly runner: TileRunner;
  tiledDecode: TiledDecode;
}

/** `promise`'s outcome, or ABORTED as soon as `signal` fires (what `promise` stands for goes on: its owner ends it). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortedError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortedError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** One chunk (or the whole latent) through the tiling operation, or the runner when nothing tiles. */
function chunkDecoder(vae: DecodingVae, grid: TileGrid, options: DecodeOptions): (chunkLatents: Tensor, chunk?: number) => Promise<Tensor> {
  const progress = new ProgressCounter(grid.tiles.length * grid.chunks.length, options.onProgress);
  return async (chunkLatents, chunk) => {
    throwIfAborted(options.signal);
    if (grid.tiled || vae.tiledDecode.decodesUntiled) return vae.tiledDecode(chunkLatents, { ...options, progress });
    const raw = await vae.runner.decode(chunkLatents, options.signal);
    checkFiniteOutput(raw, chunk === undefined ? 'the whole decode' : `temporal chunk ${chunk}`);
    progress.tileDone(chunk === undefined ? {} : { chunk });
    return raw;
  };
}

/**
 * The temporal chunks of a chunked decode in order, each assembled with the chunk before it;
 * `onChunk` receives each chunk's final raw frames [t0, t0 + f) and is awaited before the next
 * chunk is decoded. `streaming` leaves the whole output unallocated.
 */
async function decodeChunks(
  vae: DecodingVae,
  latents: Tensor,
  grid: TileGrid,
  options: DecodeOptions,
  streaming: boolean,
  onChunk?: (t0: number, frames: Tensor) => Promise<void>,
): Promise<TemporalAssembler> {
  if (vae.family.temporal.kind !== 'temporal-chunks') throw new Error('unreachable: chunks without a chunked temporal policy');
  const decodeChunk = chunkDecoder(vae, grid, options);
  const frames = (checkLatents(vae, latents).frames - 1) * vae.geometry.temporalRatio + 1;
  let assembler: TemporalAssembler | null = null;
  for (const [i, span] of grid.chunks.entries()) {
    const out = await decodeChunk(sliceFrames(latents, span), i);
    if (!assembler) {
      const [b, c, , h, w] = out.dims as number[];
      assembler = new TemporalAssembler(
        {
          chunks: grid.chunks.length,
          blend: grid.frameBlend,
          keep: grid.frameKeep,
          dropFrame: vae.family.temporal.dropFrame,
          outFrames: frames,
        },
        { batch: b!, channels: c!, height: h!, width: w! },
        { streaming },
      );
    }
    if (!streaming) assembler.add(i, out);
    else {
      const taken = assembler.takeChunk(i, out);
      await onChunk!(taken.t0, taken.frames);
    }
  }
  return assembler!;
}

/** `vae.decode`: whole, tiled or chunked as the VAE's tiling and the latent size decide. */
export async function decodeLatents(vae: DecodingVae, latents: Tensor, options: DecodeOptions = {}): Promise<Tensor> {
  const latent = checkLatents(vae, latents);
  const grid = tileGrid(vae, latent);
  let raw: Tensor;
  if (grid.chunks.length === 1) {
    raw = await chunkDecoder(vae, grid, options)(latents);
  } else {
    const assembler = await decodeChunks(vae, latents, grid, options, false);
    raw = { dims: assembler.outputDims, data: assembler.output };
  }
  return vae.runtime.postprocess(raw, { spatiallyTiled: grid.tiled, config: vae.config });
}

/**
 * A video decode whose frames arrive in order as each temporal chunk is assembled
 * (`onFrames(t0, frames)`, (B, C, f, H, W), post-processed; awaited before the next chunk), so
 * memory holds one chunk, not the video. `streamed` is false when the family or the plan
 * decodes all frames at once (one chunk, or a family whose spatial tiles span every frame):
 * then the whole sample arrives once and memory holds it.
 */
export async function decodeToFrames(
  vae: DecodingVae,
  latents: Tensor,
  onFrames: (t0: number, frames: Tensor) => void | Promise<void>,
  options: DecodeOptions = {},
): Promise<{ dims: number[]; streamed: boolean }> {
  const latent = checkLatents(vae, latents);
  const grid = tileGrid(vae, latent);
  if (!vae.geometry.fiveDimLatents || grid.chunks.length === 1) {
    const sample = await decodeLatents(vae, latents, options);
    await onFrames(0, sample);
    return { dims: [...sample.dims], streamed: false };
  }
  let dims: number[] = [];
  const assembler = await decodeChunks(vae, latents, grid, options, true, async (t0, raw) => {
    // Post-processing is frame-local, so it applies chunk by chunk.
    const out = vae.runtime.postprocess(raw, { spatiallyTiled: grid.tiled, config: vae.config });
    dims = [...out.dims];
    await onFrames(t0, out);
  });
  return { dims: [...dims.slice(0, 2), assembler.outputDims[2]!, ...dims.slice(3)], streamed: true };
}

/** Treats a (B, C, [F,] h, w) tensor as B·C·F planes of h × w (same memory, no copy). */
export function asPlanes(t: Tensor): { planes: number; height: number; width: number; data: Float32Array } {
  const [h, w] = t.dims.slice(-2) as [number, number];
  return { planes: t.data.length / (h * w), height: h, width: w, data: t.data };
}

/**
 * A decode whose output arrives as bands of finished rows (`decodeToBands`): each band is the
 * post-processed sample's rows [y0, y0 + h), in order; `streamed` says whether the image was
 * assembled band by band (memory independent of its height) or decoded whole first.
 */
export async function decodeToBands(
  vae: DecodingVae,
  latents: Tensor,
  onBand: (y0: number, band: Tensor) => void,
  options: DecodeOptions = {},
): Promise<{ dims: number[]; streamed: boolean }> {
  const latent = checkLatents(vae, latents);
  const grid = tileGrid(vae, latent);
  const stream = vae.tiledDecode.streamBands;
  if (!grid.tiled || grid.chunks.length > 1 || vae.geometry.fiveDimLatents || !stream) {
    const sample = await decodeLatents(vae, latents, options);
    onBand(0, sample);
    return { dims: [...sample.dims], streamed: false };
  }
  const progress = new ProgressCounter(grid.tiles.length, options.onProgress);
  let dims: number[] = [];
  const raw = await stream(
    latents,
    (y0, band) => {
      // Post-processing is row-local (clamp, unpatchify), so it applies band by band.
      const out = vae.runtime.postprocess(band, { spatiallyTiled: true, config: vae.config });
      onBand(y0 * (out.dims.at(-2)! / band.dims.at(-2)!), out);
      dims = [...out.dims];
    },
    { ...options, progress },
  );
  const scale = dims.at(-1)! / raw.dims.at(-1)!;
  return { dims: [...raw.dims.slice(0, -2), raw.dims.at(-2)! * scale, raw.dims.at(-1)! * scale], streamed: true };
}

/**
 * The single-rank spatial tiling operation: decode tiles in raster order on this process's
 * runner and stream them through the assembler as they finish.
 */
export function localTiledDecode(vae: VaeSpec, runner: TileRunner): TiledDecode {
  const run = async (
    latents: Tensor,
    options: DecodeOptions & { progress?: ProgressCounter },
    onBand?: (y0: number, band: Tensor) => void,
  ): Promise<{ dims: number[]; output: Planes | null }> => {
    const latent = checkLatents(vae, latents);
    const grid = tileGrid(vae, latent, { spatialOnly: true });
    const layout = tileLayout(grid);
    let assembler: RasterAssembler | null = null;
    let leading: number[] = [];
    for (const tile of grid.tiles) {
      throwIfAborted(options.signal);
      const raw = await runner.decode(sliceLatent(latents, tile), options.signal);
      if (!assembler) {
        leading = raw.dims.slice(0, -2) as number[];
        const p = asPlanes(raw).planes;
        const sink = onBand && {
          planes: p,
          band: (y0: number, band: Planes) => onBand(y0, { dims: [...leading, band.height, band.width], data: band.data }),
        };
        assembler = new RasterAssembler(layout, sink ?? planes(p, layout.outHeight, layout.outWidth));
      }
      checkFiniteOutput(raw, `tile ${tile.index}`);
      assembler.add(tile.index, asPlanes(raw));
      options.progress?.tileDone();
    }
    return { dims: [...leading, layout.outHeight, layout.outWidth], output: onBand ? null : assembler!.output };
  };
  const tiled = async (latents: Tensor, options: DecodeOptions & { progress?: ProgressCounter } = {}): Promise<Tensor> => {
    const { dims, output } = await run(latents, options);
    return { dims, data: output!.data };
  };
  return Object.assign(tiled, {
    streamBands: async (
      latents: Tensor,
      onBand: (y0: number, band: Tensor) => void,
      options: DecodeOptions & { progress?: ProgressCounter } = {},
    ) => ({ dims: (await run(latents, options, onBand)).dims }),
  });
}
