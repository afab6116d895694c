// Memory side by side with diffusers (issue 14): the SD 1.x decoder (published architecture,
// distvae's seeded synthetic decoder weights in a diffusers folder, the same latent for both),
// each case in a fresh process so none inherits another's memory:
// - fixed: load and a first 1×4×8×8 decode (the decoder's fixed cost);
// - whole: one decode of the whole image (512², 1024²);
// - tiled: diffusers' tiled decode with the same plan (768² with window 256 / overlap 64, 2048²
//   with SD's default window 512 / overlap 128);
// - shard: row-sharded decode on 1, 2 and 4 process ranks (512², 1024², 2048²), per-rank peaks.
// Peak RSS is the process's VmHWM (every byte onnxruntime and torch allocate counts); diffusers
// runs through ../shared/tools/difref under /usr/bin/time -f %M and its columns are left out
// when difref is absent. Memory is load-independent; timings are not: each cell records the
// load average it ran under, and `--tables` / `--sizes` / `--ranks` rerun any part on a quiet
// machine.
//
//   npx tsx bench/memory.ts [--tables fixed,whole,tiled,shard] [--sizes 512,1024,2048] [--ranks 1,2,4]
//                           [--threads 2] [--vae DIR] [--no-diffusers] [--diffusers-timed-runs N]
//                           [--out bench/results/memory]
//
// diffusers' seconds are the median of N timed decodes after its first (0 by default: memory
// only, since each run is a whole decode); distvae's are its single decode, first run included.
//
// The measuring primitives (measureDistvae, measureDiffusers, prepareSdFolder) are exported for
// other benchmarks (e.g. an accuracy mode comparing the outputs they write).

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = fileURLToPath(import.meta.url);
const root = dirname(dirname(here));
const DIFREF = join(root, '..', 'shared', 'tools', 'difref');
const PYTHON = '/usr/bin/python3';
const SD_CONFIG_NOTE = 'SD 1.x decoder (block_out_channels 128/256/512/512, 2 layers per block): diffusers AutoencoderKL defaults';

/** One decode configuration, run the same way by both implementations. */
export interface MemoryCase {
  table: 'fixed' | 'whole' | 'tiled' | 'shard';
  /** Output side in pixels (square). */
  size: number;
  /** Tile window and overlap in pixels (tiled only). */
  window?: number;
  overlap?: number;
  /** Process ranks (shard only). */
  ranks?: number;
  /** Intra-op threads per process (shard: split over the ranks). */
  threads: number;
}

export interface Measured {
  ok: boolean;
  error?: string;
  /** The process's peak RSS (for shard: the coordinator's). */
  peakRssBytes: number | null;
  /** Per-rank peak RSS (shard only), rank order. */
  perRankPeakRssBytes?: (number | null)[];
  /** Wall seconds of the decode call (load excluded). */
  seconds: number | null;
  /** User + system CPU seconds of the process (shard: the coordinator only). */
  cpuSeconds: number | null;
  /** Load average when the case started (timings under load > cores are not comparable). */
  loadAverage: number;
  collectives?: unknown;
  predicted?: unknown;
  /** Max |Δ| of the output against distvae's whole decode of the same size (when both ran here). */
  maxAbsVsWhole?: number;
}

export const caseName = (c: MemoryCase): string =>
  `${c.table} ${c.size}²` + (c.window ? ` w${c.window}/o${c.overlap}` : '') + (c.ranks ? ` ×${c.ranks}` : '');

/** A seeded N(0,1) latent for an output side, written once as .npy (both implementations read it). */
export async function latentFile(dir: string, size: number): Promise<string> {
  const side = size === 64 ? 8 : size / 8;
  const path = join(dir, `z-${side}.npy`);
  if (!existsSync(path)) {
    const { seededTensor } = await import('../src/tensor.js');
    const { writeNpy } = await import('../src/io/npy.js');
    writeNpy(path, seededTensor([1, 4, side, side], 1));
  }
  return path;
}

/**
 * A diffusers folder with distvae's seeded synthetic SD 1.x decoder weights: through difref
 * (diffusers' own full AutoencoderKL, decoder replaced) when present, else decoder-only.
 */
