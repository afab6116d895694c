// Repeatability of a rank's peak memory under glibc allocator settings (issue 29 item 3): the
// same decode (default: the SD-architecture decoder, seeded synthetic weights, 512², row
// sharding on 2 process ranks, 1 thread each) run N times under each setting, each rank's peak
// (VmHWM) per run, its spread (max − min) / median, and the decode's seconds (noisy on a shared
// machine: uptime is recorded before and after).
//
//   npx tsx bench/rank-allocator.ts [--arms inherit,default,NAME=VAR:VALUE+VAR:VALUE] [--repeat 5] [--jobs 1]
//                                   [--size 512] [--ranks 2] [--out bench/results/rank-allocator.json]
//
// `inherit` runs the ranks with glibc's own defaults (DISTVAE_RANK_ALLOCATOR=inherit), `default`
// with what distvae gives them (src/ranks/local/process/allocator-env.ts); any other arm sets its
// variables in the coordinator's environment, which its rank processes inherit (a variable the
// user set is never overridden). Arms are interleaved run by run, so load drifts over all alike;
// `--jobs N` runs N decodes at once (peaks are per process and do not disturb each other; wall
// seconds then mean little, so each run's CPU seconds — user and system, the ranks included, from
// /usr/bin/time — are the speed measure: system time is where page faults of fresh memory show).

import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { writeNpy } from '../src/io/npy.js';
import { RANK_ALLOCATOR_DEFAULTS, RANK_ALLOCATOR_ENV } from '../src/ranks/local/process/allocator-env.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    arms: { type: 'string', default: 'inherit,default' },
    repeat: { type: 'string', default: '5' },
    jobs: { type: 'string', default: '1' },
    size: { type: 'string', default: '512' },
    ranks: { type: 'string', default: '2' },
    out: { type: 'string', default: join(ROOT, 'bench', 'results', 'rank-allocator.json') },
  },
});
const repeat = Number(args.repeat);
const size = Number(args.size);
const ranks = Number(args.ranks);
const TMP = join(tmpdir(), `distvae-rank-allocator-${process.pid}`);
mkdirSync(TMP, { recursive: true });

const ALLOCATOR_VARS = ['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'MALLOC_MMAP_MAX_', 'MALLOC_TOP_PAD_'];

interface Arm {
  name: string;
  env: Record<string, string>;
}

function armOf(spec: string): Arm {
  if (spec === 'inherit') return { name: 'inherit', env: { [RANK_ALLOCATOR_ENV]: 'inherit' } };
  if (spec === 'default') return { name: 'default', env: { ...RANK_ALLOCATOR_DEFAULTS } };
  const [name, vars] = spec.split('=') as [string, string];
  return {
    name,
    env: { [RANK_ALLOCATOR_ENV]: 'inherit', ...Object.fromEntries(vars.split('+').map((kv) => kv.split(':') as [string, string])) },
  };
}

const arms = args.arms.split(',').map(armOf);
const latents = join(TMP, 'z.npy');
{
  const side = size / 8;
  const dims = [1, 4, side, side];
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
  let s = 12345;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    data[i] = (s / 2 ** 32) * 2 - 1;
  }
  writeNpy(latents, { dims, data });
}

const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const command = [
  join(ROOT, 'bin', 'distvae.js'),
  'decode',
  '--synthetic',
  '--family',
  'autoencoder-kl',
  '--latents',
  latents,
  '--strategy',
  'shard',
  '--ranks',
  String(ranks),
  '--isolation',
  'process',
  '--threads',
  '1',
  '--max-memory',
  '64GiB',
  '--json',
];

interface Run {
  seconds: number;
  wallSeconds: number;
  /** CPU seconds of the decode's processes (coordinator and ranks): user, system. */
  userSeconds: number;
  systemSeconds: number;
  coordinator: number | null;
  ranks: (number | null)[];
}

