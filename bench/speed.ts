// Decode speed on this machine, as ratios taken inside one run (issue 14's speed targets):
// - whole: distvae's whole decode against diffusers' own (through ../shared/tools/difref), the
//   same SD 1.x weights and latent, 2 threads, medians of N warm decodes each (load and the first
//   decode, which builds the sessions, excluded on both sides);
// - shard: row sharding on 1 and 2 process ranks against the fused whole decode on 1 rank × 1
//   thread and 1 rank × 2 threads (what a user with two cores would run instead);
// - `--repo DIR` times another checkout's whole decode in the same run (e.g. the commit before a
//   change), through its own src/index.ts.
// Each configuration runs in a fresh process; the report records the load average before and
// after, the commit and the machine (bench/results/speed.{json,md}).
//
//   npx tsx bench/speed.ts --vae DIR --sizes 320x448,512x512 [--runs 5] [--shard 512x512] [--repo DIR]

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeRun } from '../src/entries/bench.js';

const here = fileURLToPath(import.meta.url);
const root = dirname(dirname(here));
const DIFREF = join(root, '..', 'shared', 'tools', 'difref');

interface Timed {
  label: string;
  seconds: number[];
  median: number;
  peakRssBytes: number | null;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The child's side: load once, decode once to build sessions, then time `runs` decodes. */
async function child(spec: {
  repo: string;
  vae: string;
  latents: string;
  threads: number;
  runs: number;
  strategy: 'whole' | 'shard';
  ranks: number;
}): Promise<void> {
  const api = (await import(join(spec.repo, 'src', 'index.ts'))) as Record<string, any>;
  const vae = await api['loadVae'](spec.vae, { threads: spec.threads });
  const latents = await api['readLatents'](spec.latents);
  let group: { start(): Promise<void>; close(): Promise<void> } | null = null;
  if (spec.strategy === 'shard') {
    group = api['localGroup']({ ranks: spec.ranks, isolation: 'process', threadsPerRank: spec.threads });
    await group!.start();
    api['useStrategy'](vae, 'shard', group);
  }
  const seconds: number[] = [];
  for (let i = 0; i <= spec.runs; i++) {
    const t0 = performance.now();
    await vae.decode(latents);
    if (i > 0) seconds.push((performance.now() - t0) / 1000);
  }
  await group?.close();
  await vae.dispose();
  process.stdout.write(JSON.stringify({ seconds }) + '\n');
}

function runChild(label: string, spec: Parameters<typeof child>[0]): Timed {
  const r = spawnSync('/usr/bin/time', ['-f', 'MAXRSS %M', process.execPath, '--import', 'tsx', here, '--child', JSON.stringify(spec)], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status !== 0) throw new Error(`${label} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  const { seconds } = JSON.parse(line) as { seconds: number[] };
  const rss = /MAXRSS (\d+)/.exec(r.stderr);
  return { label, seconds, median: median(seconds), peakRssBytes: rss ? Number(rss[1]) * 1024 : null };
}

function diffusers(vae: string, latents: string, runs: number): Timed {
  const out = join(tmpdir(), `speed-diffusers-${process.pid}.npy`);
  const r = spawnSync(
    '/usr/bin/time',
    [
      '-f',
      'MAXRSS %M',
      '/usr/bin/python3',
      join(DIFREF, 'ref_decode.py'),
      vae,
      latents,
      out,
      '--time',
      String(runs),
      '--warmup',
      '1',
      '--threads',
      '2',
    ],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (r.status !== 0) throw new Error(`diffusers failed: ${r.stderr.slice(-2000)}`);
  const info = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, any>;
  const seconds: number[] = info['time_runs'] ?? [];
  const med: number = info['time_median_s'] ?? median(seconds);
  const rss = /MAXRSS (\d+)/.exec(r.stderr);
  return { label: 'diffusers whole, 2 threads', seconds, median: med, peakRssBytes: rss ? Number(rss[1]) * 1024 : null };
}

function latentFor(size: string, dir: string): string {
  const [h, w] = size.split('x').map(Number) as [number, number];
  const path = join(dir, `z-${h}x${w}.npy`);
  if (!existsSync(path))
    execFileSync('/usr/bin/python3', [join(DIFREF, 'npytool.py'), 'randn', path, '1', '4', String(h / 8), String(w / 8), '--seed', '1']);
  return path;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      vae: { type: 'string' },
      sizes: { type: 'string', default: '320x448,512x512' },
      runs: { type: 'string', default: '5' },
      shard: { type: 'string' },
      repo: { type: 'string' },
      out: { type: 'string', default: join(root, 'bench', 'results', 'speed') },
    },
  });
  if (!values.vae)
    throw new Error('--vae DIR (a diffusers SD folder, e.g. from make_vae.py kl + scripts/synthetic-vae-folder.ts) is required');
  const vae = resolve(values.vae);
  const runs = Number(values.runs);
  const dir = join(tmpdir(), 'distvae-speed');
  mkdirSync(dir, { recursive: true });
  const loadBefore = loadavg();
  const cells: Record<string, unknown>[] = [];
  for (const size of values.sizes!.split(',')) {
    const latents = latentFor(size, dir);
    const ours = runChild('distvae whole, 2 threads', { repo: root, vae, latents, threads: 2, runs, strategy: 'whole', ranks: 1 });
    const theirs = existsSync(DIFREF) ? diffusers(vae, latents, runs) : null;
    const before = values.repo
      ? runChild(`distvae whole at ${values.repo}, 2 threads`, {
          repo: resolve(values.repo),
          vae,
          latents,
          threads: 2,
          runs,
          strategy: 'whole',
          ranks: 1,
        })
      : null;
    cells.push({
      table: 'whole',
      size,
      ours,
      diffusers: theirs,
      before,
      speedupOverDiffusers: theirs ? theirs.median / ours.median : null,
      speedupOverBefore: before ? before.median / ours.median : null,
    });
  }
  if (values.shard) {
    const latents = latentFor(values.shard, dir);
    const shardRuns = Math.max(1, Math.min(runs, 3));
    const fused1 = runChild('fused whole, 1 rank x 1 thread', {
      repo: root,
      vae,
      latents,
      threads: 1,
      runs: shardRuns,
      strategy: 'whole',
      ranks: 1,
    });
    const fused2 = runChild('fused whole, 1 rank x 2 threads', {
      repo: root,
      vae,
      latents,
      threads: 2,
      runs: shardRuns,
      strategy: 'whole',
      ranks: 1,
    });
    const shard1 = runChild('shard, 1 process rank x 1 thread', {
      repo: root,
      vae,
      latents,
      threads: 1,
      runs: shardRuns,
      strategy: 'shard',
      ranks: 1,
    });
    const shard2 = runChild('shard, 2 process ranks x 1 thread', {
      repo: root,
      vae,
      latents,
      threads: 1,
      runs: shardRuns,
      strategy: 'shard',
      ranks: 2,
    });
    cells.push({
      table: 'shard',
      size: values.shard,
      runs: [fused1, fused2, shard1, shard2],
      shard1OverFused1: shard1.median / fused1.median,
      fused1OverShard2: fused1.median / shard2.median,
      shard2OverFused2: shard2.median / fused2.median,
    });
  }
  const loadAfter = loadavg();
  const command = `npx tsx bench/speed.ts ${process.argv.slice(2).join(' ')}`;
  const ran = { ...describeRun(process.argv.slice(2), 2), command, loadBefore, loadAfter };
  const report = { schema: 1, benchmark: 'speed', ran, cells };
  writeFileSync(`${values.out}.json`, JSON.stringify(report, null, 2) + '\n');
  const rows = cells.flatMap((c) => {
    if (c['table'] === 'whole') {
      const o = c['ours'] as Timed;
      const d = c['diffusers'] as Timed | null;
      const b = c['before'] as Timed | null;
      return [
        `| whole ${c['size']} | ${o.median.toFixed(2)} s (${fmt(o.peakRssBytes)}) | ${d ? `${d.median.toFixed(2)} s (${fmt(d.peakRssBytes)})` : '–'} | ${d ? `${(d.median / o.median).toFixed(2)}×` : '–'} | ${b ? `${b.median.toFixed(2)} s (${fmt(b.peakRssBytes)}), ${(b.median / o.median).toFixed(2)}×` : '–'} |`,
      ];
    }
    return (c['runs'] as Timed[]).map((t) => `| ${c['size']} ${t.label} | ${t.median.toFixed(2)} s (${fmt(t.peakRssBytes)}) | | | |`);
  });
  const md = [
    '# Decode speed (bench/speed.ts)',
    '',
    `Command: \`${command}\` at ${ran.commit}, ${ran.machine}, ${ran.cpu}; load average before ${loadBefore.map((x) => x.toFixed(2)).join(' ')}, after ${loadAfter.map((x) => x.toFixed(2)).join(' ')}. Medians of warm decodes; peak RSS of the whole process in parentheses (for shard: the coordinator; ranks are separate processes).`,
    '',
    '| case | distvae | diffusers | diffusers / distvae | other checkout (speed-up of this one) |',
    '|---|---:|---:|---:|---:|',
    ...rows,
    '',
    ...cells
      .filter((c) => c['table'] === 'shard')
      .map(
        (c) =>
          `Shard ${c['size']}: shard on 1 rank / fused 1×1 = ${(c['shard1OverFused1'] as number).toFixed(2)}; fused 1×1 / shard 2×1 = ${(c['fused1OverShard2'] as number).toFixed(2)}; shard 2×1 / fused 1×2 = ${(c['shard2OverFused2'] as number).toFixed(2)}.`,
      ),
    '',
  ].join('\n');
  writeFileSync(`${values.out}.md`, md);
  process.stdout.write(md);
}

function fmt(bytes: number | null): string {
  return bytes === null ? '?' : `${Math.round(bytes / 2 ** 20)} MiB`;
}

const childAt = process.argv.indexOf('--child');
if (childAt >= 0) await child(JSON.parse(process.argv[childAt + 1]!));
else await main();
