// Queue workers for the tests and the benchmark: `distvae worker` child processes (the real entry
// point), the tiny synthetic VAE's worker arguments, and an in-process worker that corrupts the
// tiles it returns.

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { withAllocatorDefaults } from '../local/process/allocator-env.js';
import { redisOptionsOf } from '../queue/connection.js';
import { bytesOf, decodeKeys, float32Of, sha256, type RunJobData, type RunProgress } from '../queue/protocol.js';
import { TINY_KL } from './tiny-vae.js';

const CLI = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
/** The package's bin, as a user runs it (it registers tsx itself in a checkout without dist/). */
const BIN = fileURLToPath(new URL('../../../bin/distvae.js', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  /** The first line it printed (names the VAE hash it serves). */
  banner: string;
  /** Everything it printed on stderr so far. */
  stderr(): string;
  /** SIGTERM, then its exit code and stdout after the banner. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }>;
}

/**
 * Worker arguments for the tiny VAE, or another synthetic autoencoder-kl config (written into
 * `dir` as `name`.json): one thread, and a short lock so a killed worker's run is taken again
 * within about a second.
 */
export function tinyWorkerArgs(dir: string, klConfig: Record<string, unknown> = TINY_KL, name = 'tiny-kl'): string[] {
  const config = join(dir, `${name}.json`);
  writeFileSync(config, JSON.stringify(klConfig));
  return [
    '--synthetic',
    '--family',
    'autoencoder-kl',
    '--config',
    config,
    '--threads',
    '1',
    '--lock-duration',
    '1000',
    '--stalled-interval',
    '300',
  ];
}

/**
 * A `distvae worker` process on `queue` with `workerArgs` (VAE and runtime options); resolves once
 * it serves. `env` is added to its environment (a marker finds it, and whatever it started, later).
 * `entry` 'bin' starts it through bin/distvae.js, as a user does (the benchmark's soak), else the
 * CLI's source module through tsx; `nodeArgs` go to node before it. `allocator` 'added' starts it
 * with the allocator settings distvae gives the processes it starts (allocator-env.ts), 'as-given'
 * with the environment as it is, as a user starts it (the bin then starts the worker again under
 * them: ranks/local/process/relaunch.ts, and `child` is that launcher).
 */
export async function startWorkerProcess(
  redisUrl: string,
  queue: string,
  workerArgs: string[],
  env: Record<string, string> = {},
  {
    entry = 'source',
    nodeArgs = [],
    allocator = 'added',
  }: { entry?: 'bin' | 'source'; nodeArgs?: string[]; allocator?: 'added' | 'as-given' } = {},
): Promise<WorkerProcess> {
  const cli = entry === 'bin' ? [BIN] : ['--import', import.meta.resolve('tsx'), CLI];
  const args = [...nodeArgs, ...cli, 'worker', '--redis', redisUrl, '--queue', queue, ...workerArgs];
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: allocator === 'added' ? withAllocatorDefaults({ ...process.env, ...env }) : { ...process.env, ...env },
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const lines = createInterface({ input: child.stdout! });
  const rest: string[] = [];
  const banner = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before serving: ${err}`)));
  });
  lines.on('line', (l) => rest.push(l));
  return {
    child,
    banner,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      return { code: child.exitCode, signal: child.signalCode, stdout: rest.join('\n') };
    },
  };
}

/**
 * A worker that follows the protocol but returns broken tiles: 'bytes' flips a value after the
 * SHA-256 was taken (corruption in transit), 'shape' claims one column fewer than it decoded.
 */
export async function startCorruptingWorker(
  redisUrl: string,
  queue: string,
  mode: 'bytes' | 'shape',
): Promise<{ close: () => Promise<void> }> {
  const redis = new Redis(redisUrl);
  const worker = new Worker<RunJobData>(
    queue,
    async (job) => {
      const keys = decodeKeys(queue, job.data.decodeId);
      for (const tile of job.data.tiles) {
        const latent = float32Of((await redis.getBuffer(keys.input(tile.index)))!);
        // A stand-in decode: 3 planes at 2× the latent size, whatever the values.
        const [h, w] = [tile.dims[2]! * 2, tile.dims[3]! * 2];
        const data = new Float32Array(3 * h * w).fill(latent[0]!);
        const bytes = bytesOf(data);
        const hash = sha256(bytes);
        if (mode === 'bytes') data[7] = data[7]! + 1;
        const dims = mode === 'shape' ? [1, 3, h, w - 1] : [1, 3, h, w];
        // Written only while the decode is alive, as a real worker does, so nothing outlives it.
        const write =
          "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[2], 'data', ARGV[1], 'dims', ARGV[2], 'dtype', 'float32', 'sha256', ARGV[3], 'worker', ARGV[4]) end";
        await redis.eval(write, 2, keys.alive, keys.output(tile.index), bytes, JSON.stringify(dims), hash, `corrupting-${mode}`);
        await job.updateProgress({ tile: tile.index } satisfies RunProgress);
      }
      return { worker: `corrupting-${mode}`, tiles: [], decoderSeconds: 0, busySeconds: 0, cancelled: false };
    },
    { connection: { ...redisOptionsOf(redisUrl), maxRetriesPerRequest: null } },
  );
  await worker.waitUntilReady();
  return {
    close: async () => {
      await worker.close();
      redis.disconnect();
    },
  };
}
