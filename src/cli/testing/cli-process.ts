// The `distvae` CLI as a child process for tests that need what only a process shows: its exit
// code or signal, its peak RSS (VmHWM, written by a preloaded hook when it exits normally), the
// ranks it leaves behind, and how it takes SIGINT/SIGTERM. Every process it starts (ranks,
// ffmpeg, their own children) inherits a variable unique to the run, so a process left behind is
// found even when it was started after the last look at the tree or was re-parented to init.

import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../main.ts', import.meta.url));

/** Preloaded into the child: writes its VmHWM (bytes) to $DISTVAE_TEST_HWM on exit. */
const HWM_HOOK = `data:text/javascript,${encodeURIComponent(
  "import { readFileSync, writeFileSync } from 'node:fs'; process.on('exit', () => { try { const m = /VmHWM:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8')); if (m) writeFileSync(process.env.DISTVAE_TEST_HWM, String(Number(m[1]) * 1024)); } catch {} });",
)}`;

export interface CliProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Peak RSS of the CLI process (not its ranks); null where /proc is missing or it died by a signal. */
  peakRssBytes: number | null;
  /** Milliseconds from the signal sent (if any) to the exit. */
  afterSignalMs: number | null;
  /** Rank processes seen just before the signal. */
  ranks: number[];
  /** Processes started by the CLI (ranks, ffmpeg, ...) still alive 2 s after it exited. */
  leftBehind: number[];
}

export interface CliProcessOptions {
  /** Sends this signal once `when` says so (polled every 100 ms with the output so far). */
  signal?: NodeJS.Signals;
  when?: (seen: { stdout: string; stderr: string; elapsedMs: number; ranks: () => number[] }) => boolean;
  /** Kills the child (SIGKILL) past this long; the test then fails on its result. */
  timeoutMs?: number;
  /** Variables added to the child's environment (e.g. VK_ICD_FILENAMES to hide the Vulkan driver). */
  env?: Record<string, string>;
}

/** Pids of the rank processes under `pid` (their command names the rank entry; tsx's esbuild service is not one). */
export function rankProcessesOf(pid: number): number[] {
  try {
    const out = execFileSync('ps', ['-eww', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' });
    const children = new Map<number, { pid: number; args: string }[]>();
    for (const line of out.trim().split('\n')) {
      const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
      if (!m) continue;
      children.set(Number(m[2]), [...(children.get(Number(m[2])) ?? []), { pid: Number(m[1]), args: m[3]! }]);
    }
    const all: number[] = [];
    const walk = (p: number) =>
      (children.get(p) ?? []).forEach((c) => {
        if (c.args.includes('process-entry')) all.push(c.pid);
        walk(c.pid);
      });
    walk(pid);
    return all;
  } catch {
    return [];
  }
}

/** Whether a process runs (a zombie, already dead and waiting to be reaped by init, does not). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Live processes whose environment holds `entry` (NAME=value): the descendants of one run, wherever they were re-parented. */
export function processesWithEnv(entry: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(entry) && isAlive(Number(name))) found.push(Number(name));
    } catch {
      // Gone meanwhile, or another user's.
    }
  }
  return found;
}

/** The processes of `entry` still alive after `graceMs` (a killed rank takes the kernel a moment to tear down). */
async function survivors(entry: string, graceMs: number): Promise<number[]> {
  if (!existsSync('/proc/self/environ')) return [];
  let left = processesWithEnv(entry);
  for (let waited = 0; left.length > 0 && waited < graceMs; waited += 50) {
    await new Promise((done) => setTimeout(done, 50));
    left = left.filter(isAlive);
  }
  return left;
}

export async function runCliProcess(argv: string[], options: CliProcessOptions = {}): Promise<CliProcessResult> {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-cli-proc-'));
  const hwm = join(dir, 'hwm');
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), '--import', HWM_HOOK, CLI, ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env, DISTVAE_TEST_HWM: hwm },
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const started = Date.now();
  const exited = once(child, 'exit');
  let signalledAt: number | null = null;
  let ranks: number[] = [];
  const killer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  const poll = options.signal
    ? setInterval(() => {
        if (signalledAt !== null || child.exitCode !== null || child.signalCode !== null) return;
        if (options.when && !options.when({ stdout, stderr, elapsedMs: Date.now() - started, ranks: () => rankProcessesOf(child.pid!) }))
          return;
        ranks = rankProcessesOf(child.pid!);
        signalledAt = Date.now();
        child.kill(options.signal);
      }, 100)
    : null;
  const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  const endedAt = Date.now();
  clearTimeout(killer);
  if (poll) clearInterval(poll);
  const peakRssBytes = existsSync(hwm) ? Number(readFileSync(hwm, 'utf8')) : null;
  const leftBehind = await survivors(`DISTVAE_TEST_HWM=${hwm}`, 2000);
  for (const pid of leftBehind) process.kill(pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  return {
    code,
    signal,
    stdout,
    stderr,
    peakRssBytes,
    afterSignalMs: signalledAt === null ? null : endedAt - signalledAt,
    ranks,
    leftBehind,
  };
}
