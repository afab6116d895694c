// The tile-decode conformance suite (registered with node:test by each transport's test file).
// `tileConformance` holds what every RankGroup must do (local or queue): `tiledDecodeFor` output bitwise equal
// to the single-rank `localTiledDecode` of the same plan for 2–4 ranks on every plan shape,
// idle ranks with fewer tiles than ranks, the raster fallback, progress, abort. The
// local-group part adds faults: a rank that throws, returns a misshapen crop, exits, or is
// killed with SIGKILL mid-decode (process isolation).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { localTiledDecode } from '../../../decode/engine.js';
import { setTiling } from '../../../plan/planner.js';
import { ProgressCounter, type DecodeProgress } from '../../../decode/types.js';
import type { Vae } from '../../../decode/vae.js';
import type { Tensor } from '../../../tensor.js';
import type { ProgramGroup, RankGroup } from '../../../ranks/group.js';
import type { LocalGroup } from '../../../ranks/local/local-group.js';
import type { ProgramRef } from '../../../ranks/program.js';
import { assertSameBits, rejectsWith } from '../../../ranks/testing/assertions.js';
import { TILE_CASES, installPlan, loadTinyVae, seededLatent } from '../../../ranks/testing/tiny-vae.js';
import { tiledDecodeFor } from '../tiled-decode.js';
import { FAULTY_TILE_PROGRAMS } from './faulty-tile-programs.js';

/** `group` with its ranks running `program` in place of the tile program (the faulty ones). */
function withProgram(group: LocalGroup, program: ProgramRef): ProgramGroup {
  return {
    kind: group.kind,
    size: group.size,
    transport: group.transport,
    launch: (_tileProgram, options) => group.launch(program, options),
    run: group.run.bind(group),
    close: () => group.close(),
  };
}

/** `shared(ranks)` gives a group of that many ranks with one decoder thread each, which the suite leaves open. */
export function tileConformance(name: string, shared: (ranks: number) => RankGroup): void {
  describe(`tile decode conformance: ${name}`, () => {
    let vae: Vae;
    const groups = new Map([2, 3, 4].map((ranks) => [ranks, shared(ranks)]));
    before(async () => {
      vae = await loadTinyVae();
    });
    after(() => vae.dispose());

    test('nothing to distribute: one rank, or tiling off; the family default tiling distributes', async () => {
      assert.equal(vae.tiling.enabled, false);
      assert.equal(tiledDecodeFor(vae, groups.get(2)!), null);
      setTiling(vae);
      assert.equal(tiledDecodeFor(vae, shared(1)), null);
      const decode = tiledDecodeFor(vae, groups.get(2)!);
      assert.ok(decode, 'tiling on with the default window distributes on 2 ranks');
      const latents = seededLatent(24, 40);
      assertSameBits(await decode(latents), await localTiledDecode(vae, vae.runner)(latents), 'default tiling on 2 ranks');
      setTiling(vae, 'off');
    });

    for (const c of TILE_CASES) {
      test(`bitwise equal to localTiledDecode for 2, 3 and 4 ranks: ${c.name}`, async () => {
        installPlan(vae, c.window, c.overlap);
        const latents = seededLatent(c.latent[0], c.latent[1]);
        const expected = await localTiledDecode(vae, vae.runner)(latents);
        for (const [ranks, group] of groups) {
          const decode = tiledDecodeFor(vae, group)!;
          const actual = await decode(latents);
          assertSameBits(actual, expected, `${ranks} ranks`);
          const stats = decode.lastStats!;
          const edgesSuffice = c.overlap[0] * 2 <= c.window[0] && c.overlap[1] * 2 <= c.window[1];
          assert.equal(
            stats.assembly,
            edgesSuffice && group.kind === 'programs' ? 'edges' : 'raster',
            'raw edges between ranks when they suffice and ranks can message each other',
          );
          const dealt = stats.ranks.flatMap((r) => r.tiles).sort((a, b) => a - b);
          assert.deepEqual(
            dealt,
            Array.from({ length: stats.tiles }, (_, i) => i),
            'every tile decoded exactly once',
          );
          assert.deepEqual(
            stats.ranks.map((r) => r.rank),
            Array.from({ length: ranks }, (_, i) => i),
          );
          assert.deepEqual(
            stats.idleRanks,
            stats.ranks.filter((r) => r.tiles.length === 0).map((r) => r.rank),
          );
          assert.equal(stats.idleRanks.length, Math.max(0, ranks - stats.tiles), 'fewer tiles than ranks leaves the rest idle');
          assert.deepEqual(stats.failures, []);
        }
      });
    }

    test('as vae.tiledDecode: vae.decode is unchanged, progress reports every tile with its rank', async () => {
      installPlan(vae, [32, 32], [8, 8]);
      const latents = seededLatent(40, 56, 5);
      const expected = await vae.decode(latents);
      const local = vae.tiledDecode;
      const decode = tiledDecodeFor(vae, groups.get(3)!)!;
      vae.tiledDecode = decode;
      try {
        const events: DecodeProgress[] = [];
        assertSameBits(await vae.decode(latents, { onProgress: (e) => events.push(e) }), expected, 'vae.decode');
        const total = decode.lastStats!.tiles;
        assert.deepEqual(
          events.map((e) => [e.tilesDone, e.tilesTotal]),
          Array.from({ length: total }, (_, i) => [i + 1, total]),
        );
        for (const r of decode.lastStats!.ranks) assert.equal(events.filter((e) => e.rank === r.rank).length, r.tiles.length);
        // A latent that fits one window is decoded whole on one rank.
        const small = seededLatent(9, 7, 6);
        vae.tiledDecode = local;
        const whole = await vae.decode(small);
        vae.tiledDecode = decode;
        assertSameBits(await vae.decode(small), whole, 'untiled latent');
        assert.equal(decode.lastStats!.tiles, 1);
        assert.equal(decode.lastStats!.idleRanks.length, 2);
      } finally {
        vae.tiledDecode = local;
      }
    });

    test('abort: ABORTED mid-decode, and the next decode is still identical', async () => {
      installPlan(vae, [32, 32], [8, 8]);
      const latents = seededLatent(40, 56, 7);
      const expected = await localTiledDecode(vae, vae.runner)(latents);
      const decode = tiledDecodeFor(vae, groups.get(2)!)!;
      const controller = new AbortController();
      const progress = new ProgressCounter(Infinity, () => controller.abort(new Error('stop requested')));
      await rejectsWith(decode(latents, { signal: controller.signal, progress }), 'ABORTED', /stop requested/);
      await rejectsWith(decode(latents, { signal: controller.signal }), 'ABORTED', /stop requested/);
      assertSameBits(await decode(latents), expected, 'after abort');
    });
  });
}

