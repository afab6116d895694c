// Halo-exact tiles: for a decoder the locality analysis proves local (every op has a finite
// receptive field, e.g. TAESD), each tile is decoded with `halo` extra latent rows and columns
// on every side (fewer at the image border, where the graph's own padding is the true one) and
// cropped back to its core, so the assembled output equals the whole decode — no blending, no
// seams. Cores are the plan's strides: tile (i, j) owns latent rows [i·stride, (i+1)·stride)
// (clipped), so the plan's tile count is kept and each decode reads stride + 2·halo units.
// A graph with GroupNorm, attention or any other nonlocal op is refused, naming the ops.
// Encoders (TAE without pool blocks) take the same tiles on their encode grid, image pixels in.

import { asPlanes } from '../../decode/engine.js';
import { checkLatents, sliceLatent } from '../../decode/latents.js';
import type { TileRunner } from '../../families/runtime-types.js';
import type { ProgressCounter, TiledDecode } from '../../decode/types.js';
import { encodeGrid, sliceImage, wholeImage, type EncodingSpec, type TiledEncode } from '../../encode/engine.js';
import { compareRatio, ONE, wholeTimes, type Ratio } from '../../graph/ratio.js';
import type { Tensor } from '../../tensor.js';
import { DistVaeError, reason, throwIfAborted } from '../../errors.js';
import type { VaeSpec } from '../../families/types.js';
import { checkFiniteOutput } from '../../tile/finite.js';
import { analyzeLocality } from '../../graph/locality.js';
import type { ModelProto } from '../../graph/onnx-proto.js';
import { tileGrid, type Tile, type TileGrid } from '../../plan/grid.js';

/** The latent rows and columns a tile reads beyond its own to be exact. */
export interface Halo {
  rows: number;
  cols: number;
}

/**
 * The latent halo that makes tiles of `model` exact; refuses a graph with nonlocal ops, naming
 * them. The analysis counts the halo in rows of the graph's input: a decoder's latent, or an
 * encoder's image, whose halo is whole latent units (the analysis lands it on whole rows of the
 * coarsest value), converted here by the graph's output scale.
 */
export function exactTilingHalo(model: ModelProto): Halo {
  const report = analyzeLocality(model);
  if (report.exactTiling.possible) {
    const { halo } = report.exactTiling;
    const { rows, cols } = report.outputScale;
    // An encoder's output is coarser than its input: its latent units are rows of the output.
    const latent = (n: number, s: Ratio) => (compareRatio(s, ONE) < 0 ? wholeTimes(n, s) : n);
    return { rows: latent(halo.rows, rows), cols: latent(halo.cols, cols) };
  }
  const part = compareRatio(report.outputScale.rows, ONE) < 0 ? 'encoder' : 'decoder';
  const reasons = report.exactTiling.blockers.map((b) =>
    reason(
      'NONLOCAL_OP',
      'strategy',
      'exact-tile',
      `a ${part} whose ops are all local (no GroupNorm, attention or other op over every position)`,
      `halo-exact tiles are impossible: ${b} reads every position`,
    ),
  );
  throw new DistVaeError(
    'UNSUPPORTED',
    `halo-exact tiling refused: the ${part} has nonlocal ops: ${report.exactTiling.blockers.join('; ')}`,
    { reasons },
  );
}

/** A tile's core (the latent it owns) and the latent it reads (core + halo, clipped). */
export interface ExactTile {
  core: Tile;
  read: Pick<Tile, 'y0' | 'y1' | 'x0' | 'x1'>;
}

export function exactTiles(grid: TileGrid, halo: Halo): ExactTile[] {
  const { height, width } = grid.latent;
  return grid.tiles.map((t) => {
    const core = { ...t, y1: Math.min(height, t.y0 + grid.strideLatent.height), x1: Math.min(width, t.x0 + grid.strideLatent.width) };
    return {
      core,
      read: {
        y0: Math.max(0, core.y0 - halo.rows),
        y1: Math.min(height, core.y1 + halo.rows),
        x0: Math.max(0, core.x0 - halo.cols),
        x1: Math.min(width, core.x1 + halo.cols),
      },
    };
  });
}

