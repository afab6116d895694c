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
  /** Copies resident in a process that only holds the loaded VAE (a coordinator whose ranks decode, an idle rank). */
  holdingWeightCopies: number;
  /** Resident bytes per byte of the sessions' activation peaks (each arena keeps its largest run's plan). */
  activationFactor: number;
  /** Resident bytes per byte of the memory-pattern block of a shape run again (sessions with memory patterns on). */
  patternFactor: number;
  /** Resident bytes per byte of the arena regions that later, larger runs add. */
  growthFactor: number;
  /** Resident bytes per byte of a row-sharded rank's largest step (stage sessions without an arena, plus the values kept). */
  shardFactor: number;
  /** Share of the bytes glibc's heap served a row-sharded rank's stage runs that is still resident at its peak (freed chunks the heap keeps). */
  heapFactor: number;
  /** Copies of the decoded output resident in the process that assembles and writes it. */
  outputCopies: number;
  /** Copies of a decoding process's largest tensor that onnxruntime adds beyond the graph (layout reorders, the output copied out). */
  largestTensorCopies: number;
  /** Resident bytes a rank thread adds to the process it runs in. */
  rankThreadBytes: number;
  /** How the numbers were measured. */
  measured: string;
}

/**
 * Per-provider calibration. `cpu`: fitted to the accuracy matrix of bench/results/memory-model.json
 * (process ranks, VmHWM of each rank and of the coordinator, onnxruntime-node 1.30 CPU EP, arena
 * and memory patterns on, Node 20, linux x64); see that report for each case's error.
 */
export const CALIBRATIONS: Readonly<Record<string, RuntimeCalibration>> = {
  cpu: {
    provider: 'cpu',
    fixedBytes: 153244107,
    decodingWeightCopies: 2.334,
    sessionWeightCopies: 0.827,
    holdingWeightCopies: 0.942,
    activationFactor: 0.502,
    patternFactor: 0.864,
    growthFactor: 0.024,
    shardFactor: 1.346,
    heapFactor: 0.5,
    outputCopies: 1.606,
    largestTensorCopies: 2.816,
    rankThreadBytes: 98096036,
    measured:
      'fitted by `npx tsx bench/memory-model.ts calibrate` to the processes of bench/results/memory-model.json (2026-12-01/02, linux x64, 2 cores, Node 20.20, onnxruntime-node 1.30 CPU EP, lean runtime before the act/shard changes of issue 14: arena and memory patterns on, staged shard with JS GroupNorm)',
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