export function localTileFaults(name: string, isolation: 'thread' | 'process', shared: (ranks: number) => LocalGroup): void {
  describe(`tile decode faults: ${name}`, () => {
    let vae: Vae;
    const group = shared(3);
    let latents: Tensor;
    let expected: Tensor;
    before(async () => {
      vae = await loadTinyVae();
      installPlan(vae, [32, 32], [8, 8]);
      latents = seededLatent(40, 56, 3);
      expected = await localTiledDecode(vae, vae.runner)(latents);
    });
    after(() => vae.dispose());
    const decodeWith = (program: ProgramRef) => tiledDecodeFor(vae, withProgram(group, program))!;

    test('a rank that throws fails the decode with RANK_FAILED naming it and the cause; the group stays usable', async () => {
      await rejectsWith(
        decodeWith(FAULTY_TILE_PROGRAMS.throwsAfterFirstTile)(latents),
        'RANK_FAILED',
        /rank 1 failed: out of device memory \(simulated\)/,
      );
      assertSameBits(await tiledDecodeFor(vae, group)!(latents), expected, 'next decode');
    });

    test('a rank that returns a misshapen crop is rejected, never blended', async () => {
      await rejectsWith(
        decodeWith(FAULTY_TILE_PROGRAMS.wrongShape)(latents),
        'RANK_FAILED',
        /rank 1 returned a wrong result for tile \d+, rejected: crop of tile \d+ is 3x\d+x\d+, expected/,
      );
      assertSameBits(await tiledDecodeFor(vae, group)!(latents), expected, 'next decode');
    });

    test('a rank that exits mid-decode: its tiles are dealt again and the image is identical', async () => {
      const decode = decodeWith(FAULTY_TILE_PROGRAMS.exitsAfterFirstTile);
      assertSameBits(await decode(latents), expected, 'after losing rank 1');
      const stats = decode.lastStats!;
      assert.deepEqual(
        stats.failures.map((f) => f.rank),
        [1],
      );
      assert.match(stats.failures[0]!.cause, /exited with code 9/);
      assert.ok(stats.redealt.length > 0, 'rank 1 had unfinished tiles');
      assert.ok(stats.ranks[1]!.tiles.length <= 1);
      assert.deepEqual(
        stats.ranks.flatMap((r) => r.tiles).sort((a, b) => a - b),
        Array.from({ length: stats.tiles }, (_, i) => i),
      );
    });

    test('every rank lost: RANK_FAILED listing them, then the group starts new ranks', async () => {
      const pair = shared(2);
      const decode = tiledDecodeFor(vae, withProgram(pair, FAULTY_TILE_PROGRAMS.everyRankExits))!;
      await rejectsWith(
        decode(latents),
        'RANK_FAILED',
        /every rank was lost with \d+ tile\(s\) unfinished: rank \d \(.*exited with code 9\); rank \d \(.*exited with code 9\)/,
      );
      assertSameBits(await tiledDecodeFor(vae, pair)!(latents), expected, 'with new ranks');
    });

    if (isolation === 'process') {
      test('a rank process killed with SIGKILL mid-decode: re-dealt, identical, no orphan', async () => {
        const decode = tiledDecodeFor(vae, group)!;
        await decode(latents);
        const victim = group.pids()[1]!;
        // Frozen before the decode starts, so it holds all its tiles unfinished when it is killed.
        process.kill(victim, 'SIGSTOP');
        const progress = new ProgressCounter(Infinity, (e) => {
          if (e.tilesDone === 1) process.kill(victim, 'SIGKILL');
        });
        assertSameBits(await decode(latents, { progress }), expected, 'after SIGKILL');
        const stats = decode.lastStats!;
        assert.deepEqual(stats.failures, [{ rank: 1, cause: 'process killed by SIGKILL' }]);
        assert.deepEqual(stats.ranks[1]!.tiles, []);
        assert.ok(stats.redealt.length > 0);
        assert.throws(() => process.kill(victim, 0), /ESRCH/);
      });
    }
  });
}
