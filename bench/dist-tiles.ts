// Whole-tile distribution benchmark: the same plan decoded by a local group of R ranks × 1
// thread, warm (each rank has loaded the VAE in a warm-up decode), and by one rank with one
// decoder thread (localTiledDecode in this process). Reports the speedup, and the share of the
// distributed wall time spent outside decoder calls on the critical path — dispatch, edge
// exchange, blending and cropping on the ranks, gathering on the coordinator — as
// 1 − max over ranks of (seconds in decoder calls) / wall. Also checks that both outputs are
// bitwise identical. CPU utilisation (process CPU time / wall / cores used) shows how much
// other jobs on the machine took, and the CPU-normalised speedup corrects for it. Not a test:
// it measures, it does not assert.
//
//   npx tsx bench/dist-tiles.ts [--config sd|demo] [--size 2048] [--window 512] [--overlap 128]
//                               [--ranks 2] [--isolation thread|process] [--skip-local]

import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { localTiledDecode } from '../src/decode/engine.js';
import type { TileRunner } from '../src/families/runtime-types.js';
import { loadVae } from '../src/decode/vae.js';
import type { ProgramGroup } from '../src/ranks/group.js';
import { localGroup } from '../src/ranks/local/index.js';
import { tiledDecodeFor } from '../src/strategies/tile/tiled-decode.js';
import { DEMO_CONFIG, demoLatent } from '../src/cli/commands/demo.js';
import { setTiling } from '../src/plan/planner.js';
import { tileGrid } from '../src/plan/grid.js';
import { gridMetrics, scheduleGrid } from '../src/plan/metrics.js';

const { values: args } = parseArgs({
  options: {
    config: { type: 'string', default: 'sd' },
    size: { type: 'string', default: '2048' },
    window: { type: 'string', default: '512' },
    overlap: { type: 'string', default: '128' },
    ranks: { type: 'string', default: '2' },
    isolation: { type: 'string', default: 'thread' },
    'skip-local': { type: 'boolean', default: false },
  },
});
const size = Number(args.size);
const window = Number(args.window);
const overlap = Number(args.overlap);
const ranks = Number(args.ranks);
const isolation = args.isolation as 'thread' | 'process';
const config = args.config === 'demo' ? DEMO_CONFIG : undefined; // undefined: the published SD 1.x decoder

const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1e6;
};