export async function prepareSdFolder(dir: string, withDiffusers: boolean): Promise<string> {
  const out = join(dir, 'sd-vae');
  if (existsSync(join(out, 'diffusion_pytorch_model.safetensors'))) return out;
  if (withDiffusers) {
    execFileSync(PYTHON, [join(DIFREF, 'make_vae.py'), 'kl', join(dir, 'sd-vae-base'), '--seed', '0'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(root, 'scripts', 'synthetic-vae-folder.ts'),
        '--from',
        join(dir, 'sd-vae-base'),
        '--out',
        out,
        '--seed',
        '0',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'], cwd: root },
    );
    return out;
  }
  const { resolveFamily, resolveFamilyConfig, runtimeOf } = await import('../src/families/registry.js');
  const { syntheticWeights } = await import('../src/weights/synthetic.js');
  const { writeSafetensors } = await import('../src/weights/safetensors.js');
  const raw = {
    _class_name: 'AutoencoderKL',
    block_out_channels: [128, 256, 512, 512],
    layers_per_block: 2,
    latent_channels: 4,
    sample_size: 512,
  };
  const family = resolveFamily(undefined, raw);
  const weights = syntheticWeights(runtimeOf(family).decoderParams(resolveFamilyConfig(family, raw)), 0);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'config.json'), JSON.stringify(raw, null, 2));
  writeSafetensors(join(out, 'diffusion_pytorch_model.safetensors'), weights);
  return out;
}

function vmHwmBytes(): number {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : process.resourceUsage().maxRSS * 1024;
}

/** In the child: one case of distvae, from process start. Writes the decoded sample to `sample` when given. */
async function runDistvaeCase(c: MemoryCase, vaeDir: string, latentPath: string, sample: string | undefined): Promise<Measured> {
  const { loadVae } = await import('../src/decode/vae.js');
  const { readNpy } = await import('../src/io/npy.js');
  const load = loadavg()[0]!;
  const ranks = c.table === 'shard' ? (c.ranks ?? 1) : 1;
  const threads = Math.max(1, Math.floor(c.threads / ranks));
  const vae = await loadVae(vaeDir, { threads });
  const latents = readNpy(latentPath);
  let group: { start(): Promise<void>; close(): Promise<void> } | null = null;
  type Stats = { ranks: { peakRssBytes?: number }[]; collectives?: unknown; predicted?: unknown };
  const box: { stats: Stats | null } = { stats: null };
  const { setTiling } = await import('../src/plan/planner.js');
  if (c.table === 'tiled')
    setTiling(vae, { window: { height: c.window!, width: c.window! }, overlap: { height: c.overlap!, width: c.overlap! } });
  else setTiling(vae, 'off');
  if (c.table === 'shard') {
    const { localGroup } = await import('../src/ranks/local/index.js');
    const { shardedDecodeFor } = await import('../src/strategies/shard/sharded-decode.js');
    const g = localGroup({ ranks, isolation: 'process', threadsPerRank: threads });
    group = g;
    await g.start();
    vae.tiledDecode = shardedDecodeFor(vae, g, { onStats: (s) => (box.stats = s as unknown as Stats) });
  }
  try {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const out = await vae.decode(latents);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (sample) writeFileSync(sample, new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.byteLength));
    const s = box.stats;
    return {
      ok: true,
      peakRssBytes: vmHwmBytes(),
      ...(s ? { perRankPeakRssBytes: s.ranks.map((r) => r.peakRssBytes ?? null), collectives: s.collectives, predicted: s.predicted } : {}),
      seconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      loadAverage: load,
    };
  } finally {
    await group?.close();
    await vae.dispose();
  }
}

