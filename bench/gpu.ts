// Decoding on a GPU provider (issue 25's benchmark, issue 26's measurements): the SD-architecture
// decoder (synthetic weights) and the trained TAEF2, whole / tiles / row-sharded, fp32 and fp16,
// on 1, 2 and 4 ranks, each cell a `distvae decode` child process on the provider named — so a
// cell measures what a user runs, the same way from this checkout (tsx) and from the portable
// bundle on a machine without Node (`--cli DIR/bin/distvae`, bench/gpu-machine/).
//
// Per cell: seconds (median of --repeat warm decodes: one VAE load, --warmup decodes first, which
// open the sessions and compile the shaders), the host memory the decode report predicts and
// measures (coordinator + rank processes' peak RSS), the device-memory figures the report carries
// where this build predicts them, the device memory measured where the platform lets us (an
// NVIDIA GPU through nvidia-smi, sampled; on lavapipe device buffers are host memory, in the RSS),
// and agreement with the CPU decode of the same plan (row sharding equals the whole decode).
// Every cell runs under its own time limit (the child's process group is killed there) and the
// report is rewritten as each cell ends, so a run cut short keeps what it measured.
//
// Options that land in other branches pass through by name: fp16 cells add `--precision fp16`,
// `--device` goes to every GPU cell; a build that refuses the option records the cell as "not
// available on this build" with the CLI's own message, instead of failing the run.
//
//   npx tsx bench/gpu.ts --preset lavapipe                      # small SD-layout config + TAEF2, 512²
//   npx tsx bench/gpu.ts --preset gpu [--device 0] [--sizes 1024,2048]   # the SD decoder, for a real GPU
//   options: --provider webgpu --models sd-small,taef2 --sizes 512 --strategies whole,tile,shard
//            --precisions fp32,fp16 --ranks 1,2,4 --repeat 3 --warmup 1 --cell-timeout S
//            --out bench/results/gpu-NAME --cli PATH --commit SHA --no-reference --models-dir DIR

import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { agreement } from '../src/bench/agreement.js';
import { describeRun, type RunDescription } from '../src/bench/machine.js';
import { readNpy, writeNpy } from '../src/io/npy.js';
import type { SampleRange } from '../src/io/sample-range.js';
import { seededTensor, type Tensor } from '../src/tensor.js';

/** A decoder the benchmark runs: how the CLI names it, its latent channels and value range. */
export interface ModelSpec {
  name: string;
  /** CLI arguments naming the VAE (a config file for synthetic weights, or a weights file). */
  args: (workDir: string) => string[];
  latentChannels: number;
  range: SampleRange;
  /** Absent when the model cannot run here (weights missing): the reason. */
  missing?: string;
}

/** SD 1.x / 2.x's decoder architecture (diffusers' AutoencoderKL config of stable-diffusion-v1-5). */
export const SD_CONFIG = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [128, 256, 512, 512],
  layers_per_block: 2,
  norm_num_groups: 32,
  latent_channels: 4,
  sample_size: 512,
  down_block_types: Array(4).fill('DownEncoderBlock2D'),
  up_block_types: Array(4).fill('UpDecoderBlock2D'),
};

/** The same layout (four up blocks of two resnets, mid attention, GroupNorm) at widths a software GPU decodes in seconds. */
export const SD_SMALL_CONFIG = { ...SD_CONFIG, block_out_channels: [8, 16, 16, 16], norm_num_groups: 4 };

/** The synthetic models by name. */
export const SYNTHETIC_CONFIGS: Readonly<Record<string, object>> = { sd: SD_CONFIG, 'sd-small': SD_SMALL_CONFIG };

function syntheticModel(name: string, config: object): ModelSpec {
  return {
    name,
    args: (dir) => {
      const path = join(dir, `${name}.json`);
      if (!existsSync(path)) writeFileSync(path, JSON.stringify(config));
      return ['--synthetic', '--config', path, '--seed', '0'];
    },
    latentChannels: 4,
    range: 'signed',
  };
}

