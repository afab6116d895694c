// `useStrategy(vae, strategy, group)`: the one call that picks how a VAE's tiles are decoded —
// which tiling operation is installed as `vae.tiledDecode` — and the per-rank statistics each
// strategy reports, summed over the calls of a decode (one per temporal chunk):
// - tile: blended tiles of the plan (diffusers' semantics), dealt to the group's ranks when
//   there is something to distribute (`tiledDecodeFor`: more than one rank and tiling on);
// - shard: row sharding over a local group's ranks (equal to the whole decode; the plan is ignored);
// - exact-tile: the plan's tiles decoded with the analysed halo and cropped (local decoders
//   only; refused, naming the nonlocal ops, otherwise), on a local group or in this process.
// Every refusal is a DistVaeError with reasons, thrown before any rank works.

import { localTiledDecode } from '../decode/engine.js';
import type { RankStats } from '../decode/types.js';
import type { Vae } from '../decode/vae.js';
import { localTiledEncode } from '../encode/engine.js';
import { Encoder } from '../encode/encoder.js';
import { reason, refuse } from '../errors.js';
import type { ProgramGroup, RankFailure, RankGroup } from '../ranks/group.js';
import type { CommCounters } from '../ranks/program.js';
import { exactTiledDecodeFor } from './exact-tile/exact-tiled-decode.js';
import { exactTiledDecode, exactTiledEncode } from './exact-tile/halo.js';
import { exactTiledEncodeFor } from './exact-tile/exact-tiled-encode.js';
import type { Band } from './shard/bands.js';
import { shardedDecodeFor, type ShardStats } from './shard/sharded-decode.js';
import { shardedEncodeFor } from './shard/sharded-encode.js';
import { tiledDecodeFor } from './tile/tiled-decode.js';
import { tiledEncodeFor } from './tile/tiled-encode.js';

/** The decode strategies `useStrategy` installs. */
export const STRATEGIES = ['tile', 'shard', 'exact-tile'] as const;
/** One of STRATEGIES: how `useStrategy` decodes the spatial tiles. */
export type Strategy = (typeof STRATEGIES)[number];

/** A rank of a row-sharded decode: its latent rows and what it sent. */
export interface ShardRankSummary extends RankStats {
  band: { start: number; end: number };
  collectives: CommCounters;
}

/** What the installed strategy reports after (or during) decodes; read it after `vae.decode`. */
export interface StrategyReport {
  /** Every rank of the group with its tiles, load and time (idle ranks with none). */
  ranks(): RankStats[];
  /** Ranks lost during the decode whose tiles the others decoded. */
  failures(): RankFailure[];
  /** Sentences worth telling a user (idle ranks, the raster fallback, the halo used). */
  notes(): string[];
  /** Row sharding only: the bands and the collectives summed over the ranks. */
  shard(): { bands: Band[]; collectives: CommCounters } | null;
}

/** Options of `useStrategy`. */
export interface UseStrategyOptions {
  /** tile: decode through the group even when there is nothing to distribute (see `TiledDecodeForOptions.offThread`). */
  offThread?: boolean;
}

/**
 * Installs `strategy` as `vae.tiledDecode`, on `group` where given. Returns the report of the
 * ranks' work, or null where the decode stays in this process (tile with no group, one rank or
 * tiling off; exact-tile with no group), with its tiling operation reset to the local one.
 * Refuses (DistVaeError with reasons) an unknown strategy, shard or exact-tile on a group whose
 * ranks cannot message each other (a queue), shard without a group, and exact-tile on a decoder
 * with nonlocal ops.
 *
 * @example
 * const group = localGroup({ ranks: 4 });
 * await group.start();
 * setTiling(vae);
 * const report = useStrategy(vae, 'tile', group);
 * const sample = await vae.decode(latents);
 * console.log(report?.ranks());
 */