const before = uptime();
const started = new Date().toISOString();
const runs = new Map<string, Run[]>(arms.map((a) => [a.name, []]));
const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !ALLOCATOR_VARS.includes(k) && k !== RANK_ALLOCATOR_ENV));
const queue = Array.from({ length: repeat }, (_, i) => arms.map((arm) => ({ arm, i }))).flat();
let next = 0;
async function one(arm: Arm, i: number): Promise<void> {
  const times = join(TMP, `time-${arm.name}-${i}.txt`);
  const t0 = performance.now();
  const { stdout } = await promisify(execFile)(
    '/usr/bin/time',
    ['-o', times, '-f', '%U %S', process.execPath, ...command, '--out', join(TMP, `out-${arm.name}-${i}.npy`)],
    {
      encoding: 'utf8',
      env: { ...base, ...arm.env },
      maxBuffer: 1 << 24,
    },
  );
  const wallSeconds = (performance.now() - t0) / 1000;
  const [user, system] = readFileSync(times, 'utf8').trim().split('\n').pop()!.split(' ').map(Number) as [number, number];
  const json = JSON.parse(stdout.trim().split('\n').pop()!) as {
    seconds: number;
    memory: { coordinator: { measuredPeakBytes: number | null }; ranks: { rank: number; measuredPeakBytes: number | null }[] };
  };
  const run: Run = {
    seconds: json.seconds,
    wallSeconds,
    userSeconds: user,
    systemSeconds: system,
    coordinator: json.memory.coordinator.measuredPeakBytes,
    ranks: json.memory.ranks.map((r) => r.measuredPeakBytes),
  };
  runs.get(arm.name)!.push(run);
  process.stderr.write(
    `${new Date().toISOString().slice(11, 19)} ${arm.name} run ${i + 1}: ${run.seconds.toFixed(1)} s, cpu ${user.toFixed(1)} user + ${system.toFixed(1)} sys, ranks ${run.ranks.map(mib).join(' / ')} MiB, coordinator ${mib(run.coordinator)} MiB\n`,
  );
}
await Promise.all(
  Array.from({ length: Math.max(1, Number(args.jobs)) }, async () => {
    while (next < queue.length) {
      const { arm, i } = queue[next++]!;
      await one(arm, i);
    }
  }),
);
const after = uptime();

function mib(n: number | null): string {
  return n === null ? '–' : String(Math.round(n / 2 ** 20));
}
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
const spread = (xs: number[]) => (Math.max(...xs) - Math.min(...xs)) / median(xs);

const summary = arms.map((arm) => {
  const rs = runs.get(arm.name)!;
  const perRank = rs[0]!.ranks.map((_, r) => {
    const peaks = rs.map((x) => x.ranks[r]!).filter((x) => x !== null);
    return { rank: r, peaks, medianBytes: median(peaks), spread: spread(peaks) };
  });
  const coordinator = rs.map((x) => x.coordinator!).filter((x) => x !== null);
  return {
    arm: arm.name,
    env: arm.env,
    perRank,
    coordinator: { peaks: coordinator, medianBytes: median(coordinator), spread: spread(coordinator) },
    seconds: rs.map((x) => x.seconds),
    medianSeconds: median(rs.map((x) => x.seconds)),
    cpuSeconds: rs.map((x) => x.userSeconds + x.systemSeconds),
    medianCpuSeconds: median(rs.map((x) => x.userSeconds + x.systemSeconds)),
    medianSystemSeconds: median(rs.map((x) => x.systemSeconds)),
  };
});

let commit = '';
try {
  commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
} catch {
  commit = 'unknown';
}
const caseText = `autoencoder-kl (SD architecture), synthetic weights, ${size}x${size}, shard on ${ranks} process ranks, 1 thread each`;
// The docs site's bench report schema (docs/lib/bench-reports.ts): the run in `ran`, the case a cell with its arms.
const report = {
  schema: 1,
  benchmark: 'rank-allocator',
  ran: {
    started,
    commit,
    command: `npx tsx bench/rank-allocator.ts ${process.argv.slice(2).join(' ')}`,
    uptimeBefore: before,
    uptimeAfter: after,
  },
  cells: [{ case: caseText, arms: summary }],
};
mkdirSync(dirname(args.out), { recursive: true });
writeFileSync(args.out, JSON.stringify(report, null, 2) + '\n');
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const md = [
  '# Rank memory under allocator settings',
  '',
  `\`${report.ran.command}\` at commit ${commit}, ${started}. ${caseText}; ${repeat} decodes per arm, arms interleaved, ${args.jobs} at a time.`,
  '',
  `uptime before: \`${before}\`; after: \`${after}\` (seconds are noisy: other jobs share the 2 cores; peaks are not).`,
  '',
  '| arm | environment | rank | peaks MiB | median MiB | spread | coordinator median MiB | median CPU s (system) | CPU s per run | median wall s |',
  '|---|---|---|---|---|---|---|---|---|---|',
  ...summary.flatMap((s) =>
    s.perRank.map(
      (r) =>
        `| ${s.arm} | ${Object.entries(s.env)
          .map(([k, v]) => `${k}=${v}`)
          .join(
            ' ',
          )} | ${r.rank} | ${r.peaks.map(mib).join(' / ')} | ${mib(r.medianBytes)} | ${pct(r.spread)} | ${mib(s.coordinator.medianBytes)} | ${s.medianCpuSeconds.toFixed(1)} (${s.medianSystemSeconds.toFixed(1)}) | ${s.cpuSeconds.map((x) => x.toFixed(1)).join(' / ')} | ${s.medianSeconds.toFixed(1)} |`,
    ),
  ),
  '',
  "spread = (max − min) / median of a rank's peaks over the runs of one arm.",
];
writeFileSync(args.out.replace(/\.json$/, '.md'), md.join('\n') + '\n');
rmSync(TMP, { recursive: true, force: true });
process.stderr.write(`wrote ${args.out}\n`);
