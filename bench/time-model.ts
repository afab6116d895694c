// Accuracy and calibration of the time model (src/memory/time-model.ts): each cell decodes
// through the CLI (`distvae decode --json`, default thread ranks) and compares the model's
// predicted seconds with the decode's measured `seconds` (the median of --repeat runs).
//
//   [DISTVAE_CLI=/frozen/checkout/bin/distvae.js] npx tsx bench/time-model.ts [--cells all|NAME,NAME] [--repeat 3] [--out bench/results/time-model.json]
//   npx tsx bench/time-model.ts calibrate [--from bench/results/time-model.json] [--terms fixedSeconds,secondsPerGmac,…] [--write]
//   npx tsx bench/time-model.ts report [--from bench/results/time-model.json]
//
// The first runs the matrix: repetition 1 of every cell, then repetition 2, … (so a change in
// the machine's load spreads over every cell instead of landing on a few), `uptime` recorded
// before and after each run. `calibrate` fits the CPU entry of src/memory/time-calibration.ts to
// the measured medians (non-negative least squares on the relative error over the terms of
// src/memory/time-model.ts, for each thread efficiency and cache size on a grid) and prints each
// cell's error in the fit and left out of it (the fit redone without that cell);
// `--write` regenerates src/memory/time-calibration.ts with it. `report` rewrites the report's
// predictions and errors under the committed calibration. So a change to the model is refitted
// without decoding; the matrix itself should be rerun on a quiet machine (timings taken while
// other work shares the cores are slower by however much that work takes).
//
// The trained TAEF2 decoder is read from ../shared (DISTVAE_SHARED=/path/to/shared from a worktree).

import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { planningVae } from '../src/families/registry.js';
import type { VaeSpec } from '../src/families/types.js';
import { calibrationLatentFile } from './latent-file.js';
import type { MemoryPlan } from '../src/memory/model.js';
import { describePlan } from '../src/memory/policy.js';
import { TIME_CALIBRATIONS, type TimeCalibration } from '../src/memory/time-calibration.js';
import { secondsOfTerms, timeTerms, type TimeTerms } from '../src/memory/time-model.js';
import { latentShapeOf } from '../src/plan/shapes.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SHARED = process.env['DISTVAE_SHARED'] ?? (existsSync(join(ROOT, '..', 'shared')) ? join(ROOT, '..', 'shared') : '/work/shared');
const TAEF2 = join(SHARED, 'models', 'taef2', 'taef2_decoder.pth');
const TMP = join(tmpdir(), `distvae-time-model-${process.pid}`);
// The CLI that decodes (DISTVAE_CLI: a frozen checkout's bin/distvae.js, so edits to this tree during a long matrix do not reach it).
const CLI = process.env['DISTVAE_CLI'] ?? join(ROOT, 'bin', 'distvae.js');

interface Cell {
  name: string;
  family: 'autoencoder-kl' | 'tae';
  taef2?: boolean;
  height: number;
  width: number;
  plan: MemoryPlan;
  /** Intra-op threads per rank (--threads). */
  threads: number;
}

const tile = (ranks: number, w: number, o: number): MemoryPlan => ({
  strategy: 'tile',
  ranks,
  window: { height: w, width: w },
  overlap: { height: o, width: o },
});
const whole: MemoryPlan = { strategy: 'whole', ranks: 1 };
const shard = (ranks: number): MemoryPlan => ({ strategy: 'shard', ranks });

