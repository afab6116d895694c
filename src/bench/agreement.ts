// How far an arm's output is from the reference decode: max abs difference on the raw sample,
// PSNR on the family's [0, 1] image (docs/design.md §9), and for tiled plans the same two numbers
// inside the seam bands (E output pixels on each side of every crop line, E the blend extent)
// and in the interior, so tone drift from tile-local normalisation shows where it happens.
// PSNR is null when the two are identical (JSON has no Infinity).

import { DistVaeError } from '../errors.js';
import { sampleToImage, type SampleRange } from '../io/image.js';
import { maxAbsDiff } from '../io/quality.js';
import type { TileGrid } from '../plan/grid.js';
import type { Tensor } from '../tensor.js';

export interface RegionError {
  maxAbs: number;
  /** dB on the mapped image; null when identical. */
  psnr: number | null;
  /** Values (channels × pixels) in the region. */
  values: number;
}

export interface Agreement extends RegionError {
  /** Tiled plans only: the error inside the seam bands and away from them (null: a region with no values). */
  seamBand?: RegionError | null;
  interior?: RegionError | null;
}

/** Output rows (or columns) within `blend` of a crop line at multiples of `keep` inside (0, length). */
export function seamMask(length: number, keep: number, blend: number): Uint8Array {
  const mask = new Uint8Array(length);
  if (blend <= 0) return mask;
  for (let line = keep; line < length; line += keep) {
    for (let i = Math.max(0, line - blend); i < Math.min(length, line + blend); i++) mask[i] = 1;
  }
  return mask;
}

interface Accumulator {
  maxAbs: number;
  squared: number;
  values: number;
}

function finish(a: Accumulator): RegionError {
  return { maxAbs: a.maxAbs, psnr: a.squared === 0 ? null : 10 * Math.log10(a.values / a.squared), values: a.values };
}

/**
 * `output` against `reference` (same dims; the last two are height and width in raw output
 * units). With the grid of a tiled plan, also split into seam bands and interior.
 */
export function agreement(output: Tensor, reference: Tensor, range: SampleRange, grid: TileGrid | null = null): Agreement {
  const maxAbs = maxAbsDiff(output, reference);
  const height = output.dims.at(-2)!;
  const width = output.dims.at(-1)!;
  const tiled = grid !== null && grid.tiled;
  if (tiled && (height !== grid.latent.height * grid.outputPerLatent || width !== grid.latent.width * grid.outputPerLatent)) {
    throw new DistVaeError(
      'TENSOR_INVALID',
      `output ${height}x${width} does not match the plan's ${grid.latent.height * grid.outputPerLatent}x${grid.latent.width * grid.outputPerLatent}`,
    );
  }
  const rows = tiled && grid.rows.length > 1 ? seamMask(height, grid.keep.height, grid.blend.height) : new Uint8Array(height);
  const cols = tiled && grid.cols.length > 1 ? seamMask(width, grid.keep.width, grid.blend.width) : new Uint8Array(width);
  const a = sampleToImage(output, range).data;
  const b = sampleToImage(reference, range).data;
  const regions: Accumulator[] = [0, 1].map(() => ({ maxAbs: 0, squared: 0, values: 0 }));
  const plane = height * width;
  for (let i = 0; i < a.length; i++) {
    const p = i % plane;
    const region = regions[rows[Math.floor(p / width)]! | cols[p % width]!]!;
    region.maxAbs = Math.max(region.maxAbs, Math.abs(output.data[i]! - reference.data[i]!));
    const d = a[i]! - b[i]!;
    region.squared += d * d;
    region.values++;
  }
  const [interior, band] = regions as [Accumulator, Accumulator];
  const whole = finish({ maxAbs, squared: interior.squared + band.squared, values: a.length });
  if (!tiled) return whole;
  return { ...whole, seamBand: band.values > 0 ? finish(band) : null, interior: interior.values > 0 ? finish(interior) : null };
}
