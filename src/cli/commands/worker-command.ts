// `distvae worker`: serves the tiles of queue decodes (`distvae decode --redis URL`) from a
// BullMQ queue in Redis, with its own copy of the VAE, until SIGTERM or SIGINT — then it drains:
// finishes the tile in hand, hands the rest of its run back to the queue, and exits 0.

import { hasMemoryModel, predictTileRun } from '../../entries/memory.js';
import { refuseSamplingWithout } from '../../entries/io.js';
import { DEFAULT_QUEUE, redacted } from '../../entries/ranks.js';
import { DistVaeError, formatBytes, loadEncoder, loadVae, startQueueWorker, type QueueWorkerOptions } from '../../index.js';
import type { CliIO, CommandSpec } from '../args.js';
import { MEMORY_OPTIONS, readBudgetOptions } from '../memory-options.js';
import { FAMILY_OPTIONS } from '../tiling-options.js';
import { printSourceNotes, RUNTIME_OPTIONS, VAE_SOURCE_OPTIONS, readLoadOptions, readVaeSourceOptions } from '../vae-options.js';
import { REDIS_OPTIONS } from './redis-options.js';

export const workerCommand: CommandSpec = {
  name: 'worker',
  summary: 'serve the tiles of queue decodes (decode --redis) from Redis until stopped',
  usage: [
    'distvae worker --redis URL [--queue NAME] --vae PATH [--family F] [--threads N] [--device ID] [--concurrency N]',
    'distvae worker --redis URL --synthetic --family F [--config config.json] [--seed N]',
    'distvae worker --redis URL --encoder --vae PATH [--family F] ...   (serves the tiles of encode --redis)',
    'distvae worker --redis URL --encoder --moments --vae PATH ...        (serves the tiles of encode --redis --sample)',
  ],
  options: [
    ...REDIS_OPTIONS,
    ...VAE_SOURCE_OPTIONS,
    ...FAMILY_OPTIONS,
    ...RUNTIME_OPTIONS,
    {
      name: 'encoder',
      kind: 'boolean',
      description: "serve encoder tiles (distvae encode --redis) with the source's encoder instead of decoder tiles",
    },
    {
      name: 'moments',
      kind: 'boolean',
      description:
        "with --encoder: return the encoder's moments (mean and log-variance), which encode --redis --sample draws from; a worker serves one or the other (the runs name which by content hash)",
    },
    {
      name: 'concurrency',
      kind: 'string',
      value: 'N',
      description: 'runs decoded at once (each with --threads intra-op threads)',
      defaultText: '1',
    },
    {
      name: 'lock-duration',
      kind: 'string',
      value: 'MS',
      description: "how long a taken run stays locked without renewal: a killed worker's run is taken again after about this long",
      defaultText: '30000',
    },
    ...MEMORY_OPTIONS.filter((o) => o.name === 'max-memory').map((o) => ({
      ...o,
      description:
        "this worker's memory budget: a run whose predicted peak (times --concurrency) exceeds it is handed back to the queue for another worker",
      defaultText: '80% of the memory this process tree may use',
    })),
    {
      name: 'stalled-interval',
      kind: 'string',
      value: 'MS',
      description: 'how often this worker looks for runs whose worker died',
      defaultText: '30000',
    },
  ],
  details: [
    'The worker loads its own VAE (weights never travel through Redis) and refuses runs whose VAE content hash differs:',
    'the decode then fails naming both hashes. SIGTERM/SIGINT drain: the tile in hand is finished, the rest of its run',
    'goes back to the queue for another worker. Keep Redis on loopback or a private network, with a password (README).',
  ],
  // Draining finishes the tile in hand, however long it takes; with Redis unreachable the worker
  // closes by force within a few seconds (startQueueWorker).
  drainsOnSignal: true,
  signalGraceMs: 10 * 60_000,
  async run(args, io) {
    const redis = args.string('redis', { required: true });
    const queue = args.string('queue') ?? DEFAULT_QUEUE;
    const concurrency = args.int('concurrency', { min: 1, max: 1024 }) ?? 1;
    const lockDurationMs = args.int('lock-duration', { min: 100 }) ?? 30000;
    const stalledIntervalMs = args.int('stalled-interval', { min: 100 }) ?? 30000;
    const source = readVaeSourceOptions(args);
    printSourceNotes(source, io);
    const loadOptions = readLoadOptions(args);
    const { budget } = readBudgetOptions(args);
    const encoder = args.flag('encoder');
    const moments = args.flag('moments');
    args.done();
    if (moments && !encoder)
      throw new DistVaeError(
        'INVALID_ARGUMENT',
        '--moments: only with --encoder (a decoder has no moments); add --encoder or drop --moments',
      );
    if (encoder)
      return serve(
        io,
        redis!,
        queue,
        concurrency,
        lockDurationMs,
        stalledIntervalMs,
        await encoderRef(source, moments ? { ...loadOptions, moments: true } : loadOptions),
      );
    // Loaded here only for its content hash (and to fail early on a bad source); the decoder
    // threads load their own copies.
    const loaded = await loadVae(source, loadOptions);
    const vae = { source, loadOptions, hash: loaded.contentHash() };
    await loaded.dispose();
    // Families without a memory model take every run.
    const memoryBudget = hasMemoryModel(loaded)
      ? {
          bytes: budget.bytes,
          predictRunBytes: (tiles: readonly { dims: number[] }[]) =>
            predictTileRun(
              loaded,
              tiles.map((t) => t.dims),
              loadOptions.provider !== undefined ? { provider: loadOptions.provider } : {},
            ).peakBytes,
        }
      : undefined;
    return serve(
      io,
      redis!,
      queue,
      concurrency,
      lockDurationMs,
      stalledIntervalMs,
      vae,
      memoryBudget && { memoryBudget, text: formatBytes(budget.bytes) },
    );
  },
};

