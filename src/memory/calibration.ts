// What the runtime adds to what the graph gives, per execution provider: a committed table the
// memory model multiplies the graph's own numbers by. Each entry says how it was measured; the
// `calibrate` mode of bench/memory-model.ts re-measures it (fits these numbers to measured peak
// RSS by least squares) and prints the entry to paste here.

import { DistVaeError, reason } from '../errors.js';

/** What an execution provider's runtime adds to the graph's own memory, as measured (one entry per provider). */
export interface RuntimeCalibration {
  provider: string;
  /** Resident bytes of a process that has loaded node, distvae and onnxruntime, before any VAE. */
  fixedBytes: number;
  /** Copies of the loaded VAE's weights resident in a process that decodes (its JS tensors, where the source keeps them). */
  decodingWeightCopies: number;
  /** Copies of each session's weights (onnxruntime's initializers, prepacked kernels, the model bytes it parsed). */
  sessionWeightCopies: number;
  /** Copies of the sessions' 2-D convolution weights that onnxruntime's CPU EP adds by prepacking them. */
  packedWeightCopies: number;
  /** Copies resident in a process that only holds the loaded VAE (a coordinator whose ranks decode, an idle rank). */
  holdingWeightCopies: number;
  /** Resident bytes per byte of the sessions' activation peaks (each arena keeps its largest run's plan). */
  activationFactor: number;
  /** Resident bytes per byte of the memory-pattern block of a shape run again (sessions with memory patterns on). */
  patternFactor: number;
  /** Resident bytes per byte of the activation peak of a session run again on the history it keeps (its arena grows over the runs). */
  recurrentFactor: number;
  /** Resident bytes per byte of the arena regions that later, larger runs add. */
  growthFactor: number;
  /** Resident bytes per byte of a row-sharded rank's largest step (stage sessions without an arena, plus the values kept). */
  shardFactor: number;
  /** Share of the bytes glibc's heap served a row-sharded rank's stage runs that is still resident at its peak (freed chunks the heap keeps). */
  heapFactor: number;
  /** Resident bytes per byte of the largest message a coordinator relays between row-sharded rank processes (its chunks in the heap, the joined, deserialised and reserialised copies). */
  relayCopies: number;
  /** Copies of the decoded output resident in the process that assembles and writes it. */
  outputCopies: number;
  /** Copies of a decoding process's largest tensor that onnxruntime adds beyond the graph (layout reorders, the output copied out). */
  largestTensorCopies: number;
  /** Resident bytes a rank thread adds to the process it runs in. */
  rankThreadBytes: number;
  /**
   * The bound on a decode's measured peak, per byte of its predicted (median) peak: the largest
   * ratio of a decode's measured peak (its processes summed, any one run) to its prediction over
   * the measured cases. A budget is compared with the bound, so the decode it admits stays under it.
   */
  boundFactor: number;
  /** How the numbers were measured. */
  measured: string;
}

/**
 * Per-provider calibration. `cpu`: fitted to the accuracy matrix of bench/results/memory-model.json
 * (32 cases, 71 processes: process ranks, the median VmHWM of 3 runs (5 for row sharding) of each rank and of the coordinator,
 * onnxruntime-node 1.30 CPU EP — tile sessions with the arena and memory patterns off, shard stage
 * sessions without the arena — Node 20, glibc, linux x64); see that report for each case's error.
 * Pinned at 0 by the fit (a share no case tells apart from the session's weights): the JS copy of
 * the weights (safetensors and synthetic weights are read by onnxruntime from the file, no JS copy
 * is kept). rankThreadBytes is net: a rank thread's own realm measured 50–55 MiB (thread start
 * and its module graph, TAEF2 at 1024² under tsx), but a decode on that thread allocates from a
 * glibc thread arena, which keeps less of what it frees than the main arena of a rank process
 * (SD tiles of 256 px: +423 MiB on the thread against +533 in a rank process, equal with
 * MALLOC_MMAP_THRESHOLD_ fixed), and the model has no term for that retention outside row
 * sharding. patternFactor has no case now (memory patterns are off with the arena): it keeps the
 * 2026-12-01 value, measured when they were on. sessionWeightCopies (0.66) and recurrentFactor
 * (1.58) are told apart only by the Wan cases (two sessions per segment, the frame steps run again
 * on their history): together they fit Wan's four processes within 1.3 % and two held-out Wan
 * decodes within 2 %, but neither is a per-byte count on its own. A row-sharded rank counts its
 * largest tensor as a tile decode does (onnxruntime's layout copies of the widest convolution's
 * operands); the step's other bytes then take a shardFactor of 0.2 — the two are collinear in
 * the shard cases, so only their sum per rank is measured. boundFactor (1.12) is the largest ratio
 * of a decode's measured peak (its processes' peaks in one run, summed) to its predicted peak over
 * every run of the matrix — sd-whole-768's second run, 2664 / 2391 MiB = 1.114, rounded up — so
 * every decode of the matrix measured within predicted × 1.12. The matrix was measured before rank
 * processes got their allocator settings (ranks/local/process/allocator-env.ts); under them an
 * SD 512² row-sharded rank measured 777–782 MiB in five runs against 969–1115 under glibc’s defaults
 * (bench/results/rank-allocator.md), so these factors overstate such ranks until the matrix is
 * run again and refitted. The matrix decodes with one intra-op thread only: TAEF2 tile ranks
 * with two measured 24–30 % over their prediction, which the bound does not cover (2 of 4
 * held-out decodes in bench/results/budget-cap.md went over their budget, and said so).
 */
export const CALIBRATIONS: Readonly<Record<string, RuntimeCalibration>> = {
  cpu: {
    provider: 'cpu',
    fixedBytes: 161630417,
    decodingWeightCopies: 0,
    sessionWeightCopies: 0.66,
    packedWeightCopies: 1.325,
    holdingWeightCopies: 0.15,
    activationFactor: 0.683,
    patternFactor: 0.864,
    recurrentFactor: 1.583,
    growthFactor: 0.063,
    shardFactor: 0.203,
    heapFactor: 0.547,
    relayCopies: 3.83,
    outputCopies: 1.045,
    largestTensorCopies: 2.224,
    rankThreadBytes: 48474451,
    boundFactor: 1.12,
    measured:
      'fitted by `npx tsx bench/memory-model.ts calibrate` (non-negative least squares, Lawson–Hanson) to 71 processes of bench/results/memory-model.json (2026-12-03, linux x64, 23.5 GiB, 2 cores, Node 20.20.2, onnxruntime-node 1.30 CPU EP, glibc malloc; main at f951a9c: tile sessions with the arena and memory patterns off, row-sharded stage sessions without arena or pattern; every case decoded 3 times, the row-sharded ones 5 times, each process its median peak; a row-sharded rank with its largest tensor, its coordinator with its largest relayed message)',
  },
};

/** The calibration of a provider; refused (naming those there are) when none was measured. */
export function calibrationOf(provider: string): RuntimeCalibration {
  const c = CALIBRATIONS[provider];
  if (c) return c;
  const r = reason(
    'NO_MEMORY_CALIBRATION',
    'provider',
    provider,
    `a provider with a memory calibration (${Object.keys(CALIBRATIONS).join(', ')})`,
  );
  throw new DistVaeError('UNSUPPORTED', r.message, { reasons: [r] });
}
