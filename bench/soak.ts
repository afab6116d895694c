// Soak: what users run for hours must not grow (issue 29 item 4). Three long runs of the tiny
// synthetic AutoencoderKL, each bounded in count and in time, on a redis-server this script
// starts on loopback (no persistence):
//
// - worker: one `distvae worker` process, started through bin/distvae.js as a user starts it,
//   serves --jobs run jobs (one decode of 20 tiles each, from an in-process coordinator); a hook
//   preloaded into it (SIGUSR2) records its RSS and what V8 can name of it after every job.
//   Target: after the last job within 10 % of after the 5th.
// - out-dir: one `distvae decode --latents DIR --out-dir OUT` (through the bin) over --files
//   latents (one VAE load); a preloaded hook records the same as it prints each file's report line.
//   Target: after the last file within 10 % of after the 5th.
//   Both run in each of --arms (default: as a user runs distvae; see ARMS for the settings tried).
// - churn: two `distvae worker` processes, --decodes queue decodes; before each decode after the
//   first one worker is SIGKILLed and a new one started in its place (every third kill lands
//   mid-run instead, after the decode's first tile). Every image must equal the local decode
//   bitwise, no key of any decode may stay in Redis, and no worker process may outlive the run
//   (found by an environment marker each one inherits).
//
// Writes bench/results/soak.json and .md: the per-step RSS series (and per step: RSS, young
// generation, old space, heap used, external, outside V8), the 5th and last figures, their ratio
// and what grew between them, Redis keys and memory, `uptime` before and after. Not a test: it
// measures (src/ranks/queue/soak.test.ts and src/session/soak.test.ts are the suite's short versions).
//
//   npx tsx bench/soak.ts [--cases worker,out-dir,churn] [--arms default,semi-1,allocator] [--jobs 50] [--files 50] [--decodes 12] [--max-minutes 20]

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeRun } from '../src/bench/machine.js';
import { processesWithEnv } from '../src/cli/testing/cli-process.js';
import { localTiledDecode } from '../src/decode/engine.js';
import { ProgressCounter } from '../src/decode/types.js';
import { writeNpy } from '../src/io/npy.js';
import { queueGroup } from '../src/ranks/queue/index.js';
import { withAllocatorDefaults } from '../src/ranks/local/process/allocator-env.js';
import { startWorkerProcess, tinyWorkerArgs, type WorkerProcess } from '../src/ranks/testing/queue-workers.js';
import { decodeLeftovers, startRedisServer, type RedisServer } from '../src/ranks/testing/redis-server.js';
import { installPlan, loadTinyVae, seededLatent } from '../src/ranks/testing/tiny-vae.js';
import { tiledDecodeFor } from '../src/strategies/tile/tiled-decode.js';
import type { Tensor } from '../src/tensor.js';

const { values: args } = parseArgs({
  options: {
    cases: { type: 'string', default: 'worker,out-dir,churn' },
    jobs: { type: 'string', default: '50' },
    files: { type: 'string', default: '50' },
    decodes: { type: 'string', default: '12' },
    'max-minutes': { type: 'string', default: '20' },
    arms: { type: 'string', default: 'default' },
    out: { type: 'string', default: 'bench/results/soak' },
  },
});
const cases = args.cases.split(',');

/**
 * The worker and out-dir cases run in each arm, one after the other under the same load, always
 * in the user's environment: `default` as a user runs distvae (the bin starts these long-running
 * commands again under the rank processes' glibc settings: ranks/local/process/relaunch.ts);
 * `inherit` with that turned off (DISTVAE_RANK_ALLOCATOR=inherit: glibc's defaults, no relaunch —
 * what distvae did before); `semi-1` with V8's young generation capped from the start
 * (NODE_OPTIONS=--max-semi-space-size=1, no relaunch); `allocator` with the glibc settings
 * (ranks/local/process/allocator-env.ts) set in the user's environment (so no relaunch);
 * `fixed-young` with the young generation fixed at V8's maximum (node --min-semi-space-size=16
 * --max-semi-space-size=16 on the command line, no relaunch); `optimize-for-size` relaunched as by
 * default with node --optimize-for-size (V8 grows its heap less before collecting).
 */
