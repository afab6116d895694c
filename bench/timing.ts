// Timing on a shared machine, for the benchmarks: runs that had the CPUs to themselves are told
// apart from disturbed ones (process CPU time over wall time), rounds start when the machine is
// quiet, and variants are timed round-robin so outside load hits each alike.

import { readFileSync } from 'node:fs';

export interface Run {
  ms: number;
  /** Process CPU time (user + system) over the run; with ORT's spinning off, about the work done. */
  cpuMs: number;
  /** Process CPU time reached 85 % of `threads` cores over the run. */
  clean: boolean;
}

export interface Timing {
  medianMs: number;
  minMs: number;
  /** Median CPU time over all runs (clean or not). */
  medianCpuMs: number;
  cleanRuns: number;
  runs: number;
}

/**
 * Runs once and says whether the run had the CPUs to itself: its process CPU time over wall
 * time must reach 85% of the thread count (another process holding a core drops it towards
 * half). Spinning ORT threads keep the ratio high only while they own their core.
 */
export async function timedRun(threads: number, run: () => Promise<unknown>): Promise<Run> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return { ms, cpuMs, clean: cpuMs / ms >= 0.85 * threads };
}

/** Median and minimum over the clean runs (over all runs when none was clean). */
export function summarise(runs: readonly Run[]): Timing {
  const clean = runs.filter((r) => r.clean);
  const list = (clean.length > 0 ? clean : runs).map((r) => r.ms).sort((a, b) => a - b);
  const cpu = runs.map((r) => r.cpuMs).sort((a, b) => a - b);
  return {
    medianMs: list[Math.floor(list.length / 2)]!,
    minMs: list[0]!,
    medianCpuMs: cpu[Math.floor(cpu.length / 2)]!,
    cleanRuns: clean.length,
    runs: runs.length,
  };
}

/** CPU pressure (PSI 'some avg10', % of the last 10 s in which runnable tasks waited for a CPU). */
export function cpuPressure(): number {
  try {
    return Number(/avg10=([\d.]+)/.exec(readFileSync('/proc/pressure/cpu', 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/** Runnable tasks on the machine right now (the 4th field of /proc/loadavg, "running/total"). */
function runnableTasks(): number {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[3]!.split('/')[0]);
  } catch {
    return 1;
  }
}

/**
 * This machine is shared: waits (up to `maxMs`) until only this process is runnable in three
 * samples 100 ms apart, so a measurement round starts with the CPUs free.
 */
export async function waitForIdleCpus(maxMs = 5000): Promise<void> {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  for (let tries = 0, quiet = 0; tries < maxMs / 100 && quiet < 3; tries++) {
    quiet = runnableTasks() <= 1 ? quiet + 1 : 0;
    await sleep(100);
  }
}

/**
 * Times each variant `repeat` times, round-robin (A B C A B C …), waiting for quiet CPUs before
 * each round; warm-up runs must already have happened.
 */
export async function roundRobin(
  threads: number,
  repeat: number,
  variants: readonly (() => Promise<unknown>)[],
  idleWaitMs = 5000,
): Promise<Run[][]> {
  const runs: Run[][] = variants.map(() => []);
  for (let r = 0; r < repeat; r++) {
    await waitForIdleCpus(idleWaitMs);
    for (const [i, v] of variants.entries()) runs[i]!.push(await timedRun(threads, v));
  }
  return runs;
}