/** Planes of an image stack: `planes` × height × width values. */
export interface PlaneBlock {
  planes: number;
  height: number;
  width: number;
  data: Float32Array;
}

/** Copies rows [sy, sy + h) × cols [sx, sx + w) of every plane of `from` to (dy, dx) of `to`. */
export function copyBlock(from: PlaneBlock, sy: number, sx: number, h: number, w: number, to: PlaneBlock, dy: number, dx: number): void {
  for (let p = 0; p < from.planes; p++) {
    for (let y = 0; y < h; y++) {
      const source = (p * from.height + sy + y) * from.width + sx;
      to.data.set(from.data.subarray(source, source + w), (p * to.height + dy + y) * to.width + dx);
    }
  }
}

/** Where a tile's core lies in its decoded output and in the whole output (output units). */
export function corePlacement(tile: ExactTile, perLatent: number): { sy: number; sx: number; h: number; w: number; y: number; x: number } {
  return {
    sy: (tile.core.y0 - tile.read.y0) * perLatent,
    sx: (tile.core.x0 - tile.read.x0) * perLatent,
    h: (tile.core.y1 - tile.core.y0) * perLatent,
    w: (tile.core.x1 - tile.core.x0) * perLatent,
    y: tile.core.y0 * perLatent,
    x: tile.core.x0 * perLatent,
  };
}

/**
 * The halo-exact spatial tiling operation for `vae` on this process's runner (a drop-in for
 * `vae.tiledDecode`); `model` is the VAE's fused decoder graph, checked here once.
 */
export function exactTiledDecode(vae: VaeSpec, runner: TileRunner, model: ModelProto): TiledDecode {
  const halo = exactTilingHalo(model);
  return async (latents, options = {}) => {
    const latent = checkLatents(vae, latents);
    const grid = tileGrid(vae, latent, { spatialOnly: true });
    return runExactTilesHere(runner, grid, halo, (read) => sliceLatent(latents, read), options);
  };
}

/**
 * The halo-exact tiling operation of an encoder on this process's runner (a drop-in for
 * `encoder.tiledEncode`): the encode grid's tiles (latent units), each encoded from its core's
 * image pixels plus the analysed halo (whole latent units, r pixels each) and cropped to its
 * core. `model` is the encoder's fused graph, checked here once (nonlocal ops refused by name).
 */
export function exactTiledEncode(encoder: EncodingSpec, runner: TileRunner, model: ModelProto): TiledEncode {
  const halo = exactTilingHalo(model);
  const r = encoder.geometry.spatialRatio;
  // Halo-exact tiles read the image whole (their reads overlap by the halo; not band by band yet).
  return async (input, options) => {
    const image = wholeImage(input);
    return runExactTilesHere(runner, encodeGrid(encoder, image), halo, (read) => sliceImage(image, read, r), options);
  };
}

/** `grid`'s tiles with `halo` around their cores through `runner`, cores written into the output in raster order. */
async function runExactTilesHere(
  runner: TileRunner,
  grid: TileGrid,
  halo: Halo,
  slice: (read: ExactTile['read']) => Tensor,
  options: { signal?: AbortSignal; progress?: ProgressCounter },
): Promise<Tensor> {
  const { latent } = grid;
  const u = grid.outputPerLatent;
  let out: PlaneBlock | null = null;
  let leading: number[] = [];
  for (const [index, tile] of exactTiles(grid, halo).entries()) {
    throwIfAborted(options.signal);
    const raw = await runner.decode(slice(tile.read), options.signal);
    const planes = asPlanes(raw);
    if (!out) {
      leading = raw.dims.slice(0, -2) as number[];
      out = {
        planes: planes.planes,
        height: latent.height * u,
        width: latent.width * u,
        data: new Float32Array(planes.planes * latent.height * u * latent.width * u),
      };
    }
    const c = corePlacement(tile, u);
    // Only the core lands in the output: its halo may be anything.
    checkFiniteOutput(raw, `tile ${index}`, c);
    copyBlock(planes, c.sy, c.sx, c.h, c.w, out, c.y, c.x);
    options.progress?.tileDone();
  }
  return { dims: [...leading, out!.height, out!.width], data: out!.data };
}
