// Decoding in a page: the plan (whole, tiled or halo-exact; the window given, or the largest
// that fits the device), checked against the backend's buffer limits before any work, then the
// library's own decode engine on the page's runner — so the output equals the Node decode of
// the same plan — with each decoded tile reported as it lands (for drawing) and AbortSignal.

import { decodeLatents, localTiledDecode, type DecodingVae } from '../decode/engine.js';
import { checkLatents } from '../decode/latents.js';
import type { TileRunner } from '../families/runtime-types.js';
import type { Size2 } from '../families/types.js';
import type { TensorSize } from '../graph/tensor-sizes.js';
import { tileGrid } from '../plan/grid.js';
import { setTiling } from '../plan/planner.js';
import type { Tensor } from '../tensor.js';
import { exactTiledDecode, exactTiles, exactTilingHalo } from '../strategies/exact-tile/halo.js';
import type { WebBackend } from './backend.js';
import { checkPlanFits, installWindow, largestFittingWindow, planTensorBytes, tensorLimitBytes } from '../memory/device-limits.js';
import type { BufferLimits, DecodeMode } from '../memory/device-limits.js';
import type { WebVae } from './load.js';

export interface WebDecodeOptions {
  /** 'whole' (one call, refused when it does not fit), 'tiled' (default) or 'exact' (halo-exact tiles). */
  mode?: DecodeMode;
  /** Window in output px; default: the largest that fits the device (the whole image when it fits). */
  window?: Size2;
  /** Overlap in output px; default: the family's (0 on axes the window covers whole). */
  overlap?: Size2;
  /** A cap on any one tensor, below the device's limits. */
  maxTensorBytes?: number;
  signal?: AbortSignal;
  /** After each decoded tile: its raw output and where it lands in the output (px). */
  onTile?: (event: WebTileEvent) => void;
}

export interface WebTileEvent {
  index: number;
  tilesDone: number;
  tilesTotal: number;
  /** The raw decoder output of the tile (before blending). */
  tile: Tensor;
  /** Output px of the tile's top-left corner. */
  y: number;
  x: number;
}

/** A plan for one latent, with the tensor that bounds it and the limits it was checked against. */
export interface WebDecodePlan {
  mode: DecodeMode;
  /** Output px; the whole image for a whole decode. */
  window: Size2;
  overlap: Size2;
  tiles: number;
  /** Output px of each tile's read (for drawing the plan). */
  regions: { y: number; x: number; height: number; width: number }[];
  largest: TensorSize;
  limits: BufferLimits;
  limitBytes: number;
}

export interface WebDecodeResult {
  sample: Tensor;
  backend: WebBackend;
  mode: DecodeMode;
  tiles: number;
  window: Size2;
  overlap: Size2;
  /** The decode, after the sessions were built. */
  seconds: number;
  /** Building the sessions (once per VAE in a page; 0 when already built). */
  sessionSeconds: number;
  width: number;
  height: number;
  maxTensorBytes: number;
  limitBytes: number;
}

function limitsOf(vae: WebVae, cap: number | undefined): BufferLimits {
  return cap === undefined ? vae.web.limits : { ...vae.web.limits, capBytes: cap };
}

