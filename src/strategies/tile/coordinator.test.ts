// What a streamed tile decode holds does not grow with the image (issue 30 item 8): the
// coordinator hands each rank at most AHEAD undelivered tiles, none more than ranks × AHEAD past
// the lowest undelivered (so neither side holds every tile's latent slice, nor a rank every raw
// tile waiting for edges, nor the coordinator rows below a late tile), and tells the ranks to drop
// a tile's raw edges once every tile that reads them is in. Checked on the messages between the
// coordinator and real thread ranks, on a tall image of many tiles, with the output still bitwise
// the single-rank decode's.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { decodeToBands } from '../../decode/engine.js';
import { checkLatents } from '../../decode/latents.js';
import { tileGrid } from '../../plan/grid.js';
import { tileLayout } from '../../tile/layout.js';
import { loadVae } from '../../decode/vae.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import type { LaunchOptions, ProgramGroup } from '../../ranks/group.js';
import { localGroup } from '../../ranks/local/index.js';
import type { ProgramRef } from '../../ranks/program.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { sharedGroups } from '../../ranks/testing/group-conformance.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { AHEAD } from './coordinator.js';
import { edgeReaders, type TileMessage, type TileRankInput, type ToTileRank } from './messages.js';
import { tiledDecodeFor } from './tiled-decode.js';

const groups = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => groups.closeAll());

const CONFIG = { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };

type Event =
  | { kind: 'hand'; rank: number; tiles: number[] }
  | { kind: 'deliver'; rank: number; tile: number }
  | { kind: 'release'; rank: number; tiles: number[] };

/** `group` with every message of its runs logged, in the order the coordinator sees them. */
function logged(group: ProgramGroup, log: Event[]): ProgramGroup {
  const wrapper = Object.create(group) as ProgramGroup;
  wrapper.launch = async (program: ProgramRef, options: LaunchOptions) => {
    const run = await group.launch(program, {
      ...options,
      input: (rank) => {
        const input = options.input(rank) as TileRankInput;
        log.push({ kind: 'hand', rank, tiles: input.work.map((w) => w.index) });
        return input;
      },
      onPost: (rank, data) => {
        log.push({ kind: 'deliver', rank, tile: (data as TileMessage).index });
        options.onPost?.(rank, data);
      },
    });
    return {
      ...run,
      settled: run.settled,
      running: (rank) => run.running(rank),
      cancel: (reason) => run.cancel(reason),
      post: (rank, data) => {
        const m = data as ToTileRank;
        if (m.kind === 'work') log.push({ kind: 'hand', rank, tiles: m.work.map((w) => w.index) });
        if (m.kind === 'release') log.push({ kind: 'release', rank, tiles: m.tiles });
        run.post(rank, data);
      },
    };
  };
  return wrapper;
}

// Windows of 16 output pixels (8 latent rows at ratio 2); an overlap of 4 pixels starts one every
// 6 latent rows (diffusers tiles from 0 in strides): 12 rows of tiles, ranks finalising crops.
// An overlap of 12 (over half the window) starts one every 2 rows, and the coordinator blends.
for (const [cols, overlap, height, width, assembly] of [
  [1, 4, 72, 6, 'edges'],
  [2, 4, 72, 12, 'edges'],
  [1, 12, 24, 2, 'raster'],
] as const) {
  test(`a streamed decode of ${cols} column(s) of tiles, ${assembly} assembly: ranks hold at most ${AHEAD} undelivered tiles, edges are dropped once read`, async () => {
    const vae = await loadVae({ config: CONFIG, weights: 'synthetic', seed: 6 }, { threads: 1 });
    try {
      setTiling(vae, tileShapePlan(vae, 16, 16)!);
      setTiling(vae, tileOverlapPlan(vae, overlap, overlap)!);
      const z = seededTensor([1, 4, height, width], 3);
      const single = vae.tiledDecode;
      const expected = await vae.decode(z);
      for (const ranks of [1, 2]) {
        const log: Event[] = [];
        const distributed = tiledDecodeFor(vae, logged(groups.get(ranks), log), { offThread: true })!;
        vae.tiledDecode = distributed;
        const bands: Tensor[] = [];
        await decodeToBands(vae, z, (_y0, band) => bands.push(band));
        vae.tiledDecode = single;
        const stats = distributed.lastStats!;
        assert.equal(stats.assembly, assembly);
        assert.ok(stats.tiles >= 12 * cols, `${stats.tiles} tiles`);
        const layout = tileLayout(tileGrid(vae, checkLatents(vae, z), { spatialOnly: true }));
        assert.equal(layout.cols, cols);
        const held = new Array<number>(ranks).fill(0);
        const delivered = new Set<number>();
        const released = new Map<number, number[]>();
        for (const e of log) {
          if (e.kind === 'hand') {
            held[e.rank]! += e.tiles.length;
            let lowest = 0;
            while (delivered.has(lowest)) lowest++;
            for (const t of e.tiles) assert.ok(t < lowest + ranks * AHEAD, `tile ${t} handed while tile ${lowest} is not in`);
          } else if (e.kind === 'deliver') {
            held[e.rank]!--;
            delivered.add(e.tile);
          } else
            for (const s of e.tiles) {
              const readers = edgeReaders(layout, s);
              assert.ok(
                readers.every((r) => delivered.has(r.tile)),
                `tile ${s}'s edges released to rank ${e.rank} before its readers were in`,
              );
              released.set(s, [...(released.get(s) ?? []), e.rank]);
            }
          assert.ok(held[e.rank]! <= AHEAD, `rank ${e.rank} held ${held[e.rank]} undelivered tiles (${ranks} rank(s))`);
        }
        assert.equal(delivered.size, stats.tiles);
        // Every tile whose edges are read is released, except ones read by the last tile delivered
        // (the ranks end then anyway; ranks deliver out of raster order).
        const last = log.findLast((e) => e.kind === 'deliver')!;
        for (let s = 0; s < stats.tiles && assembly === 'edges'; s++) {
          const readers = edgeReaders(layout, s);
          if (readers.length > 0 && !readers.some((r) => last.kind === 'deliver' && r.tile === last.tile))
            assert.ok(released.has(s), `tile ${s} never released`);
        }
        const got = { dims: expected.dims, data: joinBands(bands, expected.dims) };
        assertSameBits(got, expected, `${ranks} rank(s)`);
      }
    } finally {
      await vae.dispose();
    }
  });
}

/** The (1, C, H, W) sample the bands are rows of. */
function joinBands(bands: Tensor[], dims: readonly number[]): Float32Array {
  const [, c, h, w] = dims as number[];
  const out = new Float32Array(c! * h! * w!);
  let at = 0;
  for (const band of bands) {
    const bh = band.dims[2]!;
    for (let p = 0; p < c!; p++) out.set(band.data.subarray(p * bh * w!, (p + 1) * bh * w!), (p * h! + at) * w!);
    at += bh;
  }
  return out;
}