function models(modelsDir: string): Record<string, ModelSpec> {
  const taef2 = join(modelsDir, 'taef2', 'taef2_decoder.pth');
  return {
    sd: syntheticModel('sd', SYNTHETIC_CONFIGS['sd']!),
    'sd-small': syntheticModel('sd-small', SYNTHETIC_CONFIGS['sd-small']!),
    taef2: {
      name: 'taef2',
      args: () => ['--vae', taef2, '--family', 'tae'],
      latentChannels: 32,
      range: 'unit',
      ...(existsSync(taef2) ? {} : { missing: `${taef2} is absent (the trained TAEF2 lives in ../shared/models)` }),
    },
  };
}

export type Strategy = 'whole' | 'tile' | 'shard';
export type Precision = 'fp32' | 'fp16';

export interface CellSpec {
  model: string;
  /** Output side in pixels (square). */
  size: number;
  strategy: Strategy;
  ranks: number;
  precision: Precision;
  provider: string;
}

/** The blended-tile plan of a size: 2×2 tiles, overlap 1/8 of the side (output pixels, multiples of 8). */
export function tilePlan(size: number): { window: number; overlap: number } {
  const overlap = Math.max(8, Math.round(size / 8 / 8) * 8);
  return { window: size / 2 + overlap, overlap };
}

/** The CLI's plan arguments for a cell. */
export function planArgs(cell: Pick<CellSpec, 'size' | 'strategy' | 'ranks'>): string[] {
  if (cell.strategy === 'whole') return ['--full'];
  const ranks = ['--ranks', String(cell.ranks)];
  if (cell.strategy === 'shard') return ['--strategy', 'shard', ...ranks];
  const { window, overlap } = tilePlan(cell.size);
  return ['--strategy', 'tile', '--window', `${window}x${window}`, '--overlap', `${overlap}x${overlap}`, ...ranks];
}

/** The cells of a run: whole on one rank; tiles and shard on each rank count; every precision. */
export function cellMatrix(o: {
  models: string[];
  sizes: number[];
  strategies: Strategy[];
  ranks: number[];
  precisions: Precision[];
  provider: string;
}): CellSpec[] {
  const cells: CellSpec[] = [];
  for (const model of o.models)
    for (const size of o.sizes)
      for (const strategy of o.strategies)
        for (const ranks of strategy === 'whole' ? [1] : o.ranks)
          for (const precision of o.precisions) cells.push({ model, size, strategy, ranks, precision, provider: o.provider });
  return cells;
}

export const cellLabel = (c: CellSpec): string =>
  `${c.model} ${c.size}² ${c.strategy}${c.strategy === 'whole' ? '' : ` ×${c.ranks}`} ${c.precision} on ${c.provider}`;

/** A child process's end: exit code (null when killed), output, wall seconds, and whether the limit killed it. */
interface ChildEnd {
  code: number | null;
  stdout: string;
  stderr: string;
  wallSeconds: number;
  timedOut: boolean;
}

/** Runs `argv` in its own process group; at `limitS` the whole group (CLI and rank processes) is killed. */
export function runLimited(argv: string[], limitS: number, env: NodeJS.ProcessEnv = process.env): Promise<ChildEnd> {
  return new Promise((done) => {
    const t0 = performance.now();
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-20000)));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, limitS * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr, wallSeconds: (performance.now() - t0) / 1000, timedOut });
    });
  });
}

/** Samples the GPU's used memory (nvidia-smi) while a cell runs; null where there is no nvidia-smi. */
class DeviceMemorySampler {
  private peakMiB = 0;
  private baselineMiB: number | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly device: string) {}

  private read(): number | null {
    try {
      const out = execFileSync('nvidia-smi', ['--query-gpu=memory.used', '--format=csv,noheader,nounits', '-i', this.device], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: 5000,
      });
      const v = Number(out.trim().split('\n')[0]);
      return Number.isFinite(v) ? v : null;
    } catch {
      return null;
    }
  }

  start(): boolean {
    this.baselineMiB = this.read();
    if (this.baselineMiB === null) return false;
    this.peakMiB = this.baselineMiB;
    this.timer = setInterval(() => {
      const v = this.read();
      if (v !== null) this.peakMiB = Math.max(this.peakMiB, v);
    }, 250);
    return true;
  }

  /** Peak used minus the used memory before the cell, in bytes. */
  stop(): number | null {
    if (this.timer) clearInterval(this.timer);
    return this.baselineMiB === null ? null : (this.peakMiB - this.baselineMiB) * 2 ** 20;
  }
}