export function useStrategy(
  vae: Vae | Encoder,
  strategy: Strategy,
  group?: RankGroup | null,
  options: UseStrategyOptions = {},
): StrategyReport | null {
  if (!(STRATEGIES as readonly string[]).includes(strategy)) {
    refuse('INVALID_ARGUMENT', reason('STRATEGY_INVALID', 'strategy', strategy, `one of ${STRATEGIES.join(', ')}`));
  }
  if (vae instanceof Encoder) return useEncodeStrategy(vae, strategy, group);
  if (strategy === 'shard') return useShard(vae, localRanks(strategy, group));
  if (strategy === 'exact-tile' && !group) {
    vae.tiledDecode = exactTiledDecode(vae, vae.runner, vae.decoderModel());
    return null;
  }
  const ranks = emptyRanks(group?.size ?? 1);
  const failures: RankFailure[] = [];
  const notes = new Set<string>();
  if (strategy === 'exact-tile') {
    vae.tiledDecode = exactTiledDecodeFor(vae, localRanks(strategy, group), {
      onStats: (stats) => {
        notes.add(`halo-exact tiles with a halo of ${stats.halo.rows}x${stats.halo.cols} latent units`);
        addRanks(ranks, stats.ranks);
      },
    });
    return report(ranks, failures, notes);
  }
  const distributed = group
    ? tiledDecodeFor(vae, group, {
        ...(options.offThread ? { offThread: true } : {}),
        onStats: (stats) => {
          failures.push(...stats.failures);
          if (stats.idleRanks.length > 0)
            notes.add(
              `${stats.tiles} tile(s) for ${group.size} ranks: ${stats.idleRanks.length} rank(s) stayed idle (work is never duplicated)`,
            );
          if (stats.assembly === 'raster')
            notes.add('the overlap exceeds half the window: ranks returned raw tiles and the coordinator blended them in raster order');
          addRanks(ranks, stats.ranks);
        },
      })
    : null;
  vae.tiledDecode = distributed ?? localTiledDecode(vae, vae.runner);
  return distributed ? report(ranks, failures, notes) : null;
}

/**
 * An encoder's strategy, as for a decoder: 'tile' deals its tiles to the group's ranks (bitwise
 * the one-rank tiled encode); 'shard' row-shards it over a local group (equal to the whole
 * encode); 'exact-tile' encodes the plan's tiles with the analysed halo (local encoders only).
 */
function useEncodeStrategy(encoder: Encoder, strategy: Strategy, group?: RankGroup | null): StrategyReport | null {
  if (strategy === 'shard') {
    const encode = shardedEncodeFor(encoder, localRanks(strategy, group));
    encoder.tiledEncode = encode;
    return shardReport(() => encode.lastStats);
  }
  if (strategy === 'exact-tile') {
    if (!group) {
      encoder.tiledEncode = exactTiledEncode(encoder, encoder.runner, encoder.encoderModel());
      return null;
    }
    const ranks = emptyRanks(group.size);
    const notes = new Set<string>();
    encoder.tiledEncode = exactTiledEncodeFor(encoder, localRanks(strategy, group), {
      onStats: (stats) => {
        notes.add(`halo-exact tiles with a halo of ${stats.halo.rows}x${stats.halo.cols} latent units`);
        addRanks(ranks, stats.ranks);
      },
    });
    return report(ranks, [], notes);
  }
  const ranks = emptyRanks(group?.size ?? 1);
  const failures: RankFailure[] = [];
  const notes = new Set<string>();
  const distributed = group
    ? tiledEncodeFor(encoder, group, {
        onStats: (stats) => {
          failures.push(...stats.failures);
          if (stats.idleRanks.length > 0)
            notes.add(
              `${stats.tiles} tile(s) for ${group.size} ranks: ${stats.idleRanks.length} rank(s) stayed idle (work is never duplicated)`,
            );
          addRanks(ranks, stats.ranks);
        },
      })
    : null;
  encoder.tiledEncode = distributed ?? localTiledEncode(encoder, encoder.runner);
  return distributed ? report(ranks, failures, notes) : null;
}

function report(ranks: RankStats[], failures: RankFailure[], notes: Set<string>): StrategyReport {
  return { ranks: () => ranks, failures: () => failures, notes: () => [...notes], shard: () => null };
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

/** Row sharding and halo-exact tiles message between ranks, which only groups that run rank programs (local groups) do. */
function localRanks(strategy: Strategy, group: RankGroup | null | undefined): ProgramGroup {
  if (group?.kind === 'programs') return group;
  refuse(
    'UNSUPPORTED',
    reason(
      'STRATEGY_NEEDS_LOCAL_GROUP',
      'group',
      group ? group.transport : null,
      'a local rank group (localGroup)',
      `strategy ${strategy} needs a local rank group; ${group ? `the ${group.transport} transport` : 'no group'} cannot exchange halos`,
    ),
  );
}

/** Image latents only (video is refused), so a decode is one sharded call: its stats are the last call's. */
function useShard(vae: Vae, group: ProgramGroup): StrategyReport {
  const decode = shardedDecodeFor(vae, group);
  vae.tiledDecode = decode;
  return shardReport(() => decode.lastStats);
}

/** The report of a row-sharded decode or encode: its last call's bands, ranks and collectives. */
function shardReport(last: () => ShardStats | null): StrategyReport {
  return {
    ranks: (): ShardRankSummary[] =>
      (last()?.ranks ?? []).map((r) => ({
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
    shard: () => {
      const s = last();
      return s ? { bands: s.bands, collectives: s.collectives } : null;
    },
  };
}
