// Queue transport vs local process ranks: the same plan of the SD 1.x decoder (autoencoder-kl's
// published config, synthetic weights) decoded by 2 `distvae worker` processes over a BullMQ
// queue on a redis-server this script starts on loopback, and by a local group of 2 process
// ranks — 1 decoder thread each, both warm (the workers load their VAE when they start, the
// process ranks in a warm-up decode). Reports wall time, bytes through Redis (payloads, and the
// server's own network counters, which include BullMQ's bookkeeping), and the transport's share
// of the wall time: 1 − max over ranks of (seconds in decoder calls) / wall — slicing, moving
// latents and tiles, waiting for a worker, checking and blending. Checks that both outputs are
// bitwise identical. Writes bench/results/queue-vs-process.json. Not a test: it measures.
//
//   npx tsx bench/queue-vs-process.ts [--size 2048] [--window 512] [--overlap 128]

import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { demoLatent } from '../src/cli/commands/demo.js';
import { loadVae } from '../src/decode/vae.js';
import { localGroup } from '../src/ranks/local/index.js';
import { queueGroup } from '../src/ranks/queue/index.js';
import { startRedisServer } from '../src/ranks/testing/redis-server.js';
import { startWorkerProcess } from '../src/ranks/testing/queue-workers.js';
import { tiledDecodeFor, type DistributedDecodeStats } from '../src/strategies/tile/tiled-decode.js';
import type { RankGroup } from '../src/ranks/group.js';
import { tileGrid } from '../src/plan/grid.js';
import { gridMetrics } from '../src/plan/metrics.js';
import { setTiling } from '../src/plan/planner.js';

const { values: args } = parseArgs({
  options: {
    size: { type: 'string', default: '2048' },
    window: { type: 'string', default: '512' },
    overlap: { type: 'string', default: '128' },
  },
});
const size = Number(args.size);
const window = Number(args.window);
const overlap = Number(args.overlap);
const RANKS = 2;
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