// Cells sized so one run takes under a minute on a loaded 2-core machine.
const CELLS: Cell[] = [
  { name: 'taef2-whole-512-t1', family: 'tae', taef2: true, height: 512, width: 512, plan: whole, threads: 1 },
  { name: 'taef2-whole-512-t2', family: 'tae', taef2: true, height: 512, width: 512, plan: whole, threads: 2 },
  { name: 'taef2-whole-768-t1', family: 'tae', taef2: true, height: 768, width: 768, plan: whole, threads: 1 },
  { name: 'taef2-shard-768-r2-t1', family: 'tae', taef2: true, height: 768, width: 768, plan: shard(2), threads: 1 },
  { name: 'taef2-tile-768-384-r2-t1', family: 'tae', taef2: true, height: 768, width: 768, plan: tile(2, 384, 96), threads: 1 },
  { name: 'taef2-tile-512-256-r1-t1', family: 'tae', taef2: true, height: 512, width: 512, plan: tile(1, 256, 64), threads: 1 },
  { name: 'sd-whole-128-t1', family: 'autoencoder-kl', height: 128, width: 128, plan: whole, threads: 1 },
  { name: 'sd-whole-128-t2', family: 'autoencoder-kl', height: 128, width: 128, plan: whole, threads: 2 },
  { name: 'sd-whole-256-t1', family: 'autoencoder-kl', height: 256, width: 256, plan: whole, threads: 1 },
  { name: 'sd-shard-128-r2-t1', family: 'autoencoder-kl', height: 128, width: 128, plan: shard(2), threads: 1 },
  { name: 'sd-tile-256-128-r1-t1', family: 'autoencoder-kl', height: 256, width: 256, plan: tile(1, 128, 32), threads: 1 },
  // Not measured yet (added after the 2026-12-05 matrix): whether SD's memory-bound convolutions
  // speed up with threads (bench/speed.ts once measured 26.0 s / 14.3 s warm at 1 / 2 threads;
  // the model, fitted without such a cell, predicts 22.1 / 19.8 s of compute).
  { name: 'sd-whole-512-t1', family: 'autoencoder-kl', height: 512, width: 512, plan: whole, threads: 1 },
  { name: 'sd-whole-512-t2', family: 'autoencoder-kl', height: 512, width: 512, plan: whole, threads: 2 },
];

interface Run {
  seconds: number | null;
  wallSeconds: number;
  uptimeBefore: string;
  uptimeAfter: string;
  failed?: string;
}

interface CellResult {
  name: string;
  size: string;
  plan: string;
  threads: number;
  runs: Run[];
  measuredSeconds: number | null;
  predictedSeconds: number;
  error: number | null;
  terms: TimeTerms;
}

function vaeOf(c: Cell): VaeSpec {
  return planningVae(c.family, c.taef2 ? { variant: 'taef2' } : undefined);
}

function latentFile(vae: VaeSpec, c: Cell): string {
  const latent = latentShapeOf(vae.geometry, { height: c.height, width: c.width });
  const dims = [1, vae.geometry.latentChannels, latent.height, latent.width];
  return calibrationLatentFile(TMP, c.family, dims);
}

function cliArgs(c: Cell, latents: string): string[] {
  const source = c.taef2 ? ['--vae', TAEF2, '--family', 'tae'] : ['--synthetic', '--family', c.family];
  const p = c.plan;
  const planArgs =
    p.strategy === 'whole'
      ? ['--full']
      : p.strategy === 'shard'
        ? ['--strategy', 'shard']
        : [
            ...(p.strategy === 'exact-tile' ? ['--strategy', 'exact-tile'] : []),
            '--window',
            `${p.window!.height}x${p.window!.width}`,
            '--overlap',
            `${p.overlap!.height}x${p.overlap!.width}`,
          ];
  const ranks = p.ranks > 1 || p.strategy === 'shard' ? ['--ranks', String(p.ranks)] : [];
  return [
    'decode',
    ...source,
    '--latents',
    latents,
    '--out',
    join(TMP, `out-${c.name}.npy`),
    ...planArgs,
    ...ranks,
    '--threads',
    String(c.threads),
    '--max-memory',
    '64GiB',
    '--json',
  ];
}

const uptime = (): string => execFileSync('uptime', { encoding: 'utf8' }).trim();

async function runOnce(c: Cell): Promise<Run> {
  const uptimeBefore = uptime();
  const t0 = performance.now();
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, ...cliArgs(c, latentFile(vaeOf(c), c))], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    const json = JSON.parse(stdout.trim().split('\n').pop()!) as { seconds: number };
    return { seconds: json.seconds, wallSeconds: (performance.now() - t0) / 1000, uptimeBefore, uptimeAfter: uptime() };
  } catch (e) {
    const said = String((e as { stderr?: string }).stderr ?? '')
      .trim()
      .split('\n')
      .pop();
    return { seconds: null, wallSeconds: (performance.now() - t0) / 1000, uptimeBefore, uptimeAfter: uptime(), failed: said || String(e) };
  }
}

