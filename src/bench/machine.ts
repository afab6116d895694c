// What produced a benchmark's numbers: the machine, CPU, core count, memory, Node and
// onnxruntime versions, the commit of this checkout, the command line and the threads per rank
// — the `ran` block of every report under bench/results/ (schema 1).

import { execFileSync } from 'node:child_process';
import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';
import { env as ortEnv } from 'onnxruntime-node';

/** What produced a benchmark's numbers: date, machine, CPU, memory, versions, commit and command line. */
export interface RunDescription {
  date: string;
  machine: string;
  cpu: string;
  cores: number;
  memoryBytes: number;
  node: string;
  onnxruntime: string;
  /** HEAD of the checkout the code ran from, with `-dirty` when it had uncommitted changes; null outside git. */
  commit: string | null;
  argv: string[];
  /** Intra-op threads per rank (null: onnxruntime's default, all cores). */
  threads: number | null;
  loadAverage: number[];
}

function gitCommit(cwd: string): string | null {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
        cwd,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim() !== '';
    return dirty ? `${head}-dirty` : head;
  } catch {
    return null;
  }
}

/** Describes this machine and run; `cwd` locates the checkout whose commit is recorded. */
export function describeRun(argv: readonly string[], threads: number | null, cwd = process.cwd()): RunDescription {
  return {
    date: new Date().toISOString(),
    machine: `${platform()} ${release()} ${arch()}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryBytes: totalmem(),
    node: process.version,
    onnxruntime: ortEnv.versions.node ?? ortEnv.versions.common,
    commit: gitCommit(cwd),
    argv: [...argv],
    threads,
    loadAverage: loadavg(),
  };
}