/** Plans a decode of `latentDims` on the VAE (installing the window on it) and checks it fits; refuses with the numbers. */
export function planWebDecode(
  vae: WebVae,
  latentDims: readonly number[],
  options: Pick<WebDecodeOptions, 'mode' | 'window' | 'overlap' | 'maxTensorBytes'> = {},
): WebDecodePlan {
  const mode = options.mode ?? 'tiled';
  const model = vae.decoderModel();
  const limits = limitsOf(vae, options.maxTensorBytes);
  const limitBytes = tensorLimitBytes(limits);
  const [h, w] = latentDims.slice(-2) as [number, number];
  const r = vae.geometry.spatialRatio;
  const u = r / vae.geometry.patchSize;
  const image = { height: h * r, width: w * r };
  if (mode === 'whole') {
    setTiling(vae, 'off');
    const { largest } = planTensorBytes(vae, model, latentDims, 'whole');
    checkPlanFits(
      largest,
      limits,
      `a whole decode of ${image.height}x${image.width} px`,
      largest.bytes > limitBytes ? largestFittingWindow(vae, model, latentDims, limitBytes) : undefined,
    );
    return {
      mode,
      window: image,
      overlap: { height: 0, width: 0 },
      tiles: 1,
      regions: [{ y: 0, x: 0, ...image }],
      largest,
      limits,
      limitBytes,
    };
  }
  const window = options.window ?? largestFittingWindow(vae, model, latentDims, limitBytes, mode);
  if (!window) {
    const { largest } = planTensorBytes(
      vae,
      model,
      [...latentDims.slice(0, -2), vae.family.minWindowLatent, vae.family.minWindowLatent],
      'whole',
    );
    checkPlanFits(largest, limits, `the smallest tile (${vae.family.minWindowLatent * r} px)`, null);
  }
  installWindow(vae, { height: h, width: w }, window!, options.overlap);
  const planned = planTensorBytes(vae, model, latentDims, mode);
  checkPlanFits(
    planned.largest,
    limits,
    `a ${mode} decode with a ${window!.height}x${window!.width} px window`,
    options.window ? largestFittingWindow(vae, model, latentDims, limitBytes, mode) : undefined,
  );
  const grid = tileGrid(vae, { height: h, width: w, frames: 1 }, { spatialOnly: true });
  const reads = mode === 'exact' ? exactTiles(grid, exactTilingHalo(model)).map((t) => t.read) : grid.tiles;
  return {
    mode,
    window: { ...vae.tiling.window },
    overlap: { ...vae.tiling.overlap },
    tiles: reads.length,
    regions: reads.map((t) => ({ y: t.y0 * u, x: t.x0 * u, height: (t.y1 - t.y0) * u, width: (t.x1 - t.x0) * u })),
    largest: planned.largest,
    limits,
    limitBytes,
  };
}

/** Reports each tile the runner decodes, in the order the plan reads them. */
function reportingRunner(runner: TileRunner, plan: WebDecodePlan, onTile: WebDecodeOptions['onTile']): TileRunner {
  let done = 0;
  return {
    async decode(tile, signal) {
      const out = await runner.decode(tile, signal);
      const index = done++;
      const at = plan.regions[index]!;
      onTile?.({ index, tilesDone: done, tilesTotal: plan.tiles, tile: out, y: at.y, x: at.x });
      return out;
    },
    dispose: () => runner.dispose(),
  };
}

/** Plans, checks and decodes latents in a page: `await decodeInPage(vae, latents, { onTile, signal })`. */
export async function decodeInPage(
  vae: WebVae,
  latents: Tensor,
  options: WebDecodeOptions = {},
): Promise<WebDecodeResult & { plan: WebDecodePlan }> {
  checkLatents(vae, latents);
  const plan = planWebDecode(vae, latents.dims, options);
  const runner = reportingRunner(vae.runner, plan, options.onTile);
  const decoding: DecodingVae = {
    family: vae.family,
    config: vae.config,
    geometry: vae.geometry,
    tiling: vae.tiling,
    runtime: vae.runtime,
    runner,
    tiledDecode: localTiledDecode(vae, runner),
  };
  if (plan.mode === 'exact') decoding.tiledDecode = exactTiledDecode(vae, runner, vae.decoderModel());
  // Sessions are built first (onnxruntime-web compiles its WebAssembly and shaders then), so
  // `seconds` is the decode alone and `sessionSeconds` the one-off setup.
  const building = performance.now();
  await vae.runner.prepare();
  const sessionSeconds = (performance.now() - building) / 1000;
  const started = performance.now();
  const sample = await decodeLatents(decoding, latents, options.signal ? { signal: options.signal } : {});
  const seconds = (performance.now() - started) / 1000;
  const [height, width] = sample.dims.slice(-2) as [number, number];
  return {
    sample,
    backend: vae.web.backend,
    mode: plan.mode,
    tiles: plan.tiles,
    window: plan.window,
    overlap: plan.overlap,
    seconds,
    sessionSeconds,
    width,
    height,
    maxTensorBytes: plan.largest.bytes,
    limitBytes: plan.limitBytes,
    plan,
  };
}