function median(values: readonly (number | null)[]): number | null {
  const known = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
  return known.length ? known[Math.floor(known.length / 2)]! : null;
}

function termsOf(c: Cell, cacheBytes?: number): TimeTerms {
  return timeTerms(
    vaeOf(c),
    c.plan,
    { height: c.height, width: c.width },
    { threads: c.threads, ...(cacheBytes === undefined ? {} : { cacheBytes }) },
  );
}

function withPrediction(r: Omit<CellResult, 'predictedSeconds' | 'error' | 'terms'>, cal: TimeCalibration): CellResult {
  const cell = CELLS.find((c) => c.name === r.name)!;
  const terms = termsOf(cell, cal.cacheBytes);
  const predictedSeconds = secondsOfTerms(terms, cal);
  const error = r.measuredSeconds ? (predictedSeconds - r.measuredSeconds) / r.measuredSeconds : null;
  return { ...r, predictedSeconds, error, terms };
}

const pct = (x: number | null) => (x === null ? '–' : `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %`);

function markdown(report: { ran: Record<string, unknown>; calibration: TimeCalibration; cells: CellResult[] }): string {
  const rows = report.cells.map(
    (c) =>
      `| ${c.name} | ${c.size} | ${c.plan} | ${c.threads} | ${c.predictedSeconds.toFixed(2)} | ${c.measuredSeconds?.toFixed(2) ?? '–'} | ${c.runs.map((r) => r.seconds?.toFixed(2) ?? 'x').join(' / ')} | ${pct(c.error)} |`,
  );
  const errors = report.cells.flatMap((c) => (c.error === null ? [] : [Math.abs(c.error)]));
  return [
    '# Time model accuracy (CPU)',
    '',
    `Ran ${String(report.ran['date'])} on ${String(report.ran['machine'])}. ${String(report.ran['note'] ?? '')}`,
    '',
    '`npx tsx bench/time-model.ts` — each cell is `distvae decode --json` (default thread ranks) run `--repeat` times, rounds interleaved over the cells; measured: the median of the decode `seconds`; predicted: src/memory/time-model.ts under the CPU calibration of src/memory/time-calibration.ts.',
    '',
    '| cell | size | plan | threads/rank | predicted s | measured s | runs s | error |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `${errors.filter((e) => e <= 0.25).length} of ${errors.length} cells within ±25 %; largest |error| ${(100 * Math.max(...errors)).toFixed(1)} %.`,
    '',
    `Calibration (src/memory/time-calibration.ts): ${report.calibration.measured}.`,
    '',
    '| term | seconds per unit |',
    '|---|---|',
    ...Object.entries(report.calibration)
      .filter(([k]) => k !== 'provider' && k !== 'measured')
      .map(([k, v]) => `| ${k} | ${Number(v).toPrecision(4)} |`),
    '',
  ].join('\n');
}

function parseFlags(argv: string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++)
    if (argv[i]!.startsWith('--')) flags[argv[i]!.slice(2)] = argv[i + 1]?.startsWith('--') ? '' : (argv[i + 1] ?? '');
  return flags;
}

// ---- calibration ----------------------------------------------------------------------------

/** The linear terms the fit weighs (the thread efficiency is searched on a grid around them). */
const LINEAR: (keyof TimeCalibration)[] = [
  'fixedSeconds',
  'secondsPerGmac',
  'secondsPerConvGbyte',
  'secondsPerSpilledGmac',
  'secondsPerUnpooledGbyte',
  'secondsPerGbyte',
  'secondsPerRun',
  'secondsPerStage',
  'secondsPerExchangedGbyte',
  'secondsPerLoadedGbyte',
];

