// Encode cells (issue 28, Benchmark): the SD-architecture encoder (synthetic weights: a diffusers
// AutoencoderKL folder made by difref's make_vae.py, so both sides read the same weights) at 512²
// and 1024² — whole, blended tiles (this process, and 2 process ranks), row-sharded on 1 and 2
// ranks — each `distvae encode --json` once: its seconds (the encode without loading), the peak
// RSS of every process (coordinator VmHWM, each rank's) and its agreement with our whole encode
// and with diffusers' (max |Δ| / max |whole|); diffusers' encode beside it through difref
// (`ref_encode.py … --time 1`, full and tiled at the same tiles, peak via /usr/bin/time -f %M).
//
//   DIFFUSERS_GIT=/work/.mirror/huggingface+diffusers/repo npx tsx bench/encode.ts [--sizes 512,1024] [--threads 2] [--out bench/results/encode-sd.json]
//
// The input is one .npy image in [-1, 1] (difref's npytool.py image: smooth random content), which
// both encoders read as it is. Timings are single runs on a shared machine (uptime recorded before
// and after): compare as ratios within a size, not across runs.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readNpy } from '../src/io/npy.js';
import type { Tensor } from '../src/tensor.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIFREF = process.env['DIFREF'] ?? '/work/shared/tools/difref';
const PY = '/usr/bin/python3';

function flags(): Record<string, string> {
  const out: Record<string, string> = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) if (argv[i]!.startsWith('--')) out[argv[i]!.slice(2)] = argv[i + 1] ?? '';
  return out;
}

const f = flags();
const sizes = (f['sizes'] ?? '512,1024').split(',').map(Number);
const threads = Number(f['threads'] ?? 2);
const outPath = f['out'] ?? join(ROOT, 'bench', 'results', 'encode-sd.json');
const TMP = join(f['tmp'] ?? '/tmp', `distvae-encode-bench-${process.pid}`);
mkdirSync(TMP, { recursive: true });

interface Cell {
  size: number;
  engine: 'distvae' | 'diffusers';
  plan: string;
  seconds: number | null;
  /** Peak RSS of each process, MiB: the coordinator first (diffusers: its one process). */
  peakMiB: { process: string; mib: number | null }[];
  /** Max |Δ| / max |whole| against our whole encode and against diffusers' whole encode. */
  vsWhole: number | null;
  vsDiffusers: number | null;
  /** Tile cells: max |Δ| / max |theirs| against diffusers' `tiled_encode` at the same tiles. */
  vsDiffusersTiled?: number | null;
  predictedPeakMiB?: number | null;
  /** The coordinator's peak plus every rank process's (distvae's `memory.measuredPeakBytes`). */
  measuredPeakMiB?: number | null;
  error?: string;
}

const mib = (b: number | null | undefined) => (b === null || b === undefined ? null : Math.round(b / 2 ** 20));

function relDiff(a: Tensor, b: Tensor): number {
  let d = 0;
  let m = 0;
  for (let i = 0; i < b.data.length; i++) {
    d = Math.max(d, Math.abs(a.data[i]! - b.data[i]!));
    m = Math.max(m, Math.abs(b.data[i]!));
  }
  return a.data.length === b.data.length ? d / m : Number.NaN;
}

function uptime(): string {
  return execFileSync('uptime', { encoding: 'utf8' }).trim();
}

const vaeDir = join(TMP, 'sd-vae');
const env = { ...process.env, DIFFUSERS_GIT: process.env['DIFFUSERS_GIT'] ?? '/work/.mirror/huggingface+diffusers/repo' };
execFileSync(PY, [join(DIFREF, 'make_vae.py'), 'kl', vaeDir, '--seed', '1'], { env, stdio: ['ignore', 'ignore', 'inherit'] });

