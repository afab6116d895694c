// Row sharding against whole-tile distribution on one image (default 2048 × 2048) with the SD 1.x
// decoder architecture (autoencoder-kl defaults, seeded synthetic weights): per-rank peak RSS
// (ranks as child processes: each one's VmHWM), latency, and the collectives every rank sent next
// to what the locality analysis predicts. Each case runs in a fresh child process of this script
// so no case inherits another's memory; its own peak (the coordinator's) is reported too. For
// whole tiles on one rank the decode runs in that process, so its peak is the rank's.
//
// Outputs of the sharded cases are compared with each other (they must agree within float32
// tolerance whatever the rank count) and with the tiled decode (which blends seams, so differs).
//
// Memory on a VM: first touch of fresh pages can cost tens of µs per 4 KiB page (measured ~35 µs
// here, ~100 MB/s), and glibc returns big freed blocks to the OS, so every new buffer pays it
// again. Unless --no-heap-tuning, cases run with MALLOC_MMAP_MAX_=0 and a huge
// MALLOC_TRIM_THRESHOLD_ (inherited by the ranks), so freed memory is reused from the heap; peak
// RSS is then the heap's high-water mark. Both strategies run under the same setting.
//
//   npx tsx bench/shard-memory.ts [--size 2048] [--cases shard:4,shard:2,shard:1,tile:1,tile:2,tile:4]
//                                 [--out bench/results/shard-memory.json] [--no-heap-tuning]

import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadVae } from '../src/decode/vae.js';
import { localGroup } from '../src/ranks/local/index.js';
import { tiledDecodeFor } from '../src/strategies/tile/tiled-decode.js';
import { setTiling } from '../src/plan/planner.js';
import { tileGrid } from '../src/plan/grid.js';
import { seededTensor } from '../src/tensor.js';
import { shardedDecodeFor, type ShardStats } from '../src/strategies/shard/sharded-decode.js';

const here = fileURLToPath(import.meta.url);
const { values: args } = parseArgs({
  options: {
    size: { type: 'string', default: '2048' },
    cases: { type: 'string', default: 'shard:4,shard:2,shard:1,tile:1,tile:2,tile:4' },
    out: { type: 'string', default: join(dirname(here), 'results', 'shard-memory.json') },
    'no-heap-tuning': { type: 'boolean', default: false },
    case: { type: 'string' },
    sample: { type: 'string' },
  },
});
const size = Number(args.size);
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

function peakRssBytes(): number {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : process.resourceUsage().maxRSS * 1024;
}

interface CaseResult {
  strategy: 'shard' | 'tile';
  ranks: number;
  threadsPerRank: number;
  /** Wall time of vae.decode on the coordinator (ranks' VAE loading included, group start excluded). */
  seconds: number;
  /** The longest rank's seconds minus its VAE load: the decode's critical path. */
  decodeSeconds: number;
  tiles: number;
  coordinatorPeakRssBytes: number;
  perRank: { rank: number; seconds: number; loadSeconds: number; peakRssBytes: number | null; band?: { start: number; end: number } }[];
  collectives?: ShardStats['collectives'];
  perRankCollectives?: ShardStats['ranks'][number]['counters'][];
  predicted?: ShardStats['predicted'];
}

interface FailedCase {
  strategy: CaseResult['strategy'];
  ranks: number;
  failed: string;
}

/** One case, in this (child) process; writes the raw output to `sample`. */
async function runCase(spec: string, sample: string): Promise<CaseResult> {
  const [strategy, r] = spec.split(':') as ['shard' | 'tile', string];
  const ranks = Number(r);
  const threadsPerRank = Math.max(1, Math.floor(availableParallelism() / ranks));
  const vae = await loadVae({ family: 'autoencoder-kl', weights: 'synthetic', seed: 0 }, { threads: threadsPerRank });
  setTiling(vae);
  const latentSize = size / vae.geometry.spatialRatio;
  const latents = seededTensor([1, vae.geometry.latentChannels, latentSize, latentSize], 11, 1.5);
  const grid = tileGrid(vae, { height: latentSize, width: latentSize, frames: 1 });
  const group = strategy === 'shard' || ranks > 1 ? localGroup({ ranks, isolation: 'process', threadsPerRank }) : null;
  try {
    await group?.start();
    let shardStats: ShardStats | null = null;
    let tileStats: { ranks: { rank: number; seconds: number; loadSeconds: number; peakRssBytes?: number }[] } | null = null;
    if (strategy === 'shard') vae.tiledDecode = shardedDecodeFor(vae, group!, { onStats: (s) => (shardStats = s) });
    else if (group) vae.tiledDecode = tiledDecodeFor(vae, group, { onStats: (s) => (tileStats = s) })!;
    log(`${spec}: decoding ${size}x${size} (${grid.tiles.length} tiles in the plan), ${threadsPerRank} thread(s) per rank`);
    const started = performance.now();
    const out = await vae.decode(latents);
    const seconds = (performance.now() - started) / 1000;
    writeFileSync(sample, new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.byteLength));
    const stats = (shardStats as ShardStats | null) ?? tileStats;
    const perRank = stats
      ? stats.ranks.map((s) => ({
          rank: s.rank,
          seconds: s.seconds,
          loadSeconds: s.loadSeconds,
          peakRssBytes: s.peakRssBytes ?? null,
          ...('band' in s ? { band: (s as ShardStats['ranks'][number]).band } : {}),
        }))
      : [{ rank: 0, seconds, loadSeconds: 0, peakRssBytes: peakRssBytes() }];
    const s = shardStats as ShardStats | null;
    return {
      strategy,
      ranks,
      threadsPerRank,
      seconds,
      decodeSeconds: Math.max(...perRank.map((p) => p.seconds - p.loadSeconds)),
      tiles: grid.tiles.length,
      coordinatorPeakRssBytes: peakRssBytes(),
      perRank,
      ...(s ? { collectives: s.collectives, perRankCollectives: s.ranks.map((x) => x.counters), predicted: s.predicted } : {}),
    };
  } finally {
    await group?.close();
    await vae.dispose();
  }
}

