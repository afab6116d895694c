// The conformance suite every local transport must pass (registered with node:test by each
// transport's test file): rank identities, point-to-point messages and collectives, a rank
// that throws, exits or is killed, abort, and close() leaving no ranks behind. One group is
// shared by the tests that leave it healthy (starting ranks costs time); the fault tests
// check that it is still usable afterwards.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import type { RankGroup } from '../group.js';
import type { LocalGroup } from '../local/local-group.js';
import { rejectsWith } from './assertions.js';
import { PROGRAMS, type Fault } from './programs.js';

/** A new group (the suite closes it). */
export type GroupFactory = (options: { ranks: number; threadsPerRank?: number; devices?: (number | undefined)[] }) => LocalGroup;

/**
 * Groups shared by the suites of one test file, one per rank count, with one decoder thread per
 * rank (starting ranks costs time); suites must leave them usable, the file closes them.
 */
export function sharedGroups<G extends RankGroup>(
  make: (ranks: number) => G,
): { get: (ranks: number) => G; closeAll: () => Promise<void> } {
  const groups = new Map<number, G>();
  return {
    get: (ranks) => {
      let g = groups.get(ranks);
      if (!g) groups.set(ranks, (g = make(ranks)));
      return g;
    },
    closeAll: async () => {
      await Promise.all([...groups.values()].map((g) => g.close()));
    },
  };
}

