// What the relaunch of the long-running commands costs (src/ranks/local/process/relaunch.ts): one
// `distvae decode --out-dir` over --files latents of the tiny synthetic AutoencoderKL, through a
// bin (this checkout's, or --bin: a built package's, which runs dist/ and no tsx), arms
// interleaved --repeat times: `relaunch` (as a user runs it) and `inherit`
// (DISTVAE_RANK_ALLOCATOR=inherit: no relaunch, glibc's defaults — what distvae did before).
// Per run: wall seconds, CPU seconds of the whole tree (user + system, /usr/bin/time), the
// launcher's resident set (largest seen, sampled every 20 ms) and the decoding process's peak
// (VmHWM, sampled). Not a test: it measures.
//
//   npx tsx bench/relaunch-cost.ts [--bin PATH] [--files 20] [--repeat 3] [--out bench/results/relaunch-cost]

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeRun } from '../src/bench/machine.js';
import { writeNpy } from '../src/io/npy.js';
import { RANK_ALLOCATOR_DEFAULTS } from '../src/ranks/local/process/allocator-env.js';
import { seededLatent, TINY_KL } from '../src/ranks/testing/tiny-vae.js';

const { values: args } = parseArgs({
  options: {
    bin: { type: 'string', default: fileURLToPath(new URL('../bin/distvae.js', import.meta.url)) },
    files: { type: 'string', default: '20' },
    repeat: { type: 'string', default: '3' },
    out: { type: 'string', default: 'bench/results/relaunch-cost' },
  },
});
const bin = resolve(args.bin);
const files = Number(args.files);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const dir = mkdtempSync(join(tmpdir(), 'distvae-relaunch-cost-'));
const config = join(dir, 'tiny-kl.json');
writeFileSync(config, JSON.stringify(TINY_KL));
const latents = join(dir, 'latents');
mkdirSync(latents);
for (let i = 1; i <= files; i++) writeNpy(join(latents, `z${String(i).padStart(3, '0')}.npy`), seededLatent(40, 56, i));

/** A /proc/PID/status field in MiB, or null once the process is gone. */
function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}
const childrenOf = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

type Arm = 'relaunch' | 'inherit';
interface Run {
  arm: Arm;
  wallS: number;
  cpuS: number;
  launcherRssMiB: number | null;
  decoderPeakMiB: number;
}

async function once_(arm: Arm, run: number): Promise<Run> {
  const out = join(dir, `out-${arm}-${run}`);
  mkdirSync(out);
  const env: Record<string, string> = { ...(process.env as Record<string, string>) };
  for (const name of [...Object.keys(RANK_ALLOCATOR_DEFAULTS), 'DISTVAE_RANK_ALLOCATOR']) delete env[name];
  if (arm === 'inherit') env['DISTVAE_RANK_ALLOCATOR'] = 'inherit';
  const timeFile = join(dir, `time-${arm}-${run}`);
  const argv = ['decode', '--synthetic', '--family', 'autoencoder-kl', '--config', config, '--latents', latents, '--out-dir', out];
  const started = Date.now();
  const child = spawn(
    '/usr/bin/time',
    ['-f', '%U %S', '-o', timeFile, process.execPath, bin, ...argv, '--window', '32x32', '--overlap', '8x8', '--threads', '1'],
    { stdio: 'ignore', env },
  );
  let launcherRss: number | null = null;
  let decoderPeak = 0;
  const sample = setInterval(() => {
    // /usr/bin/time → node (the launcher, or the decode itself) → [the relaunched decode]
    const node = childrenOf(child.pid!)[0];
    if (node === undefined) return;
    const relaunched = childrenOf(node).find((c) => readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('distvae.js'));
    const decoder = relaunched ?? node;
    if (relaunched !== undefined) launcherRss = Math.max(launcherRss ?? 0, statusMiB(node, 'VmRSS') ?? 0);
    decoderPeak = Math.max(decoderPeak, statusMiB(decoder, 'VmHWM') ?? 0);
  }, 20);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearInterval(sample);
  if (code !== 0) throw new Error(`${arm}: exited ${code}`);
  const [user, system] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
  return {
    arm,
    wallS: +((Date.now() - started) / 1000).toFixed(2),
    cpuS: +(user! + system!).toFixed(2),
    launcherRssMiB: launcherRss === null ? null : +(launcherRss as number).toFixed(1),
    decoderPeakMiB: +decoderPeak.toFixed(1),
  };
}

const ran = { ...describeRun(process.argv.slice(2), 1), uptimeBefore: uptime() };
const runs: Run[] = [];
try {
  for (let r = 0; r < Number(args.repeat); r++)
    for (const arm of (r % 2 === 0 ? ['relaunch', 'inherit'] : ['inherit', 'relaunch']) as Arm[]) {
      runs.push(await once_(arm, r));
      process.stderr.write(`${JSON.stringify(runs.at(-1))}\n`);
    }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const report = { ...ran, uptimeAfter: uptime(), bin, files };
// The docs site's bench report schema (docs/lib/bench-reports.ts): each run a cell.
writeFileSync(`${args.out}.json`, JSON.stringify({ schema: 1, ran: report, cells: runs }, null, 2) + '\n');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const lines = [
  '# What the relaunch of the long-running commands costs',
  '',
  `\`npx tsx bench/relaunch-cost.ts ${process.argv.slice(2).join(' ')}\` at ${String(ran['commit'])}, ${String(ran['date'])}, ${String(ran['machine'])}, ${String(ran['cpu'])} (${String(ran['cores'])} cores), Node ${String(ran['node'])}; bin ${bin}; \`distvae decode --synthetic --family autoencoder-kl --config tiny-kl.json --latents DIR --out-dir OUT --window 32x32 --overlap 8x8 --threads 1\` over ${files} latents 40x56; arms interleaved.`,
  '',
  `uptime before: \`${ran.uptimeBefore}\`; after: \`${report.uptimeAfter}\` (other jobs shared the machine: wall and CPU seconds are noisy, resident sets are not).`,
  '',
  '| arm | wall s (runs) | median wall s | CPU s user+sys (runs) | median CPU s | launcher RSS MiB | decoding process peak MiB (runs) |',
  '| --- | --- | --- | --- | --- | --- | --- |',
  ...(['relaunch', 'inherit'] as Arm[]).map((arm) => {
    const rs = runs.filter((r) => r.arm === arm);
    return `| ${arm} | ${rs.map((r) => r.wallS).join(' / ')} | ${median(rs.map((r) => r.wallS))} | ${rs.map((r) => r.cpuS).join(' / ')} | ${median(rs.map((r) => r.cpuS))} | ${rs.map((r) => r.launcherRssMiB ?? '—').join(' / ')} | ${rs.map((r) => r.decoderPeakMiB).join(' / ')} |`;
  }),
];
writeFileSync(`${args.out}.md`, lines.join('\n') + '\n');
process.stderr.write(`wrote ${args.out}.json and .md\n`);