const before = uptime();
const cells: Cell[] = [];
for (const size of sizes) {
  const image = join(TMP, `x-${size}.npy`);
  execFileSync(PY, [join(DIFREF, 'npytool.py'), 'image', image, '1', '3', String(size), String(size), '--seed', '1'], {
    env,
    stdio: 'ignore',
  });
  // diffusers' default tiles (512 px, overlap factor 0.25 → 128 px) at 1024²; 256 / 64 at 512² (one default tile would be the whole image);
  // half the image below that (a quick check of the bench at --sizes 64 still tiles).
  const tile = size >= 1024 ? 512 : size >= 512 ? 256 : size / 2;
  const overlap = tile / 4;
  const refs: Record<string, Tensor> = {};
  const diffusers = (tiled: boolean): Cell => {
    const out = join(TMP, `ref-${size}-${tiled ? 'tiled' : 'whole'}.npy`);
    const args = [join(DIFREF, 'ref_encode.py'), vaeDir, image, out, '--time', '1', '--warmup', '0', '--threads', String(threads)];
    if (tiled) args.push('--tiled', '--tile-sample', String(tile), String(tile));
    const r = spawnSync('/usr/bin/time', ['-f', '%M', PY, ...args], { env, encoding: 'utf8', maxBuffer: 1 << 24 });
    const plan = tiled ? `tiled_encode ${tile}/${overlap}` : 'encode (whole)';
    if (r.status !== 0)
      return { size, engine: 'diffusers', plan, seconds: null, peakMiB: [], vsWhole: null, vsDiffusers: null, error: r.stderr.slice(-300) };
    const json = JSON.parse(r.stdout.trim().split('\n').pop()!) as { time_median_s?: number };
    const peak = Math.round(Number(r.stderr.trim().split('\n').pop()) / 1024);
    const latents = readNpy(out);
    refs[tiled ? 'diffusersTiled' : 'diffusers'] = latents;
    const seconds = json.time_median_s ?? null;
    return {
      size,
      engine: 'diffusers',
      plan,
      seconds,
      peakMiB: [{ process: 'python', mib: peak }],
      vsWhole: null,
      vsDiffusers: tiled ? relDiff(latents, refs['diffusers']!) : 0,
    };
  };
  const ours = (plan: string, extra: string[]): Cell => {
    const out = join(TMP, `ours-${size}-${plan.replace(/\W+/g, '-')}.npy`);
    const args = [
      join(ROOT, 'bin', 'distvae.js'),
      'encode',
      '--vae',
      vaeDir,
      '--image',
      image,
      '--out',
      out,
      '--threads',
      String(threads),
      '--max-memory',
      '64GiB',
      '--json',
      ...extra,
    ];
    const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 24 });
    if (r.status !== 0)
      return { size, engine: 'distvae', plan, seconds: null, peakMiB: [], vsWhole: null, vsDiffusers: null, error: r.stderr.slice(-300) };
    const json = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      seconds: number;
      memory: {
        predictedPeakBytes: number | null;
        measuredPeakBytes: number | null;
        coordinator: { measuredPeakBytes: number | null };
        ranks: { rank: number; measuredPeakBytes: number | null }[];
      };
    };
    const latents = readNpy(out);
    if (plan === 'whole') refs['ours'] = latents;
    return {
      size,
      engine: 'distvae',
      plan,
      seconds: json.seconds,
      peakMiB: [
        { process: 'coordinator', mib: mib(json.memory.coordinator.measuredPeakBytes) },
        ...json.memory.ranks.map((x) => ({ process: `rank ${x.rank}`, mib: mib(x.measuredPeakBytes) })),
      ],
      predictedPeakMiB: mib(json.memory.predictedPeakBytes),
      measuredPeakMiB: mib(json.memory.measuredPeakBytes),
      vsWhole: refs['ours'] ? relDiff(latents, refs['ours']) : null,
      vsDiffusers: refs['diffusers'] ? relDiff(latents, refs['diffusers']) : null,
    };
  };
  const run = (cell: () => Cell) => {
    const c = cell();
    cells.push(c);
    process.stderr.write(`${JSON.stringify(c)}\n`);
    save();
  };
  // Ours first (the diffusers encodes are the slowest cells on a loaded machine), then diffusers',
  // and our cells' agreement with diffusers' whole encode filled in once it is there.
  const ourLatents: { cell: Cell; out: string }[] = [];
  const runOurs = (plan: string, extra: string[]) =>
    run(() => {
      const c = ours(plan, extra);
      ourLatents.push({ cell: c, out: join(TMP, `ours-${size}-${plan.replace(/\W+/g, '-')}.npy`) });
      return c;
    });
  runOurs('whole', ['--full']);
  const window = ['--window', `${tile}x${tile}`, '--overlap', `${overlap}x${overlap}`];
  runOurs(`tile ${tile}/${overlap}`, window);
  runOurs(`tile ${tile}/${overlap} on 2 ranks`, [...window, '--ranks', '2', '--isolation', 'process']);
  for (const ranks of [2, 1])
    runOurs(`shard on ${ranks} rank${ranks > 1 ? 's' : ''}`, ['--strategy', 'shard', '--ranks', String(ranks), '--isolation', 'process']);
  run(() => diffusers(false));
  for (const { cell, out } of ourLatents) if (cell.error === undefined) cell.vsDiffusers = relDiff(readNpy(out), refs['diffusers']!);
  save();
  run(() => diffusers(true));
  for (const { cell, out } of ourLatents)
    if (cell.error === undefined && cell.plan.startsWith('tile') && refs['diffusersTiled'])
      cell.vsDiffusersTiled = relDiff(readNpy(out), refs['diffusersTiled']);
  save();
}