/** Runs one distvae case in a fresh process of this script and returns what it measured. */
export function measureDistvae(c: MemoryCase, vaeDir: string, latentPath: string, sample?: string): Measured {
  const child = spawnSync(process.execPath, ['--import', 'tsx', here, '--child', JSON.stringify({ c, vaeDir, latentPath, sample })], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 24,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const line = child.stdout.trim().split('\n').pop() ?? '';
  if (child.status === 0 && line.startsWith('{')) return JSON.parse(line) as Measured;
  const error = (
    child.stderr
      .trim()
      .split('\n')
      .find((l) => /Error|error/.test(l)) ?? `exit ${child.status ?? child.signal}`
  ).slice(0, 300);
  return { ok: false, error, peakRssBytes: null, seconds: null, cpuSeconds: null, loadAverage: loadavg()[0]! };
}

/** Whether diffusers can be run here (difref present and set up). */
export function diffusersAvailable(): boolean {
  return existsSync(join(DIFREF, 'ref_decode.py')) && existsSync('/usr/bin/time') && existsSync(PYTHON);
}

/** Runs diffusers' decode of one case under /usr/bin/time (shard cases have no diffusers counterpart). */
export function measureDiffusers(c: MemoryCase, vaeDir: string, latentPath: string, out: string, timedRuns = 0): Measured {
  const load = loadavg()[0]!;
  // Its first decode writes `out`; timed runs (their median) follow it, so they are warm.
  const args = [
    join(DIFREF, 'ref_decode.py'),
    vaeDir,
    latentPath,
    out,
    '--threads',
    String(c.threads),
    ...(timedRuns > 0 ? ['--time', String(timedRuns), '--warmup', '1'] : []),
  ];
  if (c.table === 'tiled')
    args.push('--tiled', '--tile-sample', String(c.window), String(c.window), '--overlap-factor', String(c.overlap! / c.window!));
  const child = spawnSync('/usr/bin/time', ['-f', 'maxrss_kib=%M cpu_s=%U+%S', PYTHON, ...args], { encoding: 'utf8', maxBuffer: 1 << 24 });
  const rss = /maxrss_kib=(\d+) cpu_s=([\d.]+)\+([\d.]+)/.exec(child.stderr);
  if (child.status !== 0 || !rss) {
    return {
      ok: false,
      error: (child.stderr.trim().split('\n').slice(-2).join(' ') || `exit ${child.status}`).slice(0, 300),
      peakRssBytes: rss ? Number(rss[1]) * 1024 : null,
      seconds: null,
      cpuSeconds: null,
      loadAverage: load,
    };
  }
  const summary = child.stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  let seconds: number | null = null;
  if (summary) {
    seconds = (JSON.parse(summary) as { time_median_s?: number }).time_median_s ?? null;
  }
  return { ok: true, peakRssBytes: Number(rss[1]) * 1024, seconds, cpuSeconds: Number(rss[2]) + Number(rss[3]), loadAverage: load };
}

/** The cases of the issue's table, filtered by table, size and rank count. */
export function memoryCases(tables: readonly string[], sizes: readonly number[], ranks: readonly number[], threads: number): MemoryCase[] {
  const cases: MemoryCase[] = [];
  const want = (t: string) => tables.includes(t);
  if (want('fixed')) cases.push({ table: 'fixed', size: 64, threads });
  for (const size of [512, 1024]) if (want('whole') && sizes.includes(size)) cases.push({ table: 'whole', size, threads });
  if (want('tiled') && sizes.some((s) => s <= 1024)) cases.push({ table: 'tiled', size: 768, window: 256, overlap: 64, threads });
  if (want('tiled') && sizes.includes(2048)) cases.push({ table: 'tiled', size: 2048, window: 512, overlap: 128, threads });
  for (const size of [512, 1024, 2048])
    for (const r of ranks) if (want('shard') && sizes.includes(size)) cases.push({ table: 'shard', size, ranks: r, threads });
  return cases;
}

const readFloats = (path: string): Float32Array => {
  const bytes = readFileSync(path);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
};

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const mib = (b: number | null | undefined) => (b == null ? '–' : (b / 2 ** 20).toFixed(0));
const sec = (s: number | null | undefined) => (s == null ? '–' : s.toFixed(1));

function markdown(cells: { case: MemoryCase; distvae: Measured; diffusers?: Measured }[], cores: number, withDiffusers: boolean): string {
  const lines = [
    `# Memory: distvae${withDiffusers ? ' and diffusers' : ''}, ${SD_CONFIG_NOTE}`,
    '',
    'Peak RSS in MiB (VmHWM of a fresh process: load and decode); seconds of the decode call; CPU seconds (user + system): distvae the decode call (session creation included: it happens on the first decode), diffusers the whole process.',
    `Timings marked * ran at a load average above ${cores} (this machine's cores) and are not comparable.`,
    '',
    'Shard rows: per-rank peaks and the largest |Δ| against the whole decode of the same size (when it ran in the same invocation).',
    '',
    `| case | distvae peak | per rank | max abs vs whole | s | CPU s |${withDiffusers ? ' diffusers peak | s | CPU s |' : ''}`,
    `|---|---:|---|---:|---:|---:|${withDiffusers ? '---:|---:|---:|' : ''}`,
  ];
  for (const { case: c, distvae: d, diffusers: f } of cells) {
    const loaded = (m: Measured) => (m.loadAverage > cores ? '*' : '');
    const ours = d.ok
      ? `| ${mib(d.peakRssBytes)} | ${d.perRankPeakRssBytes?.map(mib).join(' / ') ?? ''} | ${d.maxAbsVsWhole?.toExponential(1) ?? ''} | ${sec(d.seconds)}${loaded(d)} | ${sec(d.cpuSeconds)} |`
      : `| failed: ${d.error} | | | | |`;
    const theirs = !withDiffusers
      ? ''
      : !f
        ? ' – | – | – |'
        : f.ok
          ? ` ${mib(f.peakRssBytes)} | ${sec(f.seconds)}${loaded(f)} | ${sec(f.cpuSeconds)} |`
          : ` failed (${mib(f.peakRssBytes)}) | | |`;
    lines.push(`| ${caseName(c)} ${ours}${theirs}`);
  }
  return lines.join('\n') + '\n';
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      child: { type: 'string' },
      tables: { type: 'string', default: 'fixed,whole,tiled,shard' },
      sizes: { type: 'string', default: '512,1024,2048' },
      ranks: { type: 'string', default: '1,2,4' },
      threads: { type: 'string', default: '2' },
      vae: { type: 'string' },
      work: { type: 'string', default: join(tmpdir(), 'distvae-memory-bench') },
      'no-diffusers': { type: 'boolean', default: false },
      'diffusers-timed-runs': { type: 'string', default: '0' },
      out: { type: 'string', default: join(root, 'bench', 'results', 'memory') },
    },
  });
  if (args.child) {
    const { c, vaeDir, latentPath, sample } = JSON.parse(args.child) as {
      c: MemoryCase;
      vaeDir: string;
      latentPath: string;
      sample?: string;
    };
    process.stdout.write(JSON.stringify(await runDistvaeCase(c, vaeDir, latentPath, sample)) + '\n');
    return;
  }
  const withDiffusers = !args['no-diffusers'] && diffusersAvailable();
  mkdirSync(args.work, { recursive: true });
  const vaeDir = args.vae ?? (await prepareSdFolder(args.work, withDiffusers));
  const cases = memoryCases(
    args.tables.split(','),
    args.sizes.split(',').map(Number),
    args.ranks.split(',').map(Number),
    Number(args.threads),
  );
  const cells: { case: MemoryCase; distvae: Measured; diffusers?: Measured }[] = [];
  const { describeRun } = await import('../src/bench/machine.js');
  const ran = describeRun(process.argv.slice(1), Number(args.threads), root);
  for (const c of cases) {
    const latent = await latentFile(args.work, c.size);
    process.stderr.write(`${caseName(c)}: distvae…\n`);
    const sample = join(args.work, `out-${c.table}-${c.size}-${c.ranks ?? 1}.f32`);
    const distvae = measureDistvae(c, vaeDir, latent, sample);
    const whole = join(args.work, `out-whole-${c.size}-1.f32`);
    if (distvae.ok && c.table === 'shard' && existsSync(whole)) distvae.maxAbsVsWhole = maxAbsDiff(readFloats(sample), readFloats(whole));
    process.stderr.write(
      `  ${distvae.ok ? `${mib(distvae.peakRssBytes)} MiB${distvae.perRankPeakRssBytes ? ` (ranks ${distvae.perRankPeakRssBytes.map(mib).join(', ')})` : ''}, ${sec(distvae.seconds)} s` : distvae.error}\n`,
    );
    let diffusers: Measured | undefined;
    if (withDiffusers && c.table !== 'shard') {
      process.stderr.write(`${caseName(c)}: diffusers…\n`);
      diffusers = measureDiffusers(c, vaeDir, latent, join(args.work, 'diffusers-out.npy'), Number(args['diffusers-timed-runs']));
      process.stderr.write(`  ${diffusers.ok ? `${mib(diffusers.peakRssBytes)} MiB, ${sec(diffusers.seconds)} s` : diffusers.error}\n`);
    }
    cells.push({ case: c, distvae, ...(diffusers ? { diffusers } : {}) });
  }
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(
    `${args.out}.json`,
    JSON.stringify({ schema: 1, benchmark: 'memory', ran: { ...ran, vae: SD_CONFIG_NOTE, diffusers: withDiffusers }, cells }, null, 2) +
      '\n',
  );
  writeFileSync(`${args.out}.md`, markdown(cells, ran.cores, withDiffusers));
  process.stdout.write(markdown(cells, ran.cores, withDiffusers));
}

if (process.argv[1] === here) await main();
