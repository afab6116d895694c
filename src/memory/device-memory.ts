// Device memory of GPU ranks, predicted from the memory model's terms (model.ts) as onnxruntime's
// WebGPU provider handles buffers: every initializer of a session is uploaded into a GPU buffer of
// its own for the session's life (`sessionWeights`), and every value a kernel writes is a GPU
// buffer from its producer to its last reader, returned to the provider's buffer cache for reuse
// (default 'bucket' mode), so a run's device peak is the graph's liveness peak (memory/liveness.ts:
// `activation`, plus the regions larger later runs add, `growth`, and kept history, `recurrent`;
// for a row-sharded rank its largest step, `shard`). What lives only in host memory is left out:
// the CPU provider's prepacked weights, the memory pattern, JS buffers, the heap. Bucket rounding
// and Dawn's own allocations are not modelled. On lavapipe device buffers are host memory; the
// agreement with measured peak RSS there is not established yet (docs/design.md §13).

import type { MemoryPrediction, MemoryTerms } from './model.js';

/** A GPU rank's predicted device peak, in bytes, from its terms. */
export function deviceBytesOf(terms: MemoryTerms): number {
  return terms.sessionWeights + Math.max(terms.activation + terms.growth + terms.recurrent, terms.shard);
}

/** Predicted device memory of each process that decodes (the ranks, or the coordinator when it decodes itself). */
export interface DevicePrediction {
  /** Rank, and its predicted device peak. */
  ranks: { rank: number; deviceBytes: number }[];
  /** The largest of them: what a per-rank device memory cap is compared with. */
  peakBytes: number;
}

/** Device memory of a plan's decoding processes on a GPU provider. */
export function predictDeviceMemory(prediction: MemoryPrediction): DevicePrediction {
  const ranks =
    prediction.ranks.length > 0
      ? prediction.ranks.map((r) => ({ rank: r.rank, deviceBytes: deviceBytesOf(r.terms) }))
      : [{ rank: 0, deviceBytes: deviceBytesOf(prediction.coordinator.terms) }];
  return { ranks, peakBytes: Math.max(...ranks.map((r) => r.deviceBytes)) };
}
