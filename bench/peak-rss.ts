// Peak memory of a child process, for the benchmarks: `node --import tsx <script> …` under
// /usr/bin/time -f %M (its maximum resident set, stable under load where timings are not).

import { spawnSync } from 'node:child_process';

/**
 * Runs `node --import tsx ...args` under /usr/bin/time and returns its stdout and peak RSS in MiB;
 * a non-zero exit throws, naming `what` and the child's stderr.
 */
export function runWithPeak(args: readonly string[], what: string): { stdout: string; peakMiB: number } {
  const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, '--import', 'tsx', ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  if (r.status !== 0) throw new Error(`${what} failed: ${r.stderr}`);
  const peakKiB = Number(r.stderr.trim().split('\n').at(-1));
  return { stdout: r.stdout, peakMiB: Math.round(peakKiB / 1024) };
}