const userNodeOptions = process.env['NODE_OPTIONS'] ?? '';
const ARMS = {
  default: { NODE_OPTIONS: userNodeOptions },
  inherit: { DISTVAE_RANK_ALLOCATOR: 'inherit', NODE_OPTIONS: userNodeOptions },
  'semi-1': { DISTVAE_RANK_ALLOCATOR: 'inherit', NODE_OPTIONS: `${userNodeOptions} --max-semi-space-size=1`.trim() },
  allocator: { ...(withAllocatorDefaults({}) as Record<string, string>), NODE_OPTIONS: userNodeOptions },
  'fixed-young': { DISTVAE_RANK_ALLOCATOR: 'inherit', NODE_OPTIONS: userNodeOptions },
  'optimize-for-size': { NODE_OPTIONS: userNodeOptions },
} as const satisfies Record<string, Record<string, string>>;
/** Node flags an arm puts on the command line (those NODE_OPTIONS does not take). */
const ARM_NODE_ARGS: Partial<Record<keyof typeof ARMS, string[]>> = {
  // The young generation at V8's maximum from the start, never grown or shrunk.
  'fixed-young': ['--min-semi-space-size=16', '--max-semi-space-size=16'],
  // V8's heap kept small (a smaller growing factor: major GCs sooner), relaunched as by default.
  'optimize-for-size': ['--optimize-for-size'],
};
type Arm = keyof typeof ARMS;
const arms = args.arms.split(',').map((a) => {
  if (!(a in ARMS)) throw new Error(`--arms: unknown arm ${JSON.stringify(a)}: expected ${Object.keys(ARMS).join(', ')}`);
  return a as Arm;
});
/** A case's name in the results: the arm after the case, but for distvae as it is. */
const caseName = (name: string, arm: Arm) => (arm === 'default' ? name : `${name} (${arm})`);
/** The arm's environment, as a command prefix. */
const armCommand = (arm: Arm) =>
  arm === 'default'
    ? ''
    : Object.entries(ARMS[arm])
        .filter(([, value]) => value !== '')
        .map(([name, value]) => `${name}=${value} `)
        .join('') + (ARM_NODE_ARGS[arm] ? `node ${ARM_NODE_ARGS[arm].join(' ')} bin/` : '');
/** The bench's environment without the allocator settings (the bench may run under them): a user's. */
const userEnv = (arm: Arm): Record<string, string> => {
  const env = { ...process.env } as Record<string, string>;
  for (const name of [...Object.keys(withAllocatorDefaults({})), 'DISTVAE_RANK_ALLOCATOR']) delete env[name];
  return { ...env, ...ARMS[arm] };
};
/** The process a launcher started again under the allocator settings (relaunch.ts), or the process itself. */
function relaunchedChild(pid: number): number {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return children.find((c) => readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('distvae.js')) ?? pid;
  } catch {
    return pid;
  }
}
/** A process's resident set now (MiB), or null once it is gone. */
function rssMiBOf(pid: number): number | null {
  try {
    return +(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024).toFixed(1);
  } catch {
    return null;
  }
}
const deadline = Date.now() + Number(args['max-minutes']) * 60_000;
// The CLI as a user runs it: the bin (which runs dist/ when built, else the sources through tsx).
const BIN = fileURLToPath(new URL('../bin/distvae.js', import.meta.url));
const MiB = 2 ** 20;
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

/**
 * A module preloaded into a process under test (written next to `file`, for --import): `probe()` appends one
 * JSON line to `file` with what the process holds now — VmRSS, V8's heap (each space's size, the
 * young generation's among them), external memory and array buffers — so a growing RSS can be
 * told apart (a young generation growing, old-space objects retained, buffers, or native memory
 * outside V8). `trigger` installs it: on each stdout write (a CLI's report line), or on SIGUSR2.
 */