/** Non-negative least squares (Lawson–Hanson) of A x ≈ b. */
function nnls(A: number[][], b: number[]): number[] {
  const n = A[0]!.length;
  const x = new Array<number>(n).fill(0);
  const passive = new Set<number>();
  const grad = () => {
    const r = b.map((bi, i) => bi - A[i]!.reduce((s, a, j) => s + a * x[j]!, 0));
    return Array.from({ length: n }, (_, j) => A.reduce((s, row, i) => s + row[j]! * r[i]!, 0));
  };
  const solve = (cols: number[]): number[] => {
    // Normal equations over the passive columns (small systems).
    const m = cols.length;
    const M = cols.map((p) => cols.map((q) => A.reduce((s, row) => s + row[p]! * row[q]!, 0)));
    const v = cols.map((p) => A.reduce((s, row, i) => s + row[p]! * b[i]!, 0));
    for (let i = 0; i < m; i++) {
      let pivot = i;
      for (let k = i + 1; k < m; k++) if (Math.abs(M[k]![i]!) > Math.abs(M[pivot]![i]!)) pivot = k;
      [M[i], M[pivot]] = [M[pivot]!, M[i]!];
      [v[i], v[pivot]] = [v[pivot]!, v[i]!];
      const d = M[i]![i]! || 1e-30;
      for (let k = i + 1; k < m; k++) {
        const f = M[k]![i]! / d;
        for (let j = i; j < m; j++) M[k]![j]! -= f * M[i]![j]!;
        v[k]! -= f * v[i]!;
      }
    }
    const out = new Array<number>(m).fill(0);
    for (let i = m - 1; i >= 0; i--) {
      let s = v[i]!;
      for (let j = i + 1; j < m; j++) s -= M[i]![j]! * out[j]!;
      out[i] = s / (M[i]![i]! || 1e-30);
    }
    return out;
  };
  for (let iter = 0; iter < 100; iter++) {
    const w = grad();
    let best = -1;
    for (let j = 0; j < n; j++) if (!passive.has(j) && w[j]! > 1e-12 && (best < 0 || w[j]! > w[best]!)) best = j;
    if (best < 0) break;
    passive.add(best);
    for (let inner = 0; inner < 100; inner++) {
      const cols = [...passive];
      const z = solve(cols);
      if (z.every((v) => v > 0)) {
        x.fill(0);
        cols.forEach((c, i) => (x[c] = z[i]!));
        break;
      }
      let alpha = Infinity;
      cols.forEach((c, i) => {
        if (z[i]! <= 0) alpha = Math.min(alpha, x[c]! / (x[c]! - z[i]!));
      });
      cols.forEach((c, i) => (x[c] = x[c]! + alpha * (z[i]! - x[c]!)));
      for (const c of cols) if (x[c]! <= 1e-15) passive.delete(c);
    }
  }
  return x;
}

/** Cache sizes the fit tries (operand bytes past which a convolution is memory-bound). */
const CACHE_GRID = [16, 24, 32, 48, 64, 96, 128].map((m) => m * 2 ** 20);

/**
 * The fit: `terms` are fitted (non-negative), the other linear terms keep their value in `base`
 * (eleven cells cannot tell every term apart: the default fits the fixed cost, the weights loaded,
 * the MACs, the convolutions' outputs, the memory-bound MACs and a shard rank's unpooled bytes,
 * and keeps the bytes other ops write, the runs, the steps and the exchange at `base`). The thread
 * efficiency (0.05 grid) and the cache size (CACHE_GRID) are searched: the pair whose fit has the
 * smallest largest |error| wins.
 */
function fit(cells: CellResult[], base: TimeCalibration, terms: readonly (keyof TimeCalibration)[]): TimeCalibration {
  const measured = cells.filter((c) => c.measuredSeconds);
  let best: { cal: TimeCalibration; worst: number } | null = null;
  for (const cacheBytes of CACHE_GRID) {
    const termsOfCell = new Map(
      measured.map((c) => [
        c.name,
        termsOf(
          CELLS.find((x) => x.name === c.name)!,
          cacheBytes,
        ),
      ]),
    );
    for (let eff = 0.3; eff <= 1.0001; eff += 0.05) {
      const probe = { ...base, threadEfficiency: eff, cacheBytes };
      const kept = { ...probe } as unknown as Record<string, number>;
      for (const k of terms) kept[k] = 0;
      // Each cell's row: the seconds each fitted term adds at factor 1, over the measured seconds
      // (a relative error, so short cells weigh as much as long ones); the kept terms are subtracted.
      const rows = measured.map((c) =>
        terms.map((k) => secondsOfTerms(termsOfCell.get(c.name)!, { ...zero(probe), [k]: 1 }) / c.measuredSeconds!),
      );
      const target = measured.map(
        (c) => 1 - secondsOfTerms(termsOfCell.get(c.name)!, kept as unknown as TimeCalibration) / c.measuredSeconds!,
      );
      const x = nnls(rows, target);
      const cal = { ...kept } as unknown as TimeCalibration;
      terms.forEach((k, i) => ((cal as unknown as Record<string, number>)[k] = x[i]!));
      const worst = Math.max(...measured.map((c) => Math.abs(secondsOfTerms(termsOfCell.get(c.name)!, cal) / c.measuredSeconds! - 1)));
      if (!best || worst < best.worst) best = { cal, worst };
    }
  }
  return best!.cal;
}