type VaeRef = QueueWorkerOptions['vae'];

/** The encoder a worker serves: loaded here only for its content hash (and to fail early on a bad source); `moments`, refused where the family has none. */
async function encoderRef(source: VaeRef['source'], loadOptions: VaeRef['loadOptions'] & { moments?: boolean }): Promise<VaeRef> {
  const loaded = await loadEncoder(source, loadOptions);
  // TAE and DC-AE return latents directly: no moments to serve.
  if (loadOptions.moments === true)
    try {
      refuseSamplingWithout(loaded.family, '--moments');
    } catch (e) {
      await loaded.dispose();
      throw e;
    }
  const hash = loaded.contentHash();
  await loaded.dispose();
  return { source, loadOptions, hash, part: 'encoder' };
}

/** Serves `vae`'s tiles from the queue until the command is signalled, then drains. */
async function serve(
  io: CliIO,
  redis: string,
  queue: string,
  concurrency: number,
  lockDurationMs: number,
  stalledIntervalMs: number,
  vae: VaeRef,
  budget?: { memoryBudget: NonNullable<QueueWorkerOptions['memoryBudget']>; text: string },
): Promise<number> {
  const worker = await startQueueWorker({
    connection: redis,
    queue,
    vae,
    concurrency,
    lockDurationMs,
    stalledIntervalMs,
    ...(budget ? { memoryBudget: budget.memoryBudget } : {}),
    log: (line) => io.stderr(`distvae worker: ${line}\n`),
  });
  io.stdout(
    `distvae worker ${worker.name}: serving queue "${queue}" at ${redacted(redis)} with ${vae.part === 'encoder' ? 'encoder' : 'VAE'} ${worker.vaeHash.slice(0, 12)}…${budget ? `, memory budget ${budget.text}` : ''} (SIGTERM drains)\n`,
  );
  await new Promise<void>((resolve) => {
    if (io.signal === undefined || io.signal.aborted) return resolve();
    io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await worker.close();
  io.stdout(`distvae worker ${worker.name}: stopped after ${worker.tilesDecoded} tile(s)\n`);
  return 0;
}
