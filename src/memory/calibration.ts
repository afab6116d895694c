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
  /** Copies of the sessions' weights in initializers under the process's mmap threshold that stay in glibc's heap (what onnxruntime read and freed opening the session). */
  heapWeightCopies: number;
  /**
   * Copies of the kernels the CPU EP reads in place from the mapped weights file (not 2-D
   * convolutions) at or over the process's mmap threshold: one, by mechanism — measured by a probe
   * (bench/mapped-kernels.ts), not fitted, since no matrix process but HunyuanVideo 1.5's has them.
   */
  mappedWeightCopies: number;
  /** Copies resident in a process that only holds the loaded VAE (a coordinator whose ranks decode, an idle rank). */
  holdingWeightCopies: number;
  /** Resident bytes per byte of the sessions' activation peaks (each arena keeps its largest run's plan). */
  activationFactor: number;
  /** Resident bytes per byte of an encoder's sessions' activation peaks (MemoryTerms.encoderActivation). */
  encoderActivationFactor: number;
  /** Copies of an encode's image held whole in the assembling process (MemoryTerms.inputImage: a JPEG decoded, mapped, copied). */
  inputImageCopies: number;
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
  /** Copies of a multi-tile decode's activation peak per intra-op thread beyond the first, in a process under glibc's default arenas (MemoryTerms.threadArena). */
  threadArenaFactor: number;
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
/**
 * Per-provider calibration. `cpu`: fitted to the accuracy matrix of bench/results/memory-model.json
 * (46 cases, 97 processes, 5 of them encodes: process ranks, the median VmHWM of 3 runs (5 for row sharding) of each
 * rank and of the coordinator, onnxruntime-node 1.30 CPU EP, Node 20, glibc, linux x64); see that
 * report for each case's error and which cells were measured under which rank allocator. The
 * weights: a session holds a prepacked copy of its 2-D convolution weights (packedWeightCopies
 * ≈ 1) plus, for initializers under the process's mmap threshold, what onnxruntime read and freed
 * opening it, still in glibc's heap (heapWeightCopies ≈ 0.8). That threshold is glibc's dynamic one
 * (up to 32 MiB) in the coordinator and in ranks started with DISTVAE_RANK_ALLOCATOR=inherit, and
 * 256 KiB in rank processes under distvae's allocator settings — so SD's ranks no longer keep a
 * second copy of their weights (measured 546 MiB per SD tile rank against 693 under the old
 * model) and HunyuanImage 2.1, whose convolution kernels are mostly 144 MiB, keeps one only for
 * its 150 MiB of smaller kernels (whole at 64²: 1449 predicted / 1347 measured, was 2315).
 * Pinned at 0 by the fit: the JS copy of the weights (read by onnxruntime from the file), a
 * session's other weights (sessionWeightCopies: no case tells them apart from the packed and heap
 * terms once both exist) and growthFactor. patternFactor has no case now (memory patterns are off
 * with the arena): it keeps the 2026-12-01 value. rankThreadBytes is net (a rank thread's realm,
 * less what a glibc thread arena keeps below a rank process's main arena). A row-sharded rank
 * counts its largest tensor as a tile decode does; shardFactor and largestTensorCopies are
 * collinear in the shard cases, so only their sum per rank is measured. boundFactor (1.18) is the
 * largest ratio of a decode's measured peak (its processes' peaks in one run, summed) to its
 * predicted peak over every run of the matrix — dc-ae-tile512-768, 2018 / 1719 MiB = 1.174, rounded
 * up — so every decode of the matrix measured within predicted × 1.18. The 2- and 1-thread cases
 * of the same plan measured alike in rank processes (one glibc arena: TAEF2 tile ranks 433 MiB at
 * 2 threads, within 4 % of the model); tiles decoded in the coordinator (glibc's per-thread
 * arenas) with 2 threads hold one activation peak more (threadArenaFactor 0.952, fitted on
 * taef2-tile512x560-768x2048-t2-png: 737 MiB, 530 without the term; bench/results/budget-cap.md).
 * 1×1 kernels are not in the packed term (fitted on the DC-AE cases; runs.ts conv2dWeightBytes).
 * Encodes (2026-12-05): an encoder's activation peaks have their own factor (0.383 against the
 * decoders' 0.679: under the decoders' factor the whole SD and TAEF2 encodes measured 22 % and 17 %
 * over), and an image held whole by the assembling process counts 5.9 copies (the JPEG photo:
 * jpeg-js's decode buffers, the RGBA pixels, the float image and its input-range copy — the
 * coordinator of a TAEF2 encode on ranks measured 274 MiB against 181 with one copy).
 */
export const CALIBRATIONS: Readonly<Record<string, RuntimeCalibration>> = {
  cpu: {
    provider: 'cpu',
    fixedBytes: 170453591,
    decodingWeightCopies: 0.095,
    sessionWeightCopies: 0,
    packedWeightCopies: 0.894,
    heapWeightCopies: 0.858,
    mappedWeightCopies: 1,
    holdingWeightCopies: 0.117,
    activationFactor: 0.679,
    encoderActivationFactor: 0.383,
    inputImageCopies: 5.945,
    patternFactor: 0.864,
    recurrentFactor: 0.871,
    growthFactor: 0,
    shardFactor: 0.211,
    heapFactor: 0.528,
    relayCopies: 3.276,
    outputCopies: 0.834,
    largestTensorCopies: 2.223,
    rankThreadBytes: 51285660,
    threadArenaFactor: 0.952,
    boundFactor: 1.18,
    measured:
      'fitted by `npx tsx bench/memory-model.ts calibrate` (non-negative least squares, Lawson–Hanson) to 97 processes of bench/results/memory-model.json (2026-12-05, linux x64, 23.5 GiB, 2 cores, Node 20.20.2, onnxruntime-node 1.30 CPU EP, glibc malloc): the 86 decode processes of the previous fit as they were measured, and the encode cases measured 2026-12-05 12:47-12:59 UTC (1 run each, load average 17-23: SD encoder 512² whole, 256-px tiles here and on 2 process ranks; the trained TAEF2 encoder on the shared 2048x768 photo, whole and in 512-px tiles on 2 ranks)',
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