/** Each measured cell's error when the fit is redone without it (leave-one-out): how the model does on a decode it was not fitted to. */
function leaveOneOut(cells: CellResult[], base: TimeCalibration, terms: readonly (keyof TimeCalibration)[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of cells.filter((x) => x.measuredSeconds)) {
    const cal = fit(
      cells.filter((x) => x.name !== c.name),
      base,
      terms,
    );
    out.set(
      c.name,
      secondsOfTerms(
        termsOf(
          CELLS.find((x) => x.name === c.name)!,
          cal.cacheBytes,
        ),
        cal,
      ) /
        c.measuredSeconds! -
        1,
    );
  }
  return out;
}

/** A calibration with every linear term 0 (the thread efficiency kept). */
function zero(cal: TimeCalibration): TimeCalibration {
  const out = { ...cal } as unknown as Record<string, unknown>;
  for (const k of LINEAR) out[k] = 0;
  return out as unknown as TimeCalibration;
}

function calibrationSource(cal: TimeCalibration, from: string, notes: string): string {
  const template = readFileSync(join(ROOT, 'src', 'memory', 'time-calibration.ts'), 'utf8');
  const start = template.indexOf('// <generated>');
  const end = template.indexOf('// </generated>');
  const body = `// <generated> by \`npx tsx bench/time-model.ts calibrate --write\` from ${from}; do not edit by hand.\n/** The seconds per unit of each provider's time terms, fitted to its measured matrix. */\nexport const TIME_CALIBRATIONS: Readonly<Record<string, TimeCalibration>> = ${JSON.stringify({ cpu: { ...cal, measured: notes } }, null, 2)};\n`;
  return template.slice(0, start) + body + template.slice(end);
}

// ---- main -----------------------------------------------------------------------------------

const argv = process.argv.slice(2);
const mode = argv[0] === 'calibrate' || argv[0] === 'report' ? argv[0] : 'matrix';
const flags = parseFlags(mode === 'matrix' ? argv : argv.slice(1));
const outPath = flags['out'] ?? flags['from'] ?? join(ROOT, 'bench', 'results', 'time-model.json');
const machine = `${process.platform} ${process.arch}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${cpus()[0]?.model ?? 'cpu'} (${cpus().length} cores), Node ${process.version}`;
const commit = (): string => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
};

