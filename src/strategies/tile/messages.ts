// Messages of the distributed tile decode between the coordinator and a rank's tile program,
// and between ranks (raw edges, one blend deep).

import type { Tensor } from '../../tensor.js';
import type { Planes } from '../../tile/blend.js';
import type { TileLayout } from '../../tile/layout.js';
import type { Assembly } from '../../ranks/group.js';
import type { CommCounters, VaeRef } from '../../ranks/program.js';

/** A tile to decode; `edgesOnly` when its crop is already in and only a neighbour needs its edges again. */
export interface TileWork {
  index: number;
  latent: Tensor;
  edgesOnly: boolean;
}

/** Send the raw edges of `tile` to rank `to`: its last rows and/or last columns. */
export interface EdgeRoute {
  tile: number;
  to: number;
  rows: boolean;
  cols: boolean;
}

export interface TileRankInput {
  vae: VaeRef;
  layout: TileLayout;
  assembly: Assembly;
  work: TileWork[];
  routes: EdgeRoute[];
}

/**
 * From the coordinator: more tiles (and edge routes), drop the raw edges of tiles every reader of
 * which is in (`release`), or end.
 */
export type ToTileRank =
  { kind: 'work'; work: TileWork[]; routes: EdgeRoute[] } | { kind: 'release'; tiles: number[] } | { kind: 'finish' };

/** A finished crop ('edges') or a raw tile ('raster'). */
export interface TileMessage {
  kind: 'tile';
  index: number;
  leading: number[];
  planes: Planes;
}

/** Peer message (tag EDGES_TAG): raw edges of one tile. */
export interface EdgeMessage {
  tile: number;
  rows?: Planes;
  cols?: Planes;
}

export const EDGES_TAG = 'edges';

export interface TileRankReport {
  /** Tiles whose crop (or raw tile) this rank delivered. */
  tiles: number[];
  decoderSeconds: number;
  loadSeconds: number;
  /** From the start of the run to the last tile this rank finished. */
  busySeconds: number;
  /** What this rank sent to other ranks (raw edges), by kind of operation. */
  counters: CommCounters;
}

/**
 * The tiles whose blends read tile `index`'s raw edges: the tile on the right reads its last
 * columns, the tile below its last rows, the tile below-right its last rows' corner.
 */
export function edgeReaders(layout: TileLayout, index: number): { tile: number; part: 'rows' | 'cols' }[] {
  const row = Math.floor(index / layout.cols);
  const col = index % layout.cols;
  const right = col + 1 < layout.cols;
  const below = row + 1 < layout.rows;
  const readers: { tile: number; part: 'rows' | 'cols' }[] = [];
  if (right) readers.push({ tile: index + 1, part: 'cols' });
  if (below) readers.push({ tile: index + layout.cols, part: 'rows' });
  if (right && below) readers.push({ tile: index + layout.cols + 1, part: 'rows' });
  return readers;
}