function maxAbs(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const readSample = (path: string) => {
  const bytes = readFileSync(path);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
};

if (args.case) {
  const result = await runCase(args.case, args.sample!);
  process.stdout.write(JSON.stringify(result) + '\n');
} else {
  const env = { ...process.env, ...(args['no-heap-tuning'] ? {} : { MALLOC_MMAP_MAX_: '0', MALLOC_TRIM_THRESHOLD_: String(2 ** 40) }) };
  const results: ((CaseResult & { maxAbsVsFirstShard?: number; maxAbsVsShard?: number }) | FailedCase)[] = [];
  const samples = new Map<string, string>();
  for (const spec of args.cases.split(',')) {
    const sample = join(tmpdir(), `shard-memory-${spec.replace(':', '-')}.f32`);
    log(
      `case ${spec} (load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})`,
    );
    try {
      const stdout = execFileSync(process.execPath, ['--import', 'tsx', here, '--size', String(size), '--case', spec, '--sample', sample], {
        env,
        stdio: ['ignore', 'pipe', 'inherit'],
        maxBuffer: 1 << 26,
      });
      results.push(JSON.parse(stdout.toString().trim().split('\n').pop()!));
      samples.set(spec, sample);
    } catch (e) {
      log(`case ${spec} failed: ${(e as Error).message.split('\n')[0]}`);
      results.push({
        strategy: spec.split(':')[0] as CaseResult['strategy'],
        ranks: Number(spec.split(':')[1]),
        failed: (e as Error).message.split('\n')[0]!,
      });
    }
  }
  const firstShard = [...samples.keys()].find((s) => s.startsWith('shard'));
  for (const r of results) {
    if ('failed' in r) continue;
    const sample = samples.get(`${r.strategy}:${r.ranks}`);
    if (!sample || !firstShard) continue;
    const diff = maxAbs(readSample(sample), readSample(samples.get(firstShard)!));
    if (r.strategy === 'shard') r.maxAbsVsFirstShard = diff;
    else r.maxAbsVsShard = diff;
  }
  mkdirSync(dirname(args.out), { recursive: true });
  // Schema 1 of bench/results (the docs site renders it): run conditions in `ran`, one cell per case.
  const ran = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    loadAverage: loadavg(),
    size,
    heapTuning: !args['no-heap-tuning'],
    firstShard: firstShard ?? null,
  };
  writeFileSync(args.out, JSON.stringify({ schema: 1, benchmark: 'shard-memory', ran, cells: results }, null, 2) + '\n');
  const gib = (b: number | null | undefined) => (b == null ? '-' : (b / 2 ** 30).toFixed(2));
  console.log(`\n${size}x${size}, SD 1.x decoder, ${availableParallelism()} cores${args['no-heap-tuning'] ? '' : ', heap tuning on'}`);
  console.log(
    'strategy ranks  wall s  decode s  peak RSS per rank (GiB)        coordinator GiB  sends (calls/MiB)  allReduce  allGather (calls/MiB)  vs first shard',
  );
  for (const r of results) {
    if ('failed' in r) {
      console.log(`${r.strategy.padEnd(9)}${String(r.ranks).padEnd(7)}failed`);
      continue;
    }
    const c = r.collectives;
    const mib = (b: number) => (b / 2 ** 20).toFixed(1);
    console.log(
      `${r.strategy.padEnd(9)}${String(r.ranks).padEnd(7)}${r.seconds.toFixed(0).padEnd(8)}${r.decodeSeconds.toFixed(0).padEnd(10)}${r.perRank
        .map((p) => gib(p.peakRssBytes))
        .join(' ')
        .padEnd(31)}${gib(r.coordinatorPeakRssBytes).padEnd(17)}` +
        (c
          ? `${c.send.calls}/${mib(c.send.bytes)}`.padEnd(19) +
            `${c.allReduce.calls}`.padEnd(11) +
            `${c.allGather.calls}/${mib(c.allGather.bytes)}`.padEnd(23)
          : ''.padEnd(53)) +
        `${(r.maxAbsVsFirstShard ?? r.maxAbsVsShard)?.toExponential(2) ?? '-'}`,
    );
  }
  execFileSync('rm', ['-f', ...samples.values()]);
}
