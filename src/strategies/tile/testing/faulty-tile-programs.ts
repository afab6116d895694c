// Tile programs that misbehave on rank 1 after its first tile, for fault tests: they run the
// real tile program with a context whose `post` does the damage.

import { programRefs, type RankContext } from '../../../ranks/program.js';
import type { TileMessage, TileRankInput } from '../messages.js';
import { tileRank } from '../rank-program.js';

export const FAULTY_TILE_PROGRAMS = programRefs(import.meta.url, [
  'throwsAfterFirstTile',
  'wrongShape',
  'exitsAfterFirstTile',
  'everyRankExits',
]);

function onRank1(ctx: RankContext, input: TileRankInput, post: (data: TileMessage, count: number) => void) {
  if (ctx.rank !== 1) return tileRank(ctx, input);
  let count = 0;
  return tileRank({ ...ctx, post: (data) => post(data as TileMessage, ++count) }, input);
}

export function throwsAfterFirstTile(ctx: RankContext, input: TileRankInput) {
  return onRank1(ctx, input, (data, count) => {
    ctx.post(data);
    if (count === 1) throw new Error('out of device memory (simulated)');
  });
}

/** Rank 1's first crop loses its last row. */
export function wrongShape(ctx: RankContext, input: TileRankInput) {
  return onRank1(ctx, input, (data, count) => {
    const p = data.planes;
    ctx.post(
      count === 1 ? { ...data, planes: { ...p, height: p.height - 1, data: p.data.slice(0, p.planes * (p.height - 1) * p.width) } } : data,
    );
  });
}

export function exitsAfterFirstTile(ctx: RankContext, input: TileRankInput) {
  return onRank1(ctx, input, (data, count) => {
    ctx.post(data);
    if (count === 1) process.exit(9);
  });
}

export function everyRankExits(ctx: RankContext, input: TileRankInput) {
  return tileRank({ ...ctx, post: () => process.exit(9) }, input);
}