/** Every numeric field of a report whose key names the device (what a build with device-memory prediction adds). */
export function deviceFields(value: unknown, path = ''): Record<string, number> {
  const found: Record<string, number> = {};
  if (value === null || typeof value !== 'object') return found;
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const here = path ? `${path}.${key}` : key;
    if (typeof v === 'number' && /device/i.test(here)) found[here] = v;
    else Object.assign(found, deviceFields(v, here));
  }
  return found;
}

const median = (xs: number[]): number | null => (xs.length === 0 ? null : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!);

/** What the CLI said when it refused an option this build does not have (fp16, a device list): null when it did not. */
export function refusedOption(end: { code: number | null; stderr: string }, option: string): string | null {
  if (end.code !== 2) return null;
  const line = end.stderr.split('\n').find((l) => l.includes(option));
  return line ? line.trim() : null;
}

export interface CellResult extends CellSpec {
  label: string;
  status: 'ok' | 'failed' | 'timed-out' | 'unavailable' | 'skipped';
  /** Why a cell did not measure (the CLI's message, the limit, the missing model). */
  note?: string;
  command: string;
  limitSeconds: number;
  wallSeconds: number;
  /** Median over the timed decodes (the warm-up decodes excluded), and each decode's seconds. */
  seconds: number | null;
  decodeSeconds: number[];
  warmupSeconds: number[];
  hostPredictedPeakBytes: number | null;
  hostMeasuredPeakBytes: number | null;
  /** The device-memory fields of the decode report (this build's prediction), if any. */
  deviceReport: Record<string, number>;
  /** Peak GPU memory used during the cell less before it (nvidia-smi), or null with `deviceMeasuredNote`. */
  deviceMeasuredBytes: number | null;
  deviceMeasuredNote?: string;
  tiles: number | null;
  /** Against the CPU decode of the same plan (whole for row sharding). */
  agreement: { maxAbs: number; relative: number; psnr: number | null; reference: string } | null;
  agreementNote?: string;
}

interface Options {
  cli: string[];
  provider: string;
  device: string | null;
  repeat: number;
  warmup: number;
  limitS: number;
  referenceLimitS: number;
  reference: boolean;
  workDir: string;
  models: Record<string, ModelSpec>;
}

/** Latent files of a (model, size): warm-up + timed copies of one seeded latent, in a folder the CLI decodes in order. */
function latentDir(o: Options, model: ModelSpec, size: number): string {
  const dir = join(o.workDir, `z-${model.name}-${size}`);
  const count = o.warmup + o.repeat;
  if (existsSync(dir) && readdirSync(dir).length === count) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const z = seededTensor([1, model.latentChannels, size / 8, size / 8], 1);
  writeNpy(join(dir, '00.npy'), z);
  for (let i = 1; i < count; i++) copyFileSync(join(dir, '00.npy'), join(dir, `${String(i).padStart(2, '0')}.npy`));
  return dir;
}

/** CPU references, one per (model, size, plan), decoded once and kept for every cell of that plan. */
const references = new Map<string, { path: string | null; note?: string }>();

async function reference(o: Options, model: ModelSpec, cell: CellSpec): Promise<{ path: string | null; note?: string }> {
  const plan: Pick<CellSpec, 'size' | 'strategy' | 'ranks'> =
    cell.strategy === 'tile' ? { size: cell.size, strategy: 'tile', ranks: 1 } : { size: cell.size, strategy: 'whole', ranks: 1 };
  const key = `${model.name}-${cell.size}-${plan.strategy}`;
  const known = references.get(key);
  if (known) return known;
  const path = join(o.workDir, `ref-${key}.npy`);
  const z = join(latentDir(o, model, cell.size), '00.npy');
  const argv = [...o.cli, 'decode', ...model.args(o.workDir), '--latents', z, '--out', path, '--provider', 'cpu', ...planArgs(plan)];
  const end = await runLimited(argv, o.referenceLimitS);
  const result =
    end.code === 0
      ? { path }
      : {
          path: null,
          note: end.timedOut ? `CPU reference timed out at ${o.referenceLimitS} s` : `CPU reference failed: ${lastLine(end.stderr)}`,
        };
  references.set(key, result);
  return result;
}

const lastLine = (s: string): string =>
  s
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(-1)[0] ?? '';

