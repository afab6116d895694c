// The coordinator side of a distributed tile decode on a group that runs rank programs (a local
// group; a queue decodes tile jobs itself). It runs the tile program on every rank with the dealt tiles and the edge routes between ranks, accepts each tile once
// from the rank that owns it, and tells the ranks to stop when every tile is in.
//
// Recovery: when a rank is lost, its unfinished tiles are dealt again (by work) to the ranks
// still running; a finished tile of the lost rank whose edges an unfinished neighbour still
// reads is decoded again for its edges only (the neighbour may never have received them), and
// ranks holding the edges a re-dealt tile reads are told to send them to its new owner. Decodes
// are deterministic, so the image is the same. A rank whose program throws, or whose result is
// rejected, fails the job (RANK_FAILED) — the same input would fail again elsewhere.
//
// Bounded memory (a streamed decode must not grow with the image's height): each rank holds at
// most AHEAD dealt tiles it has not delivered, its next ones in raster order, and gets the next
// as it delivers one, never more than ranks × AHEAD tiles past the lowest undelivered — so
// neither side holds every tile's latent slice, nor a rank every raw tile that waits for a
// neighbour's edges, nor the coordinator the rows below a stalled rank's tile. When every reader of a tile's raw edges has been delivered,
// the ranks holding them are told to drop them.

import { abortedError, DistVaeError } from '../../errors.js';
import { scheduleTiles } from '../../plan/scheduler.js';
import { rankFailed, type ProgramGroup, type RankOutcome, type RankRun } from '../../ranks/group.js';
import type { DistRankStats, RankFailure, TileJob, TileJobOptions, TileJobResult } from '../../ranks/group.js';
import { programRef } from '../../ranks/program.js';
import { edgeReaders } from './messages.js';
import type { EdgeRoute, TileMessage, TileRankInput, TileRankReport, TileWork, ToTileRank } from './messages.js';
import { edgeSources } from '../../tile/assembler.js';

export const TILE_RANK_PROGRAM = programRef(new URL('./rank-program.js', import.meta.url), 'tileRank');

/**
 * Undelivered tiles a rank holds at most: the one it decodes and two more, so a rank whose
 * neighbour is late with its edges goes on decoding instead of idling.
 */
export const AHEAD = 3;