log(
  `loading the SD 1.x decoder (synthetic weights), load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
const vae = await loadVae({ family: 'autoencoder-kl', weights: 'synthetic', seed: 0 }, { threads: 1 });
setTiling(vae, { window: { height: window, width: window }, overlap: { height: overlap, width: overlap } });
const r = vae.geometry.spatialRatio;
const latents = demoLatent(size / r, size / r, vae.geometry.latentChannels);
const warmUp = demoLatent(window / r + 8, window / r + 8, vae.geometry.latentChannels);
const metrics = gridMetrics(tileGrid(vae, { height: size / r, width: size / r, frames: 1 }));
log(`plan: ${size}x${size}, window ${window}, overlap ${overlap}: ${metrics.tiles} tiles`);

interface Measured {
  wall: number;
  criticalDecoderSeconds: number;
  transportShare: number;
  perRank: { rank: number; tiles: number; decoderSeconds: number; seconds: number }[];
}

async function measure(group: RankGroup): Promise<{ measured: Measured; output: Float32Array; stats: DistributedDecodeStats }> {
  const decode = tiledDecodeFor(vae, group)!;
  const t = performance.now();
  const out = await decode(latents);
  const wall = (performance.now() - t) / 1000;
  const stats = decode.lastStats!;
  const critical = Math.max(...stats.ranks.map((s) => s.decoderSeconds + s.loadSeconds));
  const measured = {
    wall,
    criticalDecoderSeconds: critical,
    transportShare: 1 - critical / wall,
    perRank: stats.ranks.map((s) => ({ rank: s.rank, tiles: s.tiles.length, decoderSeconds: s.decoderSeconds, seconds: s.seconds })),
  };
  log(
    `  wall ${wall.toFixed(1)} s, critical-path decoder ${critical.toFixed(1)} s, transport share ${(measured.transportShare * 100).toFixed(2)} %`,
  );
  return { measured, output: out.data, stats };
}

const result: Record<string, unknown> = { architecture: 'autoencoder-kl (SD 1.x), synthetic weights' };

// Queue: 2 worker processes on a loopback redis-server.
const server = await startRedisServer();
let queueOutput: Float32Array;
try {
  log('starting 2 queue workers (each loads the VAE) ...');
  const workerArgs = ['--synthetic', '--family', 'autoencoder-kl', '--threads', '1'];
  const workers = await Promise.all([0, 1].map(() => startWorkerProcess(server.url, 'bench', workerArgs)));
  const group = queueGroup({ connection: server.url, queue: 'bench', ranks: RANKS, timeoutMs: 600_000 });
  try {
    await tiledDecodeFor(vae, group)!(warmUp);
    const net = async () => {
      const info = await server.client.info('stats');
      const field = (name: string) => Number(new RegExp(`${name}:(\\d+)`).exec(info)![1]);
      return { in: field('total_net_input_bytes'), out: field('total_net_output_bytes') };
    };
    const before = await net();
    const traffic = { ...group.traffic };
    log(`${RANKS} queue workers x 1 thread ...`);
    const { measured, output } = await measure(group);
    const after = await net();
    queueOutput = output;
    result['queue'] = {
      ...measured,
      payloadBytes: { latents: group.traffic.latentBytes - traffic.latentBytes, tiles: group.traffic.tileBytes - traffic.tileBytes },
      redisNetworkBytes: { in: after.in - before.in, out: after.out - before.out },
      loadAverage: loadavg()[0],
    };
  } finally {
    await group.close();
    await Promise.all(workers.map((w) => w.stop()));
  }
} finally {
  await server.stop();
}

// Local process ranks (started after the workers are gone: the machine has 2 cores).
{
  const group = localGroup({ ranks: RANKS, isolation: 'process', threadsPerRank: 1 });
  try {
    log(`${RANKS} process ranks x 1 thread: warm-up (start ranks, load the VAE on each) ...`);
    await tiledDecodeFor(vae, group)!(warmUp);
    log(`${RANKS} process ranks x 1 thread ...`);
    const { measured, output } = await measure(group);
    result['process'] = { ...measured, loadAverage: loadavg()[0] };
    const a = new Uint32Array(queueOutput!.buffer, queueOutput!.byteOffset, queueOutput!.length);
    const b = new Uint32Array(output.buffer, output.byteOffset, output.length);
    result['bitwiseIdentical'] = a.length === b.length && a.every((v, i) => v === b[i]);
  } finally {
    await group.close();
  }
}
const q = result['queue'] as Measured;
const p = result['process'] as Measured;
log(
  `queue ${q.wall.toFixed(1)} s vs process ${p.wall.toFixed(1)} s (${(q.wall / p.wall).toFixed(3)}x), transport share ${(q.transportShare * 100).toFixed(2)} % vs ${(p.transportShare * 100).toFixed(2)} %, bitwise identical: ${result['bitwiseIdentical']}`,
);
await vae.dispose();
// Schema 1 of bench/results (rendered by the documentation site): one cell, one arm per transport.
const report = {
  schema: 1,
  benchmark: 'queue-vs-process',
  ran: {
    date: new Date().toISOString(),
    node: process.version,
    cores: availableParallelism(),
    loadAverage: loadavg(),
    architecture: result['architecture'],
    ranks: RANKS,
    threadsPerRank: 1,
  },
  headline: {
    case: `${size}x${size}, ${RANKS} queue workers vs ${RANKS} process ranks`,
    queueWall: q.wall,
    processWall: p.wall,
    queueTransportShare: q.transportShare,
    bitwiseIdentical: result['bitwiseIdentical'],
  },
  cells: [
    {
      size,
      window,
      overlap,
      tiles: metrics.tiles,
      bitwiseIdentical: result['bitwiseIdentical'],
      queueOverProcessWall: q.wall / p.wall,
      arms: [
        { arm: 'queue', ...(result['queue'] as object) },
        { arm: 'process', ...(result['process'] as object) },
      ],
    },
  ],
};
const path = new URL('./results/queue-vs-process.json', import.meta.url);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(path, JSON.stringify(report, null, 2) + '\n');
process.stdout.write(JSON.stringify(report, null, 2) + '\n');
