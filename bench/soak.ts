// Soak: what users run for hours must not grow (issue 29 item 4). Three long runs of the tiny
// synthetic AutoencoderKL, each bounded in count and in time, on a redis-server this script
// starts on loopback (no persistence):
//
// - worker: one `distvae worker` process serves --jobs run jobs (one decode of --tiles-per-job
//   tiles each, from an in-process coordinator); its RSS (/proc VmRSS) is read after every job.
//   Target: after the last job within 10 % of after the 5th.
// - out-dir: one `distvae decode --latents DIR --out-dir OUT` over --files latents (one VAE
//   load); a preloaded hook records the CLI's VmRSS as it prints each file's report line.
//   Target: after the last file within 10 % of after the 5th.
// - churn: two `distvae worker` processes, --decodes queue decodes; before each decode after the
//   first one worker is SIGKILLed and a new one started in its place (every third kill lands
//   mid-run instead, after the decode's first tile). Every image must equal the local decode
//   bitwise, no key of any decode may stay in Redis, and no worker process may outlive the run
//   (found by an environment marker each one inherits).
//
// Writes bench/results/soak.json and .md: the per-step RSS series, the 5th and last figures and
// their ratio, Redis keys and memory, `uptime` before and after. Not a test: it measures
// (src/ranks/queue/soak.test.ts and src/session/soak.test.ts are the suite's short versions).
//
//   npx tsx bench/soak.ts [--cases worker,out-dir,churn] [--jobs 50] [--files 50] [--decodes 12] [--max-minutes 20]

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    out: { type: 'string', default: 'bench/results/soak' },
  },
});
const cases = args.cases.split(',');
const deadline = Date.now() + Number(args['max-minutes']) * 60_000;
const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const MiB = 2 ** 20;
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

/** Resident set of a process now (bytes), from /proc. */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

/** The figures of one growth case: RSS after each step, and after the 5th against after the last. */
function growth(series: number[]): { after5thMiB: number; afterLastMiB: number; steps: number; ratio: number; withinTenPercent: boolean } {
  const fifth = series[4] ?? NaN;
  const last = series[series.length - 1] ?? NaN;
  return {
    after5thMiB: +(fifth / MiB).toFixed(1),
    afterLastMiB: +(last / MiB).toFixed(1),
    steps: series.length,
    ratio: +(last / fifth).toFixed(4),
    withinTenPercent: last <= fifth * 1.1,
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

  if (cases.includes('worker')) {
    const jobs = Number(args.jobs);
    const worker = await startWorkerProcess(server.url, 'soak-worker', workerArgs);
    // One rank: every decode is exactly one run job, taken by the one worker.
    const group = queueGroup({ connection: server.url, queue: 'soak-worker', ranks: 1, timeoutMs: 60_000 });
    const decode = tiledDecodeFor(vae, group, { offThread: true })!;
    const series: number[] = [];
    const redisKeys: number[] = [];
    let tiles = 0;
    let identical = true;
    try {
      for (let job = 1; job <= jobs && Date.now() < deadline; job++) {
        const latents = latentOf(job);
        const out = await decode(latents);
        tiles += decode.lastStats!.tiles;
        if (job <= 5 || job % 10 === 0) identical &&= sameBits(out, await localTiledDecode(vae, vae.runner)(latents));
        series.push(rssOf(worker.child.pid!));
        redisKeys.push((await server.client.dbsize()) - 0);
        if (job === 5 || job % 10 === 0) log(`worker: job ${job}, RSS ${(series.at(-1)! / MiB).toFixed(1)} MiB`);
      }
    } finally {
      await group.close();
      await worker.stop();
    }
    results['worker'] = {
      command: `distvae worker ${workerArgs.join(' ').replace(dir, '$DIR')}; ${jobs} decodes of 40x56 latents, window 32 overlap 8 (output px), ranks 1: one run job of ${tiles / series.length} tiles each`,
      ...growth(series),
      tiles,
      identicalToLocal: identical,
      redisKeysAfterEachJob: { first: redisKeys[0], last: redisKeys.at(-1) },
      leftovers: await decodeLeftovers(server.client),
      rssMiB: series.map((b) => +(b / MiB).toFixed(1)),
    };
    log(`worker: ${JSON.stringify({ ...(results['worker'] as object), rssMiB: undefined })}`);
  }

  if (cases.includes('out-dir') && Date.now() < deadline) {
    const files = Number(args.files);
    const latentsDir = join(dir, 'latents');
    const outDir = join(dir, 'out');
    mkdirSync(latentsDir);
    mkdirSync(outDir);
    for (let i = 1; i <= files; i++) writeNpy(join(latentsDir, `z${String(i).padStart(3, '0')}.npy`), latentOf(i));
    const rssFile = join(dir, 'rss');
    // Preloaded into the CLI: each line it prints (one report per file) appends its VmRSS at that moment.
    const hook = `data:text/javascript,${encodeURIComponent(
      `import { appendFileSync, readFileSync } from 'node:fs'; const write = process.stdout.write.bind(process.stdout); process.stdout.write = (chunk, ...rest) => { const m = /VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8')); appendFileSync(${JSON.stringify(rssFile)}, String(Number(m[1]) * 1024) + '\\n'); return write(chunk, ...rest); };`,
    )}`;
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
    const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), '--import', hook, CLI, ...argv], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    let reported = 0;
    createInterface({ input: child.stdout! }).on('line', () => {
      reported++;
      if (reported === 5 || reported % 10 === 0) log(`out-dir: file ${reported}`);
    });
    const remaining = Math.max(1000, deadline - Date.now());
    const killer = setTimeout(() => child.kill('SIGKILL'), remaining);
    const [code] = (await once(child, 'exit')) as [number | null];
    clearTimeout(killer);
    if (code !== 0) throw new Error(`decode --out-dir exited ${code}: ${stderr}`);
    const series = readFileSync(rssFile, 'utf8').trim().split('\n').map(Number);
    results['out-dir'] = {
      command: `distvae ${argv.join(' ').replaceAll(dir, '$DIR')} (${files} latents 40x56)`,
      ...growth(series),
      outputs: readdirSync(outDir).length,
      rssMiB: series.map((b) => +(b / MiB).toFixed(1)),
    };
    log(`out-dir: ${JSON.stringify({ ...(results['out-dir'] as object), rssMiB: undefined })}`);
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
    '| case | steps | RSS after the 5th | RSS after the last | last / 5th | within 10 % |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const name of ['worker', 'out-dir'] as const) {
    const c = results[name] as ReturnType<typeof growth> | undefined;
    if (c)
      lines.push(
        `| ${name} | ${c.steps} | ${c.after5thMiB} MiB | ${c.afterLastMiB} MiB | ${c.ratio} | ${c.withinTenPercent ? 'yes' : 'no'} |`,
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
