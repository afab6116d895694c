// The spatial strategies of `distvae decode --strategy`: which tiling operation is installed on
// the VAE, and the per-rank statistics each one reports (summed over temporal chunks).
// - tile: blended tiles of the plan (diffusers' semantics); dealt to the ranks when there is a group;
// - shard: row sharding over the group's ranks (equal to the whole decode; the plan is ignored);
// - exact-tile: tiles of the plan decoded with the analysed halo and cropped (local decoders only;
//   refused, naming the nonlocal ops, otherwise).

import type { RankStats } from '../../decode/types.js';
import type { Vae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import type { RankFailure, RankGroup } from '../../ranks/group.js';
import { LocalGroup } from '../../ranks/local/local-group.js';
import type { CommCounters } from '../../ranks/program.js';
import { tiledDecodeFor } from '../../strategies/tile/tiled-decode.js';
import type { Band } from '../../strategies/shard/bands.js';
import { shardedDecodeFor } from '../../strategies/shard/sharded-decode.js';
import { exactTiledDecode } from '../../strategies/exact-tile/halo.js';
import { exactTiledDecodeFor } from '../../strategies/exact-tile/exact-tiled-decode.js';

export const STRATEGIES = ['tile', 'shard', 'exact-tile'] as const;
export type Strategy = (typeof STRATEGIES)[number];

/** A rank of a row-sharded decode: its latent rows and what it sent. */
export interface ShardRankSummary extends RankStats {
  band: { start: number; end: number };
  collectives: CommCounters;
}

export interface StrategyStats {
  ranks(): RankStats[];
  failures(): RankFailure[];
  notes(): string[];
  /** Row sharding only: the bands and the collectives summed over the ranks (and chunks). */
  shard(): { bands: Band[]; collectives: CommCounters } | null;
}

function emptyRanks(size: number): RankStats[] {
  return Array.from({ length: size }, (_, rank) => ({ rank, tiles: [], load: 0, seconds: 0 }));
}

/** Adds one call's per-rank statistics to the running totals. */
function addRanks(totals: RankStats[], stats: readonly RankStats[]): void {
  for (const r of stats) {
    const total = totals[r.rank]!;
    total.tiles = [...total.tiles, ...r.tiles].sort((a, b) => a - b);
    total.load += r.load;
    total.seconds += r.seconds;
    if (r.peakRssBytes !== undefined) total.peakRssBytes = Math.max(total.peakRssBytes ?? 0, r.peakRssBytes);
  }
}

/**
 * Installs `strategy` as `vae.tiledDecode` (the family's default plan counts as the plan to
 * distribute). Returns null where nothing is reported beyond the single-process decode
 * (tile or exact-tile without a group). Shard needs a group (of one rank too).
 */
export function installStrategy(strategy: Strategy, vae: Vae, group: RankGroup | null): StrategyStats | null {
  if (strategy === 'shard') return installShard(vae, localRanks(strategy, group));
  if (!group) {
    if (strategy === 'exact-tile') vae.tiledDecode = exactTiledDecode(vae, vae.runner, vae.decoderModel());
    return null;
  }
  vae.tiling = { ...vae.tiling, planned: true };
  const ranks = emptyRanks(group.size);
  const failures: RankFailure[] = [];
  const notes = new Set<string>();
  if (strategy === 'exact-tile') {
    vae.tiledDecode = exactTiledDecodeFor(vae, vae.decoderModel(), localRanks(strategy, group), {
      onStats: (stats) => {
        notes.add(`halo-exact tiles with a halo of ${stats.halo.rows}x${stats.halo.cols} latent units`);
        addRanks(ranks, stats.ranks);
      },
    });
  } else {
    vae.tiledDecode = tiledDecodeFor(vae, group, {
      evenOnOneRank: true,
      onStats: (stats) => {
        failures.push(...stats.failures);
        if (stats.idleRanks.length > 0) notes.add(`${stats.tiles} tile(s) for ${group.size} ranks: ${stats.idleRanks.length} rank(s) stayed idle (work is never duplicated)`);
        if (stats.assembly === 'raster') notes.add('the overlap exceeds half the window: ranks returned raw tiles and the coordinator blended them in raster order');
        addRanks(ranks, stats.ranks);
      },
    })!;
  }
  return { ranks: () => ranks, failures: () => failures, notes: () => [...notes], shard: () => null };
}

/** Row sharding and halo-exact tiles message between ranks, which only local groups do. */
function localRanks(strategy: Strategy, group: RankGroup | null): LocalGroup {
  if (group instanceof LocalGroup) return group;
  throw new DistVaeError('UNSUPPORTED', `--strategy ${strategy} needs a local rank group; ${group ? `the ${group.transport} transport` : 'no group'} cannot exchange halos`);
}

/** Image latents only (video is refused), so a decode is one sharded call: its stats are the last call's. */
function installShard(vae: Vae, group: LocalGroup): StrategyStats {
  const decode = shardedDecodeFor(vae, group);
  vae.tiledDecode = decode;
  return {
    ranks: (): ShardRankSummary[] =>
      (decode.lastStats?.ranks ?? []).map((r) => ({
        rank: r.rank,
        tiles: r.tiles,
        load: r.load,
        seconds: r.seconds,
        ...(r.peakRssBytes !== undefined ? { peakRssBytes: r.peakRssBytes } : {}),
        band: { start: r.band.start, end: r.band.end },
        collectives: r.counters,
      })),
    failures: () => [],
    notes: () => [],
    shard: () => (decode.lastStats ? { bands: decode.lastStats.bands, collectives: decode.lastStats.collectives } : null),
  };
}