function probeHook(file: string, trigger: 'stdout' | 'SIGUSR2'): string {
  const install =
    trigger === 'stdout'
      ? `const write = process.stdout.write.bind(process.stdout);\nprocess.stdout.write = (chunk, ...rest) => { probe(); return write(chunk, ...rest); };`
      : `process.on('SIGUSR2', probe);`;
  const hook = `${file}.mjs`;
  writeFileSync(
    hook,
    `import { appendFileSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
const probe = () => {
  const m = process.memoryUsage();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
  const rss = Number(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
  // Resident memory by kind of mapping: the brk heap (glibc's main arena), other malloc arenas
  // (64 MiB-aligned heaps, reserved whole), file-backed (code, libraries), and other anonymous
  // memory (V8's pages, mmapped allocations, stacks).
  const maps = { brk: 0, arenas: 0, file: 0, anon: 0 };
  let kind = 'anon';
  for (const l of readFileSync('/proc/self/smaps', 'utf8').split('\\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \\S+ \\S+ \\S+ (\\d+)\\s*(.*)$/.exec(l);
    if (head) {
      const [start, end] = [parseInt(head[1], 16), parseInt(head[2], 16)];
      const name = head[4];
      kind = name === '[heap]' ? 'brk' : name.startsWith('/') ? 'file' : start % 2 ** 26 === 0 && end - start <= 2 ** 26 && name === '' ? 'arenas' : 'anon';
      continue;
    }
    const rssLine = /^Rss:\\s+(\\d+) kB/.exec(l);
    if (rssLine) maps[kind] += Number(rssLine[1]) * 1024;
  }
  const line = { rss, heapTotal: m.heapTotal, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, spaces, maps };
  appendFileSync(${JSON.stringify(file)}, JSON.stringify(line) + '\\n');
};
${install}
`,
  );
  return hook;
}

/** One probe line (probeHook). */
interface Probe {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, number>;
  maps: { brk: number; arenas: number; file: number; anon: number };
}

/** The probe lines written so far: complete lines only (one may be half written as it is read). */
const readProbes = (file: string): Probe[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line) as Probe);

/** What grew between two probes (MiB): RSS, and the parts of it that V8 can name. */
function breakdown(a: Probe, b: Probe): Record<string, number> {
  const d = (x: number, y: number) => +((y - x) / MiB).toFixed(1);
  return {
    rss: d(a.rss, b.rss),
    heapTotal: d(a.heapTotal, b.heapTotal),
    youngGeneration: d(a.spaces['new_space'] ?? 0, b.spaces['new_space'] ?? 0),
    oldSpace: d(a.spaces['old_space'] ?? 0, b.spaces['old_space'] ?? 0),
    codeSpace: d(a.spaces['code_space'] ?? 0, b.spaces['code_space'] ?? 0),
    heapUsed: d(a.heapUsed, b.heapUsed),
    external: d(a.external, b.external),
    arrayBuffers: d(a.arrayBuffers, b.arrayBuffers),
    brk: d(a.maps.brk, b.maps.brk),
    arenas: d(a.maps.arenas, b.maps.arenas),
    file: d(a.maps.file, b.maps.file),
    anon: d(a.maps.anon, b.maps.anon),
    // What V8 does not account for: native allocations (malloc arenas, onnxruntime), stacks, code.
    outsideV8: d(a.rss - a.heapTotal - a.external, b.rss - b.heapTotal - b.external),
  };
}

/**
 * The figures of one growth case: RSS after each step, after the 5th against after the last, and
 * what grew between the two (breakdown).
 */