function save(after?: string): void {
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const report = {
    schema: 1,
    benchmark: 'encode-sd',
    ran: {
      date: new Date().toISOString(),
      command: `npx tsx bench/encode.ts --sizes ${sizes.join(',')} --threads ${threads}`,
      commit,
      machine: `${process.platform} ${process.arch}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${cpus()[0]?.model ?? 'cpu'} (${cpus().length} cores), Node ${process.version}`,
      uptimeBefore: before,
      ...(after ? { uptimeAfter: after } : {}),
      note: 'single runs on a machine shared with other jobs (load in the uptime lines): seconds are noisy, peaks are not',
    },
    // Each cell's peaks also as one line (the docs site renders scalars).
    cells: cells.map((c) => ({ ...c, peaks: c.peakMiB.map((p) => `${p.process} ${p.mib ?? '–'} MiB`).join(', ') })),
  };
  writeFileSync(outPath, JSON.stringify(report, null, 2) + '\n');
  const rows = cells.map(
    (c) =>
      `| ${c.size}² | ${c.engine} | ${c.plan} | ${c.seconds === null ? '–' : c.seconds.toFixed(2)} | ${c.peakMiB.map((p) => `${p.process} ${p.mib ?? '–'}`).join(', ') || '–'} | ${c.measuredPeakMiB ?? '–'} | ${c.predictedPeakMiB ?? '–'} | ${c.vsWhole === null ? '–' : c.vsWhole.toExponential(1)} | ${c.vsDiffusers === null ? '–' : c.vsDiffusers.toExponential(1)} | ${c.vsDiffusersTiled == null ? '–' : c.vsDiffusersTiled.toExponential(1)} |${c.error ? ` failed: ${c.error.replace(/\s+/g, ' ').replace(/\|/g, '/').slice(-160)}` : ''}`,
  );
  const md = [
    '# Encode cells: SD-architecture encoder (synthetic weights), distvae beside diffusers',
    '',
    `\`${report.ran.command}\` at ${commit}, ${report.ran.date}, ${report.ran.machine}. Uptime before: ${before}${after ? `; after: ${after}` : ''}. ${report.ran.note}.`,
    '',
    "Seconds: the encode without loading (distvae `encode --json`; diffusers: ref_encode.py `--time 1`, one timed run). Peak: VmHWM of each process (distvae: the coordinator and every rank process, for tiles and row sharding alike; diffusers: /usr/bin/time -f %M). Agreement: max |Δ| / max |whole| against our whole encode and against diffusers' whole encode, on the same weights (difref make_vae.py kl --seed 1) and the same input .npy.",
    '',
    '| size | engine | plan | seconds | peak MiB | measured MiB (all processes) | predicted MiB (all processes) | vs our whole | vs diffusers whole | vs diffusers tiled (same tiles) |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ];
  writeFileSync(outPath.replace(/\.json$/, '.md'), md.join('\n') + '\n');
}

save(uptime());
process.stderr.write(`wrote ${outPath}\n`);
