// Tile plans against a device's buffer limits, in a page and in Node alike (pure). On WebGPU
// every tensor of a run lives in one GPUBuffer, so a tile's graph fits the device when its
// largest tensor is within both maxBufferSize and maxStorageBufferBindingSize (or a smaller cap
// the caller sets). The largest tensor is computed from the decoder graph's own shapes
// (graph/tensor-sizes.ts) for the largest latent tile a plan reads: the whole latent, the first
// tile of a tiled grid, or the halo-extended read of an exact tile. A page reads its adapter's
// limits (web/backend.ts); Node cannot (docs/design.md §13 "GPU devices"), so a Node decode on
// WebGPU plans against WebGPU's default limits unless --max-tensor replaces them
// (`providerLimits`).

import { reason, refuse } from '../errors.js';
import type { Size2, VaeSpec } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { graphIO } from '../graph/stages.js';
import { graphTensorSizes, type TensorSize } from '../graph/tensor-sizes.js';
import { tileGrid } from '../plan/grid.js';
import { explainTileOverlapPlan, explainTileShapePlan, tileOverlapPlan, tileShapePlan, setTiling } from '../plan/planner.js';
import { latentShapeOf, type LatentShape, type SampleShape } from '../plan/shapes.js';
import { exactTiles, exactTilingHalo } from '../strategies/exact-tile/halo.js';
import { analysisModelOf } from './model.js';

/** How a decode covers the latent: one call, blended tiles, or halo-exact tiles. */
export type DecodeMode = 'whole' | 'tiled' | 'exact';

/** The per-buffer limits a plan is checked against, in bytes. */
export interface BufferLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  /** A smaller cap set by the caller, if any. */
  capBytes?: number;
  /** Where the limits come from, for messages (e.g. "WebGPU device (SwiftShader)"). */
  source: string;
}

/** WebGPU's default limits (what a device gets without asking for more); lavapipe's storage binding limit equals the 128 MiB. */
export const WEBGPU_DEFAULT_LIMITS = { maxBufferSize: 256 * 2 ** 20, maxStorageBufferBindingSize: 128 * 2 ** 20 } as const;

/** Providers whose tensors live in buffers with per-buffer limits (WebGPU's). */
const CAPPED_PROVIDERS = new Set(['webgpu']);

/**
 * The buffer limits a Node decode on `provider` plans against: null where the provider's buffers
 * carry no per-buffer limit we know of (cpu, cuda, ...) and no `maxTensor` is given; on WebGPU
 * WebGPU's default limits — onnxruntime-node asks Dawn for the adapter's maxima but reports
 * neither them nor the adapter, so the defaults are the limits every adapter is known to meet —
 * and `maxTensor` (--max-tensor) replaces them, e.g. with a real GPU's larger limits.
 */
export function providerLimits(provider: string, maxTensor?: number): BufferLimits | null {
  if (maxTensor !== undefined)
    return { maxBufferSize: maxTensor, maxStorageBufferBindingSize: maxTensor, source: 'the --max-tensor / maxTensor cap' };
  if (!CAPPED_PROVIDERS.has(provider)) return null;
  return { ...WEBGPU_DEFAULT_LIMITS, source: "WebGPU's default limits (the adapter's own are not readable from onnxruntime-node)" };
}

/** The bytes one tensor may take under these limits. */
export function tensorLimitBytes(limits: BufferLimits): number {
  return Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize, limits.capBytes ?? Infinity);
}

const MIB = 2 ** 20;
const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;

/** The limits, spelled out for a refusal. */
export function describeLimits(limits: BufferLimits): string {
  const cap = limits.capBytes === undefined ? '' : `, cap ${mib(limits.capBytes)}`;
  return `${limits.source}: maxBufferSize ${mib(limits.maxBufferSize)}, maxStorageBufferBindingSize ${mib(limits.maxStorageBufferBindingSize)}${cap}`;
}

/** The largest tensor a decode of `latent` with the VAE's installed tiling allocates, and the latent tile it is for. */
export function planTensorBytes(
  vae: VaeSpec,
  model: ModelProto,
  latentDims: readonly number[],
  mode: DecodeMode,
): { largest: TensorSize; tile: Size2; tiles: number } {
  const [h, w] = latentDims.slice(-2) as [number, number];
  const latent: LatentShape = { height: h, width: w, frames: 1 };
  let tile: Size2 = { height: h, width: w };
  let tiles = 1;
  if (mode !== 'whole') {
    const grid = tileGrid(vae, latent, { spatialOnly: true });
    const reads = mode === 'exact' ? exactTiles(grid, exactTilingHalo(model)).map((t) => t.read) : grid.tiles;
    // Reduced, not spread: a grid may hold hundreds of thousands of tiles.
    tile = reads.reduce((m, t) => ({ height: Math.max(m.height, t.y1 - t.y0), width: Math.max(m.width, t.x1 - t.x0) }), {
      height: 0,
      width: 0,
    });
    tiles = reads.length;
  }
  const input = graphIO(model).input;
  const largest = graphTensorSizes(model, { [input]: [...latentDims.slice(0, -2), tile.height, tile.width] }).largest;
  return { largest, tile, tiles };
}