function growth(series: Probe[]): {
  after5thMiB: number;
  afterLastMiB: number;
  steps: number;
  ratio: number;
  withinTenPercent: boolean;
  grewMiB: Record<string, number>;
  stepsMiB: number[][];
  after50thMiB?: number;
  lastOver50th?: number;
} {
  const fifth = series[4];
  const last = series[series.length - 1];
  return {
    after5thMiB: +((fifth?.rss ?? NaN) / MiB).toFixed(1),
    afterLastMiB: +((last?.rss ?? NaN) / MiB).toFixed(1),
    steps: series.length,
    ratio: +((last?.rss ?? NaN) / (fifth?.rss ?? NaN)).toFixed(4),
    withinTenPercent: fifth !== undefined && last !== undefined && last.rss <= fifth.rss * 1.1,
    grewMiB: fifth && last ? breakdown(fifth, last) : {},
    // Past 50 steps: after the last against after the 50th, whether the growth has levelled off.
    ...(series.length > 50
      ? { after50thMiB: +(series[49]!.rss / MiB).toFixed(1), lastOver50th: +(last!.rss / series[49]!.rss).toFixed(4) }
      : {}),
    // Per step (MiB): RSS, the young generation, old space, heap used, external, outside V8.
    stepsMiB: series.map((p) =>
      [p.rss, p.spaces['new_space'] ?? 0, p.spaces['old_space'] ?? 0, p.heapUsed, p.external, p.rss - p.heapTotal - p.external].map(
        (b) => +(b / MiB).toFixed(1),
      ),
    ),
  };
}

const dir = mkdtempSync(join(tmpdir(), 'distvae-soak-'));
const workerArgs = tinyWorkerArgs(dir);
const report: Record<string, unknown> = {
  schema: 1,
  ran: { ...describeRun(process.argv.slice(2), 1), uptimeBefore: uptime() },
  vae: 'tiny synthetic AutoencoderKL (TINY_KL: block_out_channels [16, 32], 2x), 1 decoder thread',
  cases: {},
};
const results = report['cases'] as Record<string, unknown>;
log(`soak: ${cases.join(', ')}; ${uptime()}`);

let server: RedisServer | null = null;
const vae = await loadTinyVae();
installPlan(vae, [32, 32], [8, 8]);
const latentOf = (seed: number): Tensor => seededLatent(40, 56, seed);
try {
  server = await startRedisServer();

  for (const arm of arms) {
    if (cases.includes('worker') && Date.now() < deadline) await workerCase(server, arm);
    if (cases.includes('out-dir') && Date.now() < deadline) await outDirCase(arm);
  }

  if (cases.includes('churn') && Date.now() < deadline) {
    const decodes = Number(args.decodes);
    const marker = `DISTVAE_SOAK_CHURN=${process.pid}`;
    const env = { DISTVAE_SOAK_CHURN: String(process.pid) };
    const workers: WorkerProcess[] = await Promise.all([0, 1].map(() => startWorkerProcess(server!.url, 'soak-churn', workerArgs, env)));
    const group = queueGroup({ connection: server.url, queue: 'soak-churn', ranks: 2, timeoutMs: 60_000, cleanupTimeoutMs: 10_000 });
    const decode = tiledDecodeFor(vae, group)!;
    const steps: {
      decode: number;
      kill: 'none' | 'between' | 'mid-run';
      identical: boolean;
      leftovers: number;
      failures: number;
      redealt: number;
    }[] = [];
    let killed = 0;
    try {
      for (let i = 1; i <= decodes && Date.now() < deadline; i++) {
        const victim = i % 2;
        let kill: 'none' | 'between' | 'mid-run' = i === 1 ? 'none' : i % 3 === 0 ? 'mid-run' : 'between';
        const replace = async () => {
          workers[victim]!.child.kill('SIGKILL');
          killed++;
          await once(workers[victim]!.child, 'exit').catch(() => undefined);
          workers[victim] = await startWorkerProcess(server!.url, 'soak-churn', workerArgs, env);
        };
        if (kill === 'between') await replace();
        const replacing: Promise<void>[] = [];
        const progress = new ProgressCounter(Infinity, (e) => {
          if (kill === 'mid-run' && e.tilesDone === 1) replacing.push(replace());
        });
        const latents = latentOf(100 + i);
        const out = await decode(latents, { progress });
        await Promise.all(replacing);
        if (kill === 'mid-run' && replacing.length === 0) kill = 'none';
        const stats = decode.lastStats!;
        const step = {
          decode: i,
          kill,
          identical: sameBits(out, await localTiledDecode(vae, vae.runner)(latents)),
          leftovers: (await decodeLeftovers(server.client)).length,
          failures: stats.failures.length,
          redealt: stats.redealt.length,
        };
        steps.push(step);
        log(`churn: ${JSON.stringify(step)}`);
      }
    } finally {
      await group.close();
      await Promise.all(workers.map((w) => w.stop()));
    }
    // A killed worker takes the kernel a moment to tear down.
    let left = processesWithEnv(marker);
    for (let waited = 0; left.length > 0 && waited < 2000; waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
      left = processesWithEnv(marker);
    }
    results['churn'] = {
      command: `2 x distvae worker ${workerArgs.join(' ').replace(dir, '$DIR')}; ${decodes} queue decodes (ranks 2) of 40x56 latents, window 32 overlap 8; ${killed} workers SIGKILLed and restarted`,
      decodes: steps.length,
      killed,
      allIdentical: steps.every((s) => s.identical),
      leftoverKeys: await decodeLeftovers(server.client),
      processesLeft: left,
      steps,
    };
    log(
      `churn: all identical ${steps.every((s) => s.identical)}, keys left ${(results['churn'] as { leftoverKeys: string[] }).leftoverKeys.length}, processes left ${left.length}`,
    );
  }
} finally {
  await vae.dispose();
  if (server) {
    (report['ran'] as Record<string, unknown>)['redisUsedMemoryMiB'] = +(
      Number(/used_memory:(\d+)/.exec(await server.client.info('memory'))?.[1] ?? NaN) / MiB
    ).toFixed(2);
    await server.stop();
  }
  rmSync(dir, { recursive: true, force: true });
}

