// Band arithmetic of row sharding (docs/design.md §6): the latent's rows split into one contiguous band
// per rank, as even as possible, at least one latent row each — so every band edge is a whole
// multiple of the spatial scale factor in output rows, and of every intermediate resolution.
// An encoder's bands are the same split of the latent rows its image encodes to, counted in
// input rows (multiples of r): "latent rows" below then means the graph input's rows.
// A value at s rows per latent row holds rows [start·s, end·s) of a band; a stage with a halo of
// H latent rows reads [start·s − H·s, end·s + H·s), clamped to the image. Everything here is
// integer arithmetic on latent rows and exact ratios.

import { reason, refuse } from '../../errors.js';
import { compareRatio, ratio, wholeTimes, type Ratio } from '../../graph/ratio.js';

/** Latent rows [start, end) of one rank. */
export interface Band {
  rank: number;
  start: number;
  end: number;
}

/**
 * Splits `latentRows` into `ranks` bands (the first `latentRows mod ranks` one row taller).
 * `pixels` names what a latent row spans in the refusal: a decoder's output rows, or an
 * encoder's input rows.
 */
export function splitBands(latentRows: number, ranks: number, spatialRatio: number, pixels: 'output' | 'input' = 'output'): Band[] {
  if (!Number.isSafeInteger(ranks) || ranks < 1) {
    refuse('INVALID_ARGUMENT', reason('RANKS_INVALID', 'ranks', ranks, 'an integer ≥ 1'));
  }
  if (latentRows < ranks) {
    refuse(
      'INVALID_ARGUMENT',
      reason(
        'TOO_MANY_RANKS',
        'ranks',
        ranks,
        `at most ${latentRows} (one latent row, ${spatialRatio} ${pixels} rows, per rank)`,
        `${ranks} ranks cannot share ${latentRows} latent rows (${latentRows * spatialRatio} ${pixels} rows): row sharding needs at least one latent row (${spatialRatio} ${pixels} rows) per rank`,
      ),
    );
  }
  const base = Math.floor(latentRows / ranks);
  const taller = latentRows % ranks;
  const bands: Band[] = [];
  let start = 0;
  for (let rank = 0; rank < ranks; rank++) {
    const end = start + base + (rank < taller ? 1 : 0);
    bands.push({ rank, start, end });
    start = end;
  }
  return bands;
}

/**
 * The bands of an encoder's input: `splitBands` over the latent rows the image encodes to, each
 * edge then in input rows (× r). Every band is whole latent rows, so every stride-2
 * down-sampler of the encoder (and the bottom pad before it) splits exactly between bands.
 */
export function splitInputBands(inputRows: number, ranks: number, spatialRatio: number): Band[] {
  return splitBands(inputRows / spatialRatio, ranks, spatialRatio, 'input').map((b) => ({
    rank: b.rank,
    start: b.start * spatialRatio,
    end: b.end * spatialRatio,
  }));
}

/** Rows [from, to) of a value at `scale` rows per latent row. */
export interface RowSpan {
  from: number;
  to: number;
}

/** The band's own rows of a value at `scale`. */
export function bandRows(band: Band, scale: Ratio): RowSpan {
  return { from: wholeTimes(band.start, scale), to: wholeTimes(band.end, scale) };
}

/** The rows a stage with latent halo `halo` reads around the band, clamped to the image. */
export function haloRows(band: Band, halo: Ratio, latentRows: number, scale: Ratio): RowSpan {
  const h = wholeTimes(1, ratio(halo.num * scale.num, halo.den * scale.den));
  const own = bandRows(band, scale);
  return { from: Math.max(0, own.from - h), to: Math.min(wholeTimes(latentRows, scale), own.to + h) };
}

/**
 * The ranks whose bands hold some of the rows `reader`'s halo needs (its halo may reach past a
 * neighbour's band when bands are thinner than the halo), in rank order.
 */
export function haloSources(bands: readonly Band[], reader: Band, halo: Ratio): number[] {
  if (halo.num === 0) return [];
  const above = { num: reader.start * halo.den - halo.num, den: halo.den };
  const below = { num: reader.end * halo.den + halo.num, den: halo.den };
  return bands
    .filter((b) => b.rank !== reader.rank)
    .filter((b) => (b.end <= reader.start ? compareRatio(ratio(b.end), above) > 0 : compareRatio(ratio(b.start), below) < 0))
    .map((b) => b.rank);
}

/** Rows of `owner`'s band that `reader` needs for a halo of `halo` latent rows, at `scale`. */
export function rowsForReader(owner: Band, reader: Band, halo: Ratio, latentRows: number, scale: Ratio): RowSpan {
  const need = haloRows(reader, halo, latentRows, scale);
  const own = bandRows(owner, scale);
  return { from: Math.max(need.from, own.from), to: Math.min(need.to, own.to) };
}