/** A VaeSpec copy to try plans on without touching the caller's. */
function probeOf(vae: VaeSpec): VaeSpec {
  return { family: vae.family, config: vae.config, geometry: vae.geometry, tiling: { ...vae.tiling } };
}

/**
 * Installs window and overlap (output px) on `vae` for a latent of `latent` size, refusing with
 * the planner's reasons. The overlap defaults to the family's, 0 on axes the window covers whole.
 */
export function installWindow(vae: VaeSpec, latent: Size2, window: Size2, overlap?: Size2): void {
  const r = vae.geometry.spatialRatio;
  const sampleShape = { height: latent.height * r, width: latent.width * r };
  const shape = tileShapePlan(vae, window.height, window.width, { sampleShape });
  if (!shape) {
    refuse('PLAN_REFUSED', explainTileShapePlan(vae, window.height, window.width, { sampleShape }));
  }
  setTiling(vae, shape);
  const untiled = { height: latent.height * r <= window.height, width: latent.width * r <= window.width };
  const fallback = vae.config.tiling.overlap;
  const want: Size2 = overlap ?? {
    height: untiled.height ? 0 : Math.min(fallback.height, Math.floor(window.height / r / 4) * r),
    width: untiled.width ? 0 : Math.min(fallback.width, Math.floor(window.width / r / 4) * r),
  };
  const plan = tileOverlapPlan(vae, want.height, want.width, { sampleShape });
  if (!plan) {
    refuse('PLAN_REFUSED', explainTileOverlapPlan(vae, want.height, want.width, { sampleShape }));
  }
  setTiling(vae, plan);
}

/**
 * The largest square-ish window (the same side on both axes, clipped to the image) whose tiles
 * fit `limitBytes`, with the default overlap for it; null when not even the smallest does.
 */
export function largestFittingWindow(
  vae: VaeSpec,
  model: ModelProto,
  latentDims: readonly number[],
  limitBytes: number,
  mode: Exclude<DecodeMode, 'whole'> = 'tiled',
): Size2 | null {
  const [h, w] = latentDims.slice(-2) as [number, number];
  const r = vae.geometry.spatialRatio;
  const fits = (side: number): Size2 | null => {
    const window = { height: Math.min(side, h) * r, width: Math.min(side, w) * r };
    const probe = probeOf(vae);
    try {
      installWindow(probe, { height: h, width: w }, window);
    } catch {
      return null;
    }
    return planTensorBytes(probe, model, latentDims, mode).largest.bytes <= limitBytes ? window : null;
  };
  // Tensor sizes grow with the side, so the largest fitting side is found by bisection.
  let lo = vae.family.minWindowLatent;
  let hi = Math.max(h, w);
  if (!fits(lo)) return null;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return fits(lo);
}

/** Refuses, with the numbers, a plan whose largest tensor does not fit the limits. */
export function checkPlanFits(largest: TensorSize, limits: BufferLimits, what: string, suggestion?: Size2 | null): void {
  const limit = tensorLimitBytes(limits);
  if (largest.bytes <= limit) return;
  const hint = suggestion
    ? `; the largest window that fits is ${suggestion.height}x${suggestion.width} px`
    : suggestion === null
      ? '; no window fits'
      : '';
  refuse(
    'PLAN_REFUSED',
    reason(
      'TENSOR_EXCEEDS_DEVICE_LIMIT',
      'plan',
      { tensor: largest.name, dims: largest.dims, bytes: largest.bytes },
      `a largest tensor of at most ${limit} bytes (${mib(limit)})`,
      `${what} needs a ${largest.bytes}-byte (${mib(largest.bytes)}) tensor ${largest.name} [${largest.dims.join(', ')}], over the ${limit}-byte (${mib(limit)}) limit of the ${describeLimits(limits)}${hint}`,
    ),
  );
}

/**
 * Refuses a tiled or whole request whose largest tensor is over the device's buffer limits with
 * the tensor's name, shape and size and the limit (PLAN_REFUSED, TENSOR_EXCEEDS_DEVICE_LIMIT),
 * sized from the decoder graph's shapes as a page sizes it. Row sharding has no single tile
 * graph, and video latents no 4-D one: their refusal stays the memory model's.
 */
export function checkRequestFits(vae: VaeSpec, sample: SampleShape, strategy: string, limits: BufferLimits): void {
  const model = analysisModelOf(vae);
  if (!model || strategy === 'shard' || vae.geometry.fiveDimLatents) return;
  const latent = latentShapeOf(vae.geometry, sample);
  const dims = [1, vae.geometry.latentChannels, latent.height, latent.width];
  const mode = strategy === 'exact-tile' ? 'exact' : vae.tiling.enabled ? 'tiled' : 'whole';
  const { largest } = planTensorBytes(vae, model, dims, mode);
  const what =
    mode === 'whole'
      ? `a whole decode of ${sample.height}x${sample.width} px`
      : `a ${mode} decode with a ${vae.tiling.window.height}x${vae.tiling.window.width} px window`;
  checkPlanFits(largest, limits, what);
}