if (mode === 'calibrate' || mode === 'report') {
  const report = JSON.parse(readFileSync(outPath, 'utf8')) as {
    ran: Record<string, unknown>;
    calibration: TimeCalibration;
    cells: CellResult[];
  };
  const terms = (
    flags['terms'] || 'fixedSeconds,secondsPerLoadedGbyte,secondsPerGmac,secondsPerConvGbyte,secondsPerSpilledGmac,secondsPerUnpooledGbyte'
  ).split(',') as (keyof TimeCalibration)[];
  for (const t of terms) if (!LINEAR.includes(t)) throw new Error(`--terms: ${t} is not one of ${LINEAR.join(', ')}`);
  // Terms not fitted keep the committed value; --zero NAME,… sets them to 0 first (a prior dropped).
  const base = { ...TIME_CALIBRATIONS['cpu']! };
  for (const z of (flags['zero'] || '').split(',').filter(Boolean)) {
    if (!LINEAR.includes(z as keyof TimeCalibration)) throw new Error(`--zero: ${z} is not one of ${LINEAR.join(', ')}`);
    (base as unknown as Record<string, number>)[z] = 0;
  }
  const cal = mode === 'calibrate' ? fit(report.cells, base, terms) : TIME_CALIBRATIONS['cpu']!;
  const cells = report.cells.map((c) => withPrediction(c, cal));
  const loo = mode === 'calibrate' ? leaveOneOut(report.cells, base, terms) : new Map<string, number>();
  for (const c of cells)
    process.stderr.write(
      `${Math.abs(c.error ?? 0) > 0.25 ? '!' : ' '} ${c.name}: ${c.predictedSeconds.toFixed(2)} / ${c.measuredSeconds?.toFixed(2)} s ${pct(c.error)}${loo.has(c.name) ? `; left out of the fit ${pct(loo.get(c.name)!)}` : ''}\n`,
    );
  const errors = cells.flatMap((c) => (c.error === null ? [] : [Math.abs(c.error)]));
  const looErrors = [...loo.values()].map(Math.abs);
  const summary =
    `${errors.filter((e) => e <= 0.25).length} of ${errors.length} cells within ±25 %, largest |error| ${(100 * Math.max(...errors)).toFixed(1)} %` +
    (looErrors.length
      ? `; left out of the fit one at a time: ${looErrors.filter((e) => e <= 0.25).length} of ${looErrors.length} within ±25 %, largest ${(100 * Math.max(...looErrors)).toFixed(1)} %`
      : '');
  process.stdout.write(`${summary}\n`);
  if (mode === 'calibrate') {
    const notes = `fitted by \`npx tsx bench/time-model.ts ${argv.join(' ').replace(/ --write\b/, '')}\` (non-negative least squares on the relative error, thread efficiency on a 0.05 grid, cache size on ${CACHE_GRID.map((b) => b / 2 ** 20).join('/')} MiB) to the ${errors.length} cells of bench/results/time-model.json (${String(report.ran['date']).slice(0, 10)}, ${String(report.ran['machine'])}; ${summary}); the load during the matrix is in the report (uptime per run)`;
    process.stdout.write(JSON.stringify({ ...cal, measured: notes }, null, 2) + '\n');
    if (flags['write'] !== undefined) {
      writeFileSync(join(ROOT, 'src', 'memory', 'time-calibration.ts'), calibrationSource(cal, 'bench/results/time-model.json', notes));
      process.stderr.write('wrote src/memory/time-calibration.ts\n');
    }
  } else {
    const updated = { ...report, calibration: cal, cells };
    writeFileSync(outPath, JSON.stringify(updated, null, 2) + '\n');
    writeFileSync(outPath.replace(/\.json$/, '.md'), markdown(updated));
    process.stderr.write(`rewrote ${outPath} under the committed calibration\n`);
  }
} else {
  mkdirSync(TMP, { recursive: true });
  const which = flags['cells'] ?? 'all';
  const cells = which === 'all' ? CELLS : CELLS.filter((c) => which.split(',').includes(c.name));
  const repeat = Math.max(1, Number(flags['repeat'] || 3));
  const runs = new Map<string, Run[]>(cells.map((c) => [c.name, []]));
  const started = new Date().toISOString();
  const save = () => {
    const cal = TIME_CALIBRATIONS['cpu']!;
    const results = cells.map((c) =>
      withPrediction(
        {
          name: c.name,
          size: `${c.height}x${c.width}`,
          plan: describePlan(c.plan),
          threads: c.threads,
          runs: runs.get(c.name)!,
          measuredSeconds: median(runs.get(c.name)!.map((r) => r.seconds)),
        },
        cal,
      ),
    );
    const report = {
      schema: 1,
      benchmark: 'time-model',
      ran: {
        date: started,
        machine,
        commit: commit(),
        command: `npx tsx bench/time-model.ts ${argv.join(' ')}`.trim(),
        cli: CLI,
        note: 'Measured on a 2-core machine, alone (the helpers stopped; load average 0.2-1.6, uptime before and after each run is in the JSON).',
      },
      calibration: cal,
      cells: results,
    };
    writeFileSync(outPath, JSON.stringify(report, null, 2) + '\n');
    writeFileSync(outPath.replace(/\.json$/, '.md'), markdown(report));
  };
  for (let round = 0; round < repeat; round++) {
    for (const c of cells) {
      process.stderr.write(`round ${round + 1}: ${c.name} ...`);
      const r = await runOnce(c);
      runs.get(c.name)!.push(r);
      process.stderr.write(` ${r.seconds?.toFixed(2) ?? r.failed} s (${r.uptimeAfter.replace(/.*load average: /, 'load ')})\n`);
      save();
    }
  }
}
