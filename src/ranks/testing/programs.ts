// Rank programs the conformance suite runs on every transport: identities, messaging,
// collectives, and the faults a transport must survive (a throw, an exit, a hang).

import { threadId } from 'node:worker_threads';
import { DistVaeError } from '../../errors.js';
import { programRefs, type RankContext } from '../program.js';

export const PROGRAMS = programRefs(import.meta.url, ['identity', 'ring', 'echo', 'collectives', 'fault']);

export async function identity(ctx: RankContext, input: unknown) {
  return { rank: ctx.rank, size: ctx.size, threads: ctx.threads, deviceId: ctx.deviceId ?? null, pid: process.pid, threadId, input };
}

/** Each rank sends a Float32Array to the next rank (mod size) and returns what it received. */
export async function ring(ctx: RankContext) {
  const { rank, size } = ctx;
  ctx.comm.send((rank + 1) % size, new Float32Array([rank, rank + 0.5]), 'ring');
  const got = (await ctx.comm.recv((rank + size - 1) % size, 'ring')) as Float32Array;
  return { isFloat32: got instanceof Float32Array, values: Array.from(got) };
}

/** Posts its input to the coordinator, then returns the coordinator's reply. */
export async function echo(ctx: RankContext, input: unknown) {
  const reply = new Promise((resolve) => ctx.onMessage(resolve));
  ctx.post({ rank: ctx.rank, input });
  return reply;
}

/** Every collective once, with rank-dependent data. */
export async function collectives(ctx: RankContext, input: { values: number[][] }) {
  const { comm, rank } = ctx;
  const mine = Float64Array.from(input.values[rank]!);
  const sum = await comm.allReduce(mine, 'sum');
  const max = await comm.allReduce(mine, 'max');
  const min = await comm.allReduce(mine, 'min');
  const gathered = await comm.allGather({ rank, square: rank * rank });
  const broadcast = await comm.broadcast(rank === 1 ? { from: 1, data: new Float32Array([7, 8]) } : null, 1);
  const neighbours = await comm.neighbourExchange(`to ${rank - 1} from ${rank}`, `to ${rank + 1} from ${rank}`);
  await comm.barrier();
  return { sum: Array.from(sum), max: Array.from(max), min: Array.from(min), gathered, broadcast, neighbours, counters: comm.counters() };
}

export type Fault = { rank: number; kind: 'throw' | 'exit' | 'hang' | 'block' } | null;

/** How long a 'block' rank holds its thread, as a long decoder call does (no event is handled meanwhile). */
export const BLOCK_MS = 60_000;

/**
 * The faulty rank throws or exits its thread/process, or ('block') posts that it is waiting and
 * then blocks its thread; every other rank (and a 'hang' rank) posts that it is waiting, then
 * waits for a message that never comes, so a transport must cancel it.
 */
export async function fault(ctx: RankContext, input: Fault) {
  if (input?.rank === ctx.rank) {
    if (input.kind === 'throw') throw new DistVaeError('RUNTIME_FAILED', `rank ${ctx.rank} was told to throw`);
    if (input.kind === 'exit') process.exit(3);
    if (input.kind === 'block') {
      ctx.post({ waiting: ctx.rank, blocking: true });
      // Let the post leave before the thread stops handling anything.
      await new Promise((done) => setTimeout(done, 200));
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, BLOCK_MS);
      return 'unblocked';
    }
  }
  ctx.post({ waiting: ctx.rank });
  await ctx.comm.recv((ctx.rank + 1) % ctx.size, 'never');
  return 'unreachable';
}