/** Child processes of this process, from the process table. */
export function childPids(): number[] {
  const out = execFileSync('ps', ['-o', 'pid=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((p) => Number.isInteger(p) && p > 0);
}

/** OS threads of this process (a worker thread adds its own). */
export function osThreads(): number {
  return readdirSync('/proc/self/task').length;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function groupConformance(
  name: string,
  isolation: 'thread' | 'process',
  shared: (ranks: number) => LocalGroup,
  makeGroup: GroupFactory,
): void {
  describe(`rank group conformance: ${name}`, () => {
    const group = shared(3);

    test('ranks know their identity, size and threads', async () => {
      const ids = await group.run<{
        rank: number;
        size: number;
        threads: number;
        deviceId: number | null;
        pid: number;
        threadId: number;
        input: unknown;
      }>(PROGRAMS.identity, ['a', 'b', 'c']);
      assert.deepEqual(
        ids.map((i) => [i.rank, i.size, i.threads, i.deviceId, i.input]),
        [
          [0, 3, 1, null, 'a'],
          [1, 3, 1, null, 'b'],
          [2, 3, 1, null, 'c'],
        ],
      );
      if (isolation === 'process') {
        assert.equal(new Set(ids.map((i) => i.pid)).size, 3, 'one process per rank');
        assert.ok(ids.every((i) => i.pid !== process.pid));
        assert.deepEqual(
          ids.map((i) => i.pid),
          group.pids(),
        );
      } else {
        assert.ok(ids.every((i) => i.pid === process.pid));
        assert.equal(new Set(ids.map((i) => i.threadId)).size, 3, 'one thread per rank');
        assert.ok(ids.every((i) => i.threadId !== 0));
      }
    });

    test('point-to-point messages carry typed arrays between ranks', async () => {
      const got = await group.run<{ isFloat32: boolean; values: number[] }>(PROGRAMS.ring, [null, null, null]);
      assert.deepEqual(got, [
        { isFloat32: true, values: [2, 2.5] },
        { isFloat32: true, values: [0, 0.5] },
        { isFloat32: true, values: [1, 1.5] },
      ]);
    });

    test('ranks and the coordinator exchange messages', async () => {
      const posted: unknown[] = [];
      const run = await group.launch(PROGRAMS.echo, {
        input: (rank) => `hello ${rank}`,
        onPost: (rank, data) => {
          posted.push(data);
          run.post(rank, { reply: rank * 10 });
        },
      });
      const outcomes = await run.settled;
      assert.deepEqual(
        outcomes.map((o) => (o.status === 'done' ? o.result : o.status)),
        [{ reply: 0 }, { reply: 10 }, { reply: 20 }],
      );
      assert.deepEqual(
        new Set(posted.map((p) => JSON.stringify(p))),
        new Set([0, 1, 2].map((r) => JSON.stringify({ rank: r, input: `hello ${r}` }))),
      );
    });

    test('collectives: all-reduce in rank order, all-gather, broadcast, neighbour exchange, barrier', async () => {
      // Values whose float64 sum depends on the order of addition: the reference adds in rank order.
      const values = [
        [1e16, 0.1, -3, 5],
        [1, 0.2, 7, -5],
        [-1e16, 0.3, 2, 0],
      ];
      const sum = values[0]!.map((_, i) => values[0]![i]! + values[1]![i]! + values[2]![i]!);
      const results = await group.run<{
        sum: number[];
        max: number[];
        min: number[];
        gathered: unknown[];
        broadcast: { from: number; data: Float32Array };
        neighbours: unknown;
        counters: Record<string, { calls: number; bytes: number }>;
      }>(PROGRAMS.collectives, () => ({ values }));
      for (const [rank, r] of results.entries()) {
        assert.deepEqual(r.sum, sum, `rank ${rank} sum`);
        assert.deepEqual(r.max, [1e16, 0.3, 7, 5]);
        assert.deepEqual(r.min, [-1e16, 0.1, -3, -5]);
        assert.deepEqual(
          r.gathered,
          [0, 1, 2].map((k) => ({ rank: k, square: k * k })),
        );
        assert.deepEqual(r.broadcast, { from: 1, data: new Float32Array([7, 8]) });
        assert.deepEqual(r.neighbours, {
          previous: rank > 0 ? `to ${rank} from ${rank - 1}` : null,
          next: rank < 2 ? `to ${rank} from ${rank + 1}` : null,
        });
        assert.deepEqual(r.counters['allReduce'], { calls: 3, bytes: 3 * 2 * 4 * 8 }, 'three all-reduces of 4 float64 to 2 peers');
        assert.deepEqual(r.counters['broadcast'], { calls: 1, bytes: rank === 1 ? 2 * 8 : 0 });
      }
    });

    test('a rank that throws fails the run with RANK_FAILED naming it; the group stays usable', async () => {
      const fault: Fault = { rank: 1, kind: 'throw' };
      await rejectsWith(
        group.run(PROGRAMS.fault, () => fault),
        'RANK_FAILED',
        /rank 1 failed: RUNTIME_FAILED: rank 1 was told to throw/,
      );
      const ids = await group.run<{ rank: number }>(PROGRAMS.identity, [0, 1, 2]);
      assert.deepEqual(
        ids.map((i) => i.rank),
        [0, 1, 2],
      );
    });

    test('a rank that exits is reported lost and started again by the next run', async () => {
      const before = isolation === 'process' ? group.pids() : [];
      const fault: Fault = { rank: 2, kind: 'exit' };
      await rejectsWith(
        group.run(PROGRAMS.fault, () => fault),
        'RANK_FAILED',
        /rank 2 was lost \((thread|process) exited with code 3\)/,
      );
      const ids = await group.run<{ rank: number; pid: number }>(PROGRAMS.identity, [0, 1, 2]);
      assert.deepEqual(
        ids.map((i) => i.rank),
        [0, 1, 2],
      );
      if (isolation === 'process') {
        assert.equal(ids[0]!.pid, before[0]);
        assert.notEqual(ids[2]!.pid, before[2], 'rank 2 runs in a new process');
        assert.ok(!isAlive(before[2]!));
      }
    });

    if (isolation === 'process') {
      test('a rank killed with SIGKILL mid-run is reported lost; the group stays usable', async () => {
        const pid = group.pids()[1]!;
        const run = group.run(PROGRAMS.fault, () => ({ rank: 1, kind: 'hang' }) satisfies Fault, {
          onPost: (rank) => {
            if (rank === 1) process.kill(pid, 'SIGKILL');
          },
        });
        await rejectsWith(run, 'RANK_FAILED', /rank 1 was lost \(process killed by SIGKILL\)/);
        assert.ok(!isAlive(pid));
        const ids = await group.run<{ rank: number }>(PROGRAMS.identity, [0, 1, 2]);
        assert.deepEqual(
          ids.map((i) => i.rank),
          [0, 1, 2],
        );
      });
    }

    if (isolation === 'process') {
      // 'block': rank 0 holds its thread as a decoder call does, so it never sees the channel
      // close; its parent watcher must end it (well before the block's own end).
      for (const kind of ['hang', 'block'] as const) {
        test(`a coordinator killed with SIGKILL leaves no rank processes behind (rank 0 ${kind === 'hang' ? 'waiting on a message' : 'holding its thread'})`, async () => {
          const script = fileURLToPath(new URL('./orphan-coordinator.ts', import.meta.url));
          const coordinator = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), script, kind], {
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          const [line] = (await once(createInterface({ input: coordinator.stdout! }), 'line')) as [string];
          const pids = JSON.parse(line) as number[];
          assert.ok(pids.length === 2 && pids.every(isAlive));
          coordinator.kill('SIGKILL');
          await once(coordinator, 'exit');
          const killedAt = Date.now();
          for (let i = 0; i < 100 && pids.some(isAlive); i++) await new Promise((r) => setTimeout(r, 100));
          assert.deepEqual(pids.filter(isAlive), [], 'the ranks exit when their coordinator is gone');
          assert.ok(Date.now() - killedAt < 5000, `the ranks took ${Date.now() - killedAt} ms to exit`);
        });
      }
    }

    test('abort cancels a run with ABORTED; the group stays usable', async () => {
      const controller = new AbortController();
      const run = group.run(PROGRAMS.fault, () => ({ rank: 0, kind: 'hang' }) satisfies Fault, {
        signal: controller.signal,
        onPost: () => controller.abort(new Error('user pressed stop')),
      });
      await rejectsWith(run, 'ABORTED', /user pressed stop/);
      const ids = await group.run<{ rank: number }>(PROGRAMS.identity, [0, 1, 2]);
      assert.deepEqual(
        ids.map((i) => i.rank),
        [0, 1, 2],
      );
      await rejectsWith(group.run(PROGRAMS.identity, [0, 1, 2], { signal: controller.signal }), 'ABORTED', /user pressed stop/);
    });

    test('devices map to ranks; close() ends every rank: no child processes, no worker threads', async () => {
      const threadsBefore = osThreads();
      const own = makeGroup({ ranks: 2, threadsPerRank: 2, devices: [undefined, 4] });
      const ids = await own.run<{ threads: number; deviceId: number | null }>(PROGRAMS.identity, [0, 1]);
      assert.deepEqual(
        ids.map((i) => [i.threads, i.deviceId]),
        [
          [2, null],
          [2, 4],
        ],
        'threads per rank and the device map reach the ranks',
      );
      const pids = own.pids();
      if (isolation === 'process')
        assert.ok(
          pids.every((p) => p !== undefined && childPids().includes(p)),
          'ranks run as child processes',
        );
      else assert.ok(osThreads() >= threadsBefore + 2, 'ranks run as threads of this process');
      await own.close();
      if (isolation === 'process') {
        for (const pid of pids) assert.ok(!isAlive(pid!), `rank process ${pid} is gone`);
        assert.deepEqual(
          childPids().filter((p) => pids.includes(p)),
          [],
        );
      } else {
        assert.equal(osThreads(), threadsBefore, 'the rank threads ended');
      }
      await rejectsWith(own.run(PROGRAMS.identity, [0, 1]), 'TRANSPORT_FAILED', /closed/);
    });

    test('close() while the ranks still start ends them instead of waiting for them (an interrupted coordinator)', async () => {
      const threadsBefore = osThreads();
      const childrenBefore = childPids();
      const own = makeGroup({ ranks: 2, threadsPerRank: 1 });
      const starting = own.start();
      starting.catch(() => undefined);
      await own.close();
      await rejectsWith(starting, 'TRANSPORT_FAILED', /failed to start/);
      if (isolation === 'process')
        assert.deepEqual(
          childPids().filter((p) => !childrenBefore.includes(p) && isAlive(p)),
          [],
          'no rank process left',
        );
      else assert.equal(osThreads(), threadsBefore, 'no rank thread left');
    });
  });
}