/** Decodes every tile of `job` on `group`'s ranks with the tile program, with the `TileJobGroup.decodeTiles` contract. */
export async function runTileJob(group: ProgramGroup, job: TileJob, options: TileJobOptions): Promise<TileJobResult> {
  const { layout } = job;
  const tileCount = job.work.length;
  const edges = job.assembly === 'edges';
  const owner = new Array<number>(tileCount).fill(-1);
  job.schedule.ranks.forEach((tiles, rank) => tiles.forEach((t) => (owner[t] = rank)));
  if (owner.some((o) => o < 0 || o >= group.size)) {
    throw new DistVaeError('INVALID_ARGUMENT', `the schedule must deal each of the ${tileCount} tiles to one of ${group.size} ranks`);
  }
  const finished = new Array<boolean>(tileCount).fill(false);
  const deliveredBy = Array.from({ length: group.size }, () => [] as number[]);
  const lostAfter = new Array<number | null>(group.size).fill(null);
  const failures: RankFailure[] = [];
  const redealt: number[] = [];
  const edgeRedecodes: number[] = [];
  let remaining = tileCount;
  const started = performance.now();

  /** Routes for tile t's edges to the owners of its unfinished readers on other ranks. */
  const routesOf = (t: number): EdgeRoute[] => {
    if (!edges) return [];
    const byRank = new Map<number, EdgeRoute>();
    for (const { tile, part } of edgeReaders(layout, t)) {
      const to = owner[tile]!;
      if (finished[tile] || to === owner[t]) continue;
      const route = byRank.get(to) ?? { tile: t, to, rows: false, cols: false };
      route[part] = true;
      byRank.set(to, route);
    }
    return [...byRank.values()];
  };
  const work = (t: number, edgesOnly: boolean): TileWork => ({ index: t, latent: job.latentOf(t), edgesOnly });
  // Dealt but not yet handed over, ascending: a rank decodes in raster order, and a tile only
  // reads edges of tiles before it, so the lowest undelivered tile is always held by its rank.
  const pending = Array.from({ length: group.size }, (_, r) => [...(job.schedule.ranks[r] ?? [])].sort((a, b) => a - b));
  const held = new Array<number>(group.size).fill(0);
  const highestHanded = new Array<number>(group.size).fill(-1);
  const hand = (rank: number, t: number) => {
    held[rank]!++;
    highestHanded[rank] = Math.max(highestHanded[rank]!, t);
    return work(t, false);
  };
  // No tile is handed more than ranks × AHEAD past the lowest undelivered one: a stalled rank
  // cannot make the others run ahead while the coordinator holds the rows below its tile.
  let lowest = 0;
  const span = group.size * AHEAD;
  const nextWork = (rank: number): TileWork[] => {
    const out: TileWork[] = [];
    while (held[rank]! < AHEAD && pending[rank]!.length > 0 && pending[rank]![0]! < lowest + span)
      out.push(hand(rank, pending[rank]!.shift()!));
    return out;
  };
  const input = (rank: number): TileRankInput => {
    const mine = job.schedule.ranks[rank] ?? [];
    return { vae: job.vae, layout, assembly: job.assembly, work: nextWork(rank), routes: mine.flatMap(routesOf) };
  };
  const released = new Array<boolean>(tileCount).fill(false);

  return new Promise<TileJobResult>((resolve, reject) => {
    let run: RankRun | null = null;
    let failed = false;
    const pump = (rank: number) => {
      if (!run?.running(rank)) return;
      const next = nextWork(rank);
      if (next.length > 0) run.post(rank, { kind: 'work', work: next, routes: [] } satisfies ToTileRank);
    };
    /** Tells the ranks holding tile s's raw edges to drop them once every tile that reads them is in. */
    const release = (delivered: number) => {
      const src = edgeSources(layout, delivered);
      for (const s of [src.above, src.left, src.corner]) {
        if (s === null || released[s]) continue;
        const readers = edgeReaders(layout, s);
        if (!readers.every((r) => finished[r.tile])) continue;
        released[s] = true;
        for (const rank of new Set([owner[s]!, ...readers.map((r) => owner[r.tile]!)]))
          if (run?.running(rank)) run.post(rank, { kind: 'release', tiles: [s] } satisfies ToTileRank);
      }
    };
    const fail = (e: DistVaeError) => {
      if (failed) return;
      failed = true;
      run?.cancel(e.message);
      reject(e);
    };
    const onAbort = () => fail(abortedError(options.signal!));
    if (options.signal?.aborted) return fail(abortedError(options.signal));
    options.signal?.addEventListener('abort', onAbort, { once: true });

    const accept = (rank: number, data: unknown) => {
      if (failed) return;
      const m = data as TileMessage;
      const index = m?.index;
      if (m?.kind !== 'tile' || !Number.isInteger(index) || index < 0 || index >= tileCount || owner[index] !== rank || finished[index]) {
        return fail(
          new DistVaeError(
            'RANK_FAILED',
            `rank ${rank} sent tile ${String(index)}, which is not a tile it holds unfinished; its result is rejected`,
          ),
        );
      }
      try {
        options.onResult({ index, rank, kind: edges ? 'crop' : 'raw', leading: m.leading, planes: m.planes });
      } catch (e) {
        // Output that came out non-finite is the network's doing, not a rank's wrong result.
        if (e instanceof DistVaeError && e.code === 'NON_FINITE_OUTPUT') return fail(e);
        return fail(
          new DistVaeError('RANK_FAILED', `rank ${rank} returned a wrong result for tile ${index}, rejected: ${(e as Error).message}`, {
            cause: e,
          }),
        );
      }
      finished[index] = true;
      deliveredBy[rank]!.push(index);
      held[rank]!--;
      if (--remaining === 0) for (let r = 0; r < group.size; r++) run?.post(r, { kind: 'finish' } satisfies ToTileRank);
      else {
        if (edges) release(index);
        while (finished[lowest]) lowest++;
        for (let r = 0; r < group.size; r++) pump(r);
      }
    };

    const recover = (lost: number) => {
      const survivors = Array.from({ length: group.size }, (_, r) => r).filter((r) => run!.running(r));
      const unfinished = owner.flatMap((o, t) => (o === lost && !finished[t] ? [t] : []));
      const forEdges = edges
        ? owner.flatMap((o, t) => (o === lost && finished[t] && edgeReaders(layout, t).some((r) => !finished[r.tile]) ? [t] : []))
        : [];
      const tiles = [...unfinished, ...forEdges].sort((a, b) => a - b);
      pending[lost] = [];
      held[lost] = 0;
      if (tiles.length === 0) return;
      if (survivors.length === 0) {
        return fail(
          new DistVaeError(
            'RANK_FAILED',
            `every rank was lost with ${remaining} tile(s) unfinished: ${failures.map((f) => `rank ${f.rank} (${f.cause})`).join('; ')}`,
          ),
        );
      }
      const deal = scheduleTiles(
        tiles.map((t) => job.work[t]!),
        survivors.length,
      );
      deal.ranks.forEach((ks, i) => ks.forEach((k) => (owner[tiles[k]!] = survivors[i]!)));
      redealt.push(...unfinished);
      edgeRedecodes.push(...forEdges);
      const messages = new Map<number, { work: TileWork[]; routes: EdgeRoute[] }>(survivors.map((r) => [r, { work: [], routes: [] }]));
      const moved = new Set(tiles);
      for (const t of tiles) {
        const to = owner[t]!;
        const m = messages.get(to)!;
        // A tile below one the survivor already holds is handed now (that one may wait on its
        // edges); a later one joins the survivor's pending tiles, in order.
        if (finished[t]) m.work.push(work(t, true));
        else if (t < highestHanded[to]!) m.work.push(hand(to, t));
        else pending[to]!.splice(sortedIndex(pending[to]!, t), 0, t);
        m.routes.push(...routesOf(t));
      }
      // Edges a re-dealt tile reads from tiles that stayed where they were.
      for (const t of unfinished) {
        const src = edgeSources(layout, t);
        const reads: [number | null, 'rows' | 'cols'][] = [
          [src.above, 'rows'],
          [src.left, 'cols'],
          [src.corner, 'rows'],
        ];
        for (const [k, part] of reads) {
          if (k === null || moved.has(k) || owner[k] === owner[t]) continue;
          messages.get(owner[k]!)!.routes.push({ tile: k, to: owner[t]!, rows: part === 'rows', cols: part === 'cols' });
        }
      }
      for (const [rank, m] of messages) {
        m.work.push(...nextWork(rank));
        if (m.work.length > 0 || m.routes.length > 0) run!.post(rank, { kind: 'work', ...m } satisfies ToTileRank);
      }
    };

    const reports = new Array<(TileRankReport & { peakRssBytes?: number }) | null>(group.size).fill(null);
    const onOutcome = (o: RankOutcome) => {
      if (failed) return;
      if (o.status === 'done') {
        reports[o.rank] = { ...(o.result as TileRankReport), ...(o.peakRssBytes !== undefined ? { peakRssBytes: o.peakRssBytes } : {}) };
      } else if (o.status === 'failed') {
        fail(rankFailed(o));
      } else {
        lostAfter[o.rank] = (performance.now() - started) / 1000;
        failures.push({ rank: o.rank, cause: o.cause });
        if (remaining > 0) recover(o.rank);
      }
    };

    group
      .launch(TILE_RANK_PROGRAM, { input, onPost: accept, onOutcome, ...(options.signal ? { signal: options.signal } : {}) })
      .then((r) => {
        run = r;
        if (failed) r.cancel('the job already failed');
        return r.settled;
      })
      .then(
        () => {
          options.signal?.removeEventListener('abort', onAbort);
          if (failed) return;
          if (remaining > 0) return fail(new DistVaeError('RANK_FAILED', `the ranks ended with ${remaining} tile(s) unfinished`));
          const ranks: DistRankStats[] = deliveredBy.map((tiles, rank) => {
            const report = reports[rank];
            return {
              rank,
              tiles: [...tiles].sort((a, b) => a - b),
              load: tiles.reduce((s, t) => s + job.work[t]!, 0),
              seconds: report?.busySeconds ?? lostAfter[rank] ?? 0,
              decoderSeconds: report?.decoderSeconds ?? 0,
              loadSeconds: report?.loadSeconds ?? 0,
              ...(report?.counters !== undefined ? { counters: report.counters } : {}),
              ...(report?.peakRssBytes !== undefined ? { peakRssBytes: report.peakRssBytes } : {}),
            };
          });
          resolve({ ranks, failures, redealt: redealt.sort((a, b) => a - b), edgeRedecodes: edgeRedecodes.sort((a, b) => a - b) });
        },
        (e: unknown) => {
          options.signal?.removeEventListener('abort', onAbort);
          if (e instanceof DistVaeError) fail(e);
          else fail(new DistVaeError('TRANSPORT_FAILED', `the group could not run the tile job: ${(e as Error).message}`, { cause: e }));
        },
      );
  });
}

/** Where `t` goes in the ascending `list`. */
function sortedIndex(list: readonly number[], t: number): number {
  let i = 0;
  while (i < list.length && list[i]! < t) i++;
  return i;
}