(report['ran'] as Record<string, unknown>)['uptimeAfter'] = uptime();
// The docs site's bench report schema (docs/lib/bench-reports.ts): each case a cell.
const { cases: _cases, ...run } = report;
const cells = Object.entries(results).map(([name, result]) => ({ case: name, ...(result as object) }));
writeFileSync(`${args.out}.json`, JSON.stringify({ ...run, cells }, null, 2) + '\n');
writeFileSync(`${args.out}.md`, markdown());
log(`wrote ${args.out}.json and .md; ${uptime()}`);

/**
 * One `distvae worker` (started through the bin, as a user starts it, in the user's environment)
 * serving --jobs run jobs; its probe after each.
 */
async function workerCase(server: RedisServer, arm: Arm): Promise<void> {
  const jobs = Number(args.jobs);
  const probes = join(dir, `worker-${arm}-probes`);
  const startedAt = Date.now();
  const worker = await startWorkerProcess(
    server.url,
    `soak-worker-${arm}`,
    workerArgs,
    {
      ...userEnv(arm),
      NODE_OPTIONS: `${ARMS[arm]['NODE_OPTIONS'] ?? ''} --import=${probeHook(probes, 'SIGUSR2')}`.trim(),
    },
    { entry: 'bin', nodeArgs: ARM_NODE_ARGS[arm] ?? [], allocator: 'as-given' },
  );
  const startupMs = Date.now() - startedAt;
  // The worker itself: the launcher's child where the bin started it again.
  const workerPid = relaunchedChild(worker.child.pid!);
  const launcher = workerPid === worker.child.pid ? null : worker.child.pid!;
  /** The worker's probe line now (SIGUSR2; its handler appends one). */
  const probeWorker = async (): Promise<Probe> => {
    const before = existsSync(probes) ? readProbes(probes).length : 0;
    process.kill(workerPid, 'SIGUSR2');
    for (let waited = 0; waited < 10_000; waited += 20) {
      const lines = existsSync(probes) ? readProbes(probes) : [];
      if (lines.length > before) return lines.at(-1)!;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the worker did not answer its probe');
  };
  // One rank: every decode is exactly one run job, taken by the one worker.
  const group = queueGroup({ connection: server.url, queue: `soak-worker-${arm}`, ranks: 1, timeoutMs: 60_000 });
  const decode = tiledDecodeFor(vae, group, { offThread: true })!;
  const series: Probe[] = [];
  const redisKeys: number[] = [];
  let tiles = 0;
  let identical = true;
  let launcherRssMiB: number | null = null;
  const servedAt = Date.now();
  try {
    for (let job = 1; job <= jobs && Date.now() < deadline; job++) {
      const latents = latentOf(job);
      const out = await decode(latents);
      tiles += decode.lastStats!.tiles;
      if (job <= 5 || job % 10 === 0) identical &&= sameBits(out, await localTiledDecode(vae, vae.runner)(latents));
      series.push(await probeWorker());
      redisKeys.push((await server.client.dbsize()) - 0);
      if (job === 5 || job % 10 === 0) log(`worker ${arm}: job ${job}, RSS ${(series.at(-1)!.rss / MiB).toFixed(1)} MiB`);
    }
    if (launcher !== null) launcherRssMiB = rssMiBOf(launcher);
  } finally {
    await group.close();
    await worker.stop();
  }
  results[caseName('worker', arm)] = {
    command: `${armCommand(arm)}distvae worker ${workerArgs.join(' ').replace(dir, '$DIR')}; ${jobs} decodes of 40x56 latents, window 32 overlap 8 (output px), ranks 1: one run job of ${tiles / series.length} tiles each`,
    ...growth(series),
    relaunched: launcher !== null,
    launcherRssMiB,
    startupMs,
    servingMs: Date.now() - servedAt,
    tiles,
    identicalToLocal: identical,
    redisKeysAfterEachJob: { first: redisKeys[0], last: redisKeys.at(-1) },
    leftovers: await decodeLeftovers(server.client),
    rssMiB: series.map((p) => +(p.rss / MiB).toFixed(1)),
  };
  log(`worker ${arm}: ${JSON.stringify({ ...(results[caseName('worker', arm)] as object), rssMiB: undefined })}`);
}

/** One `distvae decode --out-dir` (through the bin, in the user's environment) over --files latents; its probe at each report. */
async function outDirCase(arm: Arm): Promise<void> {
  const files = Number(args.files);
  const latentsDir = join(dir, `latents-${arm}`);
  const outDir = join(dir, `out-${arm}`);
  mkdirSync(latentsDir);
  mkdirSync(outDir);
  for (let i = 1; i <= files; i++) writeNpy(join(latentsDir, `z${String(i).padStart(3, '0')}.npy`), latentOf(i));
  const probes = join(dir, `out-dir-${arm}-probes`);
  // Preloaded into the CLI: each line it prints (one report per file) probes it at that moment.
  const hook = probeHook(probes, 'stdout');
  const argv = [
    'decode',
    '--synthetic',
    '--family',
    'autoencoder-kl',
    '--config',
    join(dir, 'tiny-kl.json'),
    '--latents',
    latentsDir,
    '--out-dir',
    outDir,
    '--window',
    '32x32',
    '--overlap',
    '8x8',
    '--threads',
    '1',
    '--json',
  ];
  const child = spawn(process.execPath, [...(ARM_NODE_ARGS[arm] ?? []), '--import', hook, BIN, ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // The user's environment, as a decode he starts has it.
    env: userEnv(arm),
  });
  const startedAt = Date.now();
  let launcherRssMiB: number | null = null;
  let relaunched = false;
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  let reported = 0;
  createInterface({ input: child.stdout! }).on('line', () => {
    reported++;
    // The launcher (where the bin started the decode again), sampled as each file is reported.
    if (relaunchedChild(child.pid!) !== child.pid) {
      relaunched = true;
      launcherRssMiB = rssMiBOf(child.pid!) ?? launcherRssMiB;
    }
    if (reported === 5 || reported % 10 === 0) log(`out-dir ${arm}: file ${reported}`);
  });
  const remaining = Math.max(1000, deadline - Date.now());
  const killer = setTimeout(() => child.kill('SIGKILL'), remaining);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(killer);
  const wallMs = Date.now() - startedAt;
  if (code !== 0) throw new Error(`decode --out-dir exited ${code}: ${stderr}`);
  const series = readProbes(probes);
  results[caseName('out-dir', arm)] = {
    command: `${armCommand(arm)}distvae ${argv.join(' ').replaceAll(dir, '$DIR')} (${files} latents 40x56)`,
    ...growth(series),
    relaunched,
    launcherRssMiB,
    wallMs,
    outputs: readdirSync(outDir).length,
    rssMiB: series.map((p) => +(p.rss / MiB).toFixed(1)),
  };
  log(`out-dir ${arm}: ${JSON.stringify({ ...(results[caseName('out-dir', arm)] as object), rssMiB: undefined })}`);
}

/** The figures as a table, with what ran them. */
function markdown(): string {
  const ran = report['ran'] as Record<string, unknown>;
  const lines = [
    '# Soak: long runs that do not grow',
    '',
    `\`npx tsx bench/soak.ts ${process.argv.slice(2).join(' ')}\` at ${String(ran['commit'])}, ${String(ran['date'])}, ${String(ran['machine'])}, ${String(ran['cpu'])} (${String(ran['cores'])} cores), Node ${String(ran['node'])}; ${String(report['vae'])}.`,
    '',
    `uptime before: \`${String(ran['uptimeBefore'])}\`; after: \`${String(ran['uptimeAfter'])}\` (other jobs shared the machine: RSS is load-independent, times are not).`,
    '',
    '| case | steps | RSS after the 5th | RSS after the last | last / 5th | within 10 % | last / 50th | grew 5th → last (MiB): V8 heap committed; resident brk heap, other malloc arenas, other anonymous (V8 pages among them) | relaunched: launcher RSS | time (worker: start to serving + 50 jobs; out-dir: whole run) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const [name, result] of Object.entries(results)) {
    const c = result as ReturnType<typeof growth> & {
      relaunched: boolean;
      launcherRssMiB: number | null;
      startupMs?: number;
      servingMs?: number;
      wallMs?: number;
    };
    const time =
      c.wallMs !== undefined
        ? `${(c.wallMs / 1000).toFixed(1)} s`
        : `${((c.startupMs ?? NaN) / 1000).toFixed(1)} s + ${((c.servingMs ?? NaN) / 1000).toFixed(1)} s`;
    if (name !== 'churn')
      lines.push(
        `| ${name} | ${c.steps} | ${c.after5thMiB} MiB | ${c.afterLastMiB} MiB | ${c.ratio} | ${c.withinTenPercent ? 'yes' : 'no'} | ${c.lastOver50th ?? '—'} | ${c.grewMiB['heapTotal']}, ${c.grewMiB['brk']}, ${c.grewMiB['arenas']}, ${c.grewMiB['anon']} | ${c.relaunched ? `yes: ${c.launcherRssMiB} MiB` : 'no'} | ${time} |`,
      );
  }
  const churn = results['churn'] as
    | {
        decodes: number;
        killed: number;
        allIdentical: boolean;
        leftoverKeys: string[];
        processesLeft: number[];
        steps: { failures: number }[];
      }
    | undefined;
  if (churn)
    lines.push(
      '',
      `churn: ${churn.decodes} queue decodes, ${churn.killed} workers SIGKILLed and restarted; every image bitwise equal to the local decode: ${churn.allIdentical ? 'yes' : 'no'}; decode keys left: ${churn.leftoverKeys.length}; worker processes left: ${churn.processesLeft.length}; runs that went back to the queue (a killed worker, or a lock not renewed in time under load): ${churn.steps.reduce((n, s) => n + s.failures, 0)}.`,
    );
  for (const [name, c] of Object.entries(results)) lines.push('', `${name}: \`${(c as { command: string }).command}\``);
  return lines.join('\n') + '\n';
}

function sameBits(a: Tensor, b: Tensor): boolean {
  return (
    a.dims.join() === b.dims.join() &&
    Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength).equals(
      Buffer.from(b.data.buffer, b.data.byteOffset, b.data.byteLength),
    )
  );
}