/** Runs one cell: decodes the latent folder in one CLI process and reads its per-file reports. */
export async function runCell(o: Options, cell: CellSpec): Promise<CellResult> {
  const model = o.models[cell.model]!;
  const base: CellResult = {
    ...cell,
    label: cellLabel(cell),
    status: 'skipped',
    command: '',
    limitSeconds: o.limitS,
    wallSeconds: 0,
    seconds: null,
    decodeSeconds: [],
    warmupSeconds: [],
    hostPredictedPeakBytes: null,
    hostMeasuredPeakBytes: null,
    deviceReport: {},
    deviceMeasuredBytes: null,
    tiles: null,
    agreement: null,
  };
  if (model.missing) return { ...base, note: model.missing };
  const outDir = mkdtempSync(join(o.workDir, 'out-'));
  const argv = [
    ...o.cli,
    'decode',
    ...model.args(o.workDir),
    '--latents',
    latentDir(o, model, cell.size),
    '--out-dir',
    outDir,
    '--out-format',
    'npy',
    '--provider',
    cell.provider,
    ...(o.device !== null && cell.provider !== 'cpu' ? ['--device', o.device] : []),
    ...(cell.precision === 'fp16' ? ['--precision', 'fp16'] : []),
    ...planArgs(cell),
    '--json',
  ];
  const command = argv.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ');
  const sampler = new DeviceMemorySampler(o.device ?? '0');
  const sampling = cell.provider !== 'cpu' && sampler.start();
  const end = await runLimited(argv, o.limitS);
  const deviceMeasured = sampling ? sampler.stop() : null;
  const r: CellResult = { ...base, command, wallSeconds: end.wallSeconds, deviceMeasuredBytes: deviceMeasured };
  if (!sampling)
    r.deviceMeasuredNote =
      cell.provider === 'webgpu'
        ? 'no nvidia-smi here; on a software Vulkan device (lavapipe) device buffers are host memory, counted in the RSS'
        : 'no nvidia-smi here';
  try {
    if (end.timedOut) return { ...r, status: 'timed-out', note: `killed at the cell's limit of ${o.limitS} s` };
    const unavailable =
      (cell.precision === 'fp16' ? refusedOption(end, 'precision') : null) ?? (o.device ? refusedOption(end, 'device') : null);
    if (unavailable) return { ...r, status: 'unavailable', note: `not available on this build: ${unavailable}` };
    if (end.code !== 0) return { ...r, status: 'failed', note: `exit ${end.code}: ${lastLine(end.stderr)}` };
    const reports = end.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, any>);
    const seconds = reports.map((x) => Number(x['seconds']));
    const last = reports.at(-1) ?? {};
    r.warmupSeconds = seconds.slice(0, o.warmup);
    r.decodeSeconds = seconds.slice(o.warmup);
    r.seconds = median(r.decodeSeconds);
    r.tiles = last['tiles'] ?? null;
    r.hostPredictedPeakBytes = last['memory']?.['predictedPeakBytes'] ?? null;
    r.hostMeasuredPeakBytes = Math.max(0, ...reports.map((x) => Number(x['memory']?.['measuredPeakBytes'] ?? 0))) || null;
    r.deviceReport = deviceFields(last['memory'] ?? {}, 'memory');
    r.status = 'ok';
    if (o.reference) {
      const ref = await reference(o, model, cell);
      const files = readdirSync(outDir).sort();
      if (ref.path === null) r.agreementNote = ref.note;
      else if (files.length === 0) r.agreementNote = 'the decode wrote no output';
      else {
        const got: Tensor = readNpy(join(outDir, files.at(-1)!));
        const want: Tensor = readNpy(ref.path);
        const a = agreement(got, want, model.range);
        const largest = want.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
        r.agreement = { maxAbs: a.maxAbs, relative: largest > 0 ? a.maxAbs / largest : a.maxAbs, psnr: a.psnr, reference: ref.path };
      }
    }
    return r;
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

const mib = (b: number | null): string => (b === null ? '—' : (b / 2 ** 20).toFixed(0));

/** The Markdown table of a run. */
export function markdown(report: GpuReport): string {
  const rows = report.cells.map((c) =>
    [
      c.label,
      c.status,
      c.seconds === null ? '—' : c.seconds.toFixed(2),
      c.tiles ?? '—',
      mib(c.hostPredictedPeakBytes),
      mib(c.hostMeasuredPeakBytes),
      Object.entries(c.deviceReport)
        .map(([k, v]) => `${k.replace(/^memory\./, '')} ${mib(v)}`)
        .join('; ') || '—',
      mib(c.deviceMeasuredBytes),
      c.agreement ? `${c.agreement.maxAbs.toExponential(1)} (${c.agreement.relative.toExponential(1)} rel)` : '—',
      (c.note ?? c.agreementNote ?? '').replace(/\|/g, '\\|').slice(0, 200),
    ].join(' | '),
  );
  return [
    `# bench/gpu.ts — ${report.name}`,
    '',
    `Machine: ${report.ran.machine}, ${report.ran.cpu} (${report.ran.cores} cores); node ${report.ran.node}, onnxruntime ${report.ran.onnxruntime}; commit ${report.ran.commit ?? 'unknown'}.`,
    `Device: ${report.device}.`,
    `Command: \`${report.command}\``,
    `uptime before: ${report.uptimeBefore}`,
    `uptime after: ${report.uptimeAfter ?? '(running)'}`,
    '',
    `Seconds: median of ${report.repeat} warm decode(s) after ${report.warmup} warm-up decode(s), one VAE load, in one \`distvae decode\` process. Memory in MiB: host = coordinator + rank processes' peak RSS (predicted by the memory model / measured); device = the report's device fields / nvidia-smi's used memory over the cell less before it. Agreement: max abs against the CPU decode of the same plan (row sharding against the whole decode), and relative to the reference's largest value.`,
    '',
    '| cell | status | s | tiles | host pred | host meas | device pred | device meas | vs CPU | note |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r} |`),
    '',
  ].join('\n');
}

export interface GpuReport {
  /** The docs site's bench report schema (docs/lib/bench-reports.ts). */
  schema: 1;
  name: string;
  command: string;
  ran: RunDescription;
  device: string;
  uptimeBefore: string;
  uptimeAfter: string | null;
  repeat: number;
  warmup: number;
  cells: CellResult[];
}

/** `uptime`'s line (the load the numbers were taken under), else the load averages. */
export function uptime(): string {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(', ')}`;
  }
}

/** The GPU the run is on, as nvidia-smi names it, else what the provider is. */
export function deviceDescription(provider: string, device: string | null): string {
  try {
    const q = execFileSync('nvidia-smi', ['--query-gpu=name,memory.total,driver_version', '--format=csv,noheader', '-i', device ?? '0'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    });
    return `${provider} on ${q.trim()}`;
  } catch {
    return provider === 'webgpu'
      ? 'webgpu on the Vulkan adapter Dawn picks (no nvidia-smi: a software device such as lavapipe here)'
      : provider;
  }
}

const PRESETS: Record<string, Partial<Record<string, string>>> = {
  // A software Vulkan device: the small SD layout and the trained TAEF2 at 512², one fp32 and one fp16 cell per strategy.
  lavapipe: { models: 'sd-small,taef2', sizes: '512', ranks: '2', repeat: '1', 'cell-timeout': '600' },
  // A real GPU: the SD decoder at the sizes users decode.
  gpu: { models: 'sd', sizes: '512,1024,2048', ranks: '1,2,4', repeat: '3', 'cell-timeout': '300' },
  // The end-to-end check of the GPU-machine script: seconds per cell on lavapipe.
  tiny: { models: 'sd-small', sizes: '64', ranks: '2', repeat: '1', 'cell-timeout': '300' },
};

async function main(): Promise<void> {
  const here = fileURLToPath(import.meta.url);
  const root = dirname(dirname(here));
  const { values: v } = parseArgs({
    options: {
      preset: { type: 'string', default: 'lavapipe' },
      provider: { type: 'string', default: 'webgpu' },
      device: { type: 'string' },
      models: { type: 'string' },
      sizes: { type: 'string' },
      strategies: { type: 'string', default: 'whole,tile,shard' },
      precisions: { type: 'string', default: 'fp32,fp16' },
      ranks: { type: 'string' },
      repeat: { type: 'string' },
      warmup: { type: 'string', default: '1' },
      'cell-timeout': { type: 'string' },
      'reference-timeout': { type: 'string' },
      'no-reference': { type: 'boolean', default: false },
      out: { type: 'string' },
      cli: { type: 'string' },
      commit: { type: 'string' },
      'models-dir': { type: 'string' },
      'work-dir': { type: 'string' },
      'print-config': { type: 'string' },
    },
  });
  // The config.json of a synthetic model, for the PyTorch arm's weights (bench/gpu-machine/run.sh).
  if (v['print-config']) {
    const config = SYNTHETIC_CONFIGS[v['print-config']];
    if (!config) throw new Error(`--print-config ${v['print-config']}: one of ${Object.keys(SYNTHETIC_CONFIGS).join(', ')}`);
    console.log(JSON.stringify(config));
    return;
  }
  const preset = PRESETS[v.preset!];
  if (!preset) throw new Error(`--preset ${v.preset}: one of ${Object.keys(PRESETS).join(', ')}`);
  const pick = (k: string): string => (v as unknown as Record<string, string | undefined>)[k] ?? preset[k]!;
  const list = (k: string): string[] => pick(k).split(',').filter(Boolean);
  const workDir = v['work-dir'] ? resolve(v['work-dir']) : mkdtempSync(join(tmpdir(), 'distvae-gpu-bench-'));
  mkdirSync(workDir, { recursive: true });
  const known = models(v['models-dir'] ? resolve(v['models-dir']) : join(root, '..', 'shared', 'models'));
  for (const m of list('models')) if (!known[m]) throw new Error(`--models ${m}: one of ${Object.keys(known).join(', ')}`);
  for (const s of list('sizes')) if (Number(s) % 64 !== 0) throw new Error(`--sizes ${s}: a multiple of 64 px`);
  const limitS = Number(pick('cell-timeout'));
  const o: Options = {
    cli: v.cli ? [resolve(v.cli)] : [process.execPath, '--import', 'tsx', join(root, 'src', 'cli', 'main.ts')],
    provider: v.provider!,
    device: v.device ?? null,
    repeat: Number(pick('repeat')),
    warmup: Number(v.warmup),
    limitS,
    referenceLimitS: Number(v['reference-timeout'] ?? limitS),
    reference: !v['no-reference'],
    workDir,
    models: known,
  };
  const name = `gpu-${v.preset}`;
  const out = resolve(v.out ?? join(root, 'bench', 'results', name));
  mkdirSync(dirname(out), { recursive: true });
  const ran = describeRun(process.argv.slice(2), null, root);
  if (v.commit) ran.commit = v.commit;
  const report: GpuReport = {
    schema: 1,
    name,
    command: `bench/gpu.ts ${process.argv.slice(2).join(' ')}`,
    ran,
    device: deviceDescription(o.provider, o.device),
    uptimeBefore: uptime(),
    uptimeAfter: null,
    repeat: o.repeat,
    warmup: o.warmup,
    cells: [],
  };
  const write = () => {
    writeFileSync(`${out}.json`, JSON.stringify(report, null, 2) + '\n');
    writeFileSync(`${out}.md`, markdown(report));
  };
  const cells = cellMatrix({
    models: list('models'),
    sizes: list('sizes').map(Number),
    strategies: list('strategies') as Strategy[],
    ranks: list('ranks').map(Number),
    precisions: list('precisions') as Precision[],
    provider: o.provider,
  });
  console.log(`${cells.length} cell(s), ${limitS} s each at most; results in ${out}.{json,md}`);
  for (const cell of cells) {
    const r = await runCell(o, cell);
    report.cells.push(r);
    report.uptimeAfter = uptime();
    write();
    console.log(
      `${r.label}: ${r.status}${r.seconds !== null ? ` ${r.seconds.toFixed(2)} s` : ''}${r.agreement ? `, max abs ${r.agreement.maxAbs.toExponential(1)} vs CPU` : ''}${r.note ? ` — ${r.note}` : ''}`,
    );
  }
  if (!v['work-dir']) rmSync(workDir, { recursive: true, force: true });
}

// Run as a script (gpu.ts under tsx, gpu.mjs compiled for the GPU machine), not when gpu-arms.ts imports it.
if (/[/\\]gpu\.(ts|mjs)$/.test(process.argv[1] ?? '')) await main();