log(
  `loading ${args.config} decoder (synthetic weights), load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
const vae = await loadVae({ family: 'autoencoder-kl', ...(config ? { config } : {}), weights: 'synthetic', seed: 0 }, { threads: 1 });
setTiling(vae, { window: { height: window, width: window }, overlap: { height: overlap, width: overlap } });
const r = vae.geometry.spatialRatio;
const latents = demoLatent(size / r, size / r, vae.geometry.latentChannels);
const grid = tileGrid(vae, { height: size / r, width: size / r, frames: 1 });
const schedule = scheduleGrid(grid, ranks);
const metrics = gridMetrics(grid);
log(
  `plan: ${size}x${size}, window ${window}, overlap ${overlap}: ${metrics.tiles} tiles (${metrics.rows}x${metrics.columns}), decoded area ${metrics.decodedAreaRatio.toFixed(3)}x, imbalance over ${ranks} ranks ${(schedule.imbalance * 100).toFixed(2)} %`,
);

const result: Record<string, unknown> = {
  config: args.config,
  size,
  window,
  overlap,
  tiles: metrics.tiles,
  decodedAreaRatio: metrics.decodedAreaRatio,
  imbalance: schedule.imbalance,
};

const group = localGroup({ ranks, isolation, threadsPerRank: 1 });
let gatherSeconds = 0;
// Times what the coordinator does with each tile a rank posts (checking, blending, writing).
const timedGroup: ProgramGroup = {
  kind: group.kind,
  size: group.size,
  transport: group.transport,
  launch: (program, options) =>
    group.launch(program, {
      ...options,
      onPost: (rank, data) => {
        const t = performance.now();
        options.onPost?.(rank, data);
        gatherSeconds += (performance.now() - t) / 1000;
      },
    }),
  run: group.run.bind(group),
  close: () => group.close(),
};
const distributed = tiledDecodeFor(vae, timedGroup)!;
log(`${ranks} ranks x 1 thread (${isolation}): warm-up (start ranks, load the VAE on each) ...`);
await distributed(demoLatent(window / r + 8, window / r + 8, vae.geometry.latentChannels));
log(
  `  warm-up done: ${JSON.stringify(distributed.lastStats!.ranks.map((s) => ({ rank: s.rank, loadSeconds: +s.loadSeconds.toFixed(1) })))}`,
);
gatherSeconds = 0;
const cpu = process.cpuUsage();
const t = performance.now();
const out = await distributed(latents);
const wall = (performance.now() - t) / 1000;
const stats = distributed.lastStats!;
const critical = Math.max(...stats.ranks.map((s) => s.decoderSeconds));
result['distributed'] = {
  ranks,
  isolation,
  wall,
  operationSeconds: stats.seconds,
  criticalDecoderSeconds: critical,
  outsideShare: 1 - critical / wall,
  gatherSeconds,
  perRank: stats.ranks.map((s) => ({
    rank: s.rank,
    tiles: s.tiles.length,
    load: s.load,
    seconds: s.seconds,
    decoderSeconds: s.decoderSeconds,
    outsideDecoderSeconds: s.seconds - s.decoderSeconds,
    peakRssBytes: s.peakRssBytes,
  })),
  cpuUtilisation: isolation === 'thread' ? cpuSeconds(cpu) / wall / ranks : null,
  loadAverage: loadavg()[0],
};
log(
  `  wall ${wall.toFixed(1)} s, critical-path decoder ${critical.toFixed(1)} s, outside decoder calls ${((1 - critical / wall) * 100).toFixed(2)} %, gather ${gatherSeconds.toFixed(2)} s`,
);
// The single-rank decode runs after the group is closed: three decoder sessions at once (this
// process and two ranks) need more memory than a shared 24 GiB machine may have to spare.
await group.close();
let localOutput: Float32Array | null = null;
if (!args['skip-local']) {
  let decoderSeconds = 0;
  const timed: TileRunner = {
    decode: async (tile, signal) => {
      const t = performance.now();
      const out = await vae.runner.decode(tile, signal);
      decoderSeconds += (performance.now() - t) / 1000;
      return out;
    },
    dispose: () => vae.runner.dispose(),
  };
  log('1 rank x 1 thread (localTiledDecode) ...');
  const cpu = process.cpuUsage();
  const t = performance.now();
  const out = await localTiledDecode(vae, timed)(latents);
  const wall = (performance.now() - t) / 1000;
  localOutput = out.data;
  result['local'] = {
    wall,
    decoderSeconds,
    outsideShare: 1 - decoderSeconds / wall,
    cpuUtilisation: cpuSeconds(cpu) / wall,
    loadAverage: loadavg()[0],
  };
  log(
    `  wall ${wall.toFixed(1)} s, decoder ${decoderSeconds.toFixed(1)} s, CPU utilisation ${((cpuSeconds(cpu) / wall) * 100).toFixed(0)} % of 1 core`,
  );
}

if (localOutput) {
  const local = result['local'] as { wall: number; cpuUtilisation: number };
  result['speedup'] = local.wall / wall;
  // What each decode would have taken with its cores to itself (wall × share of its cores it
  // got), when other jobs share the machine; thread isolation only (one process to measure).
  if (isolation === 'thread')
    result['cpuNormalisedSpeedup'] =
      (local.wall * local.cpuUtilisation) / (wall * (result['distributed'] as { cpuUtilisation: number }).cpuUtilisation);
  const a = new Uint32Array(localOutput.buffer);
  const b = new Uint32Array(out.data.buffer);
  result['bitwiseIdentical'] = a.length === b.length && a.every((v, i) => v === b[i]);
  log(
    `  speedup ${(local.wall / wall).toFixed(2)}x (CPU-normalised ${Number(result['cpuNormalisedSpeedup'] ?? NaN).toFixed(2)}x), bitwise identical: ${result['bitwiseIdentical']}`,
  );
}
await vae.dispose();
process.stdout.write(JSON.stringify(result, null, 2) + '\n');
