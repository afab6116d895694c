// A plain transcription of diffusers' `AutoencoderKL._decode` tiling dispatch and `tiled_decode`
// loop in float64, for tests: decode every tile, keep them all, blend in place in raster order
// (blend_v with the tile above, then blend_h with the tile to the left), crop each to row_limit,
// concatenate. Written from diffusers' own variables (tile_latent_min_size, overlap_size,
// blend_extent, row_limit), per axis, and independent of the planner's grid and the streaming
// assembler it checks.

import type { NumericTensor, RefTensor } from '../../graph/testing/reference-ops.js';
import * as ref from '../../graph/testing/reference-ops.js';

export interface PerAxis {
  height: number;
  width: number;
}

export interface DiffusersTiling {
  /** tile_latent_min_size: latent window (diffusers uses one number for both axes). */
  latentWindow: PerAxis;
  /** overlap_size: latent distance between tile starts, int(tile_latent_min_size · (1 − f)). */
  latentStride: PerAxis;
  /** blend_extent: int(tile_sample_min_size · f), decoder output rows / columns. */
  blendExtent: PerAxis;
  /** row_limit: tile_sample_min_size − blend_extent. */
  rowLimit: PerAxis;
}

/** diffusers' numbers for a square tile_sample_min_size, spatial ratio r and tile_overlap_factor f. */
export function diffusersTiling(sampleSize: number, ratio: number, overlapFactor: number): DiffusersTiling {
  const both = (v: number): PerAxis => ({ height: v, width: v });
  const latentWindow = Math.trunc(sampleSize / ratio);
  const blendExtent = Math.trunc(sampleSize * overlapFactor);
  return {
    latentWindow: both(latentWindow),
    latentStride: both(Math.trunc(latentWindow * (1 - overlapFactor))),
    blendExtent: both(blendExtent),
    rowLimit: both(sampleSize - blendExtent),
  };
}

function blend(a: RefTensor, b: RefTensor, extent: number, axis: 2 | 3): void {
  const [n, c, h, w] = b.dims as [number, number, number, number];
  const aLen = a.dims[axis]!;
  const e = Math.min(aLen, b.dims[axis]!, extent);
  const aw = a.dims[3]!;
  const ah = a.dims[2]!;
  for (let p = 0; p < n * c; p++) {
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const s = axis === 2 ? y : x;
        if (s >= e) continue;
        const ay = axis === 2 ? ah - e + y : y;
        const ax = axis === 3 ? aw - e + x : x;
        const bi = (p * h + y) * w + x;
        b.data[bi] = a.data[(p * ah + ay) * aw + ax]! * (1 - s / e) + b.data[bi]! * (s / e);
      }
    }
  }
}

/** `vae.decode(z)` with use_tiling: whole when the latent fits the window on both axes, else the tile loop. */
export function diffusersTiledDecode(z: NumericTensor, decodeTile: (tile: RefTensor) => RefTensor, t: DiffusersTiling): RefTensor {
  const [, , h, w] = z.dims as [number, number, number, number];
  if (!(h > t.latentWindow.height || w > t.latentWindow.width)) return decodeTile(ref.toRef(z));
  const rows: RefTensor[][] = [];
  for (let i = 0; i < h; i += t.latentStride.height) {
    const row: RefTensor[] = [];
    for (let j = 0; j < w; j += t.latentStride.width) {
      const band = ref.slice(z, 2, i, Math.min(i + t.latentWindow.height, h));
      row.push(decodeTile(ref.slice(band, 3, j, Math.min(j + t.latentWindow.width, w))));
    }
    rows.push(row);
  }
  const resultRows = rows.map((row, i) =>
    ref.concat(
      row.map((tile, j) => {
        if (i > 0) blend(rows[i - 1]![j]!, tile, t.blendExtent.height, 2);
        if (j > 0) blend(row[j - 1]!, tile, t.blendExtent.width, 3);
        const cropped = ref.slice(tile, 2, 0, Math.min(t.rowLimit.height, tile.dims[2]!));
        return ref.slice(cropped, 3, 0, Math.min(t.rowLimit.width, tile.dims[3]!));
      }),
      3,
    ),
  );
  return ref.concat(resultRows, 2);
}
