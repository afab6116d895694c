// Device memory of GPU ranks, predicted from the memory model's terms (model.ts) as onnxruntime's
// WebGPU provider handles buffers: every initializer of a session is uploaded into a GPU buffer of
// its own for the session's life (`sessionWeights`), and every value a kernel writes is a GPU
// buffer from its producer to its last reader, returned to the provider's buffer cache for reuse.
// In the default 'bucket' cache mode a request takes the smallest bucket that holds it
// (`webgpuBufferBytes`: 64 B … 160 MiB; larger ones their own size), so a run's device peak is the
// graph's liveness peak over bucket-sized buffers (memory/liveness.ts with that size:
// `deviceActivation`, plus the runs larger than earlier ones, `growth`, and kept history,
// `recurrent`; for a row-sharded rank its largest step,
// `shard`, not bucket-rounded). What lives only in host memory is left out: the CPU provider's
// prepacked weights, the memory pattern, JS buffers, the heap; so are Dawn's own allocations and
// the staging buffers of uploads and downloads. Agreement on lavapipe, whose device buffers are
// host memory: a webgpu rank's peak RSS over that of a tiny decode grows by 1.02–1.06× the
// predicted growth from 48² to 128² latents (bench/results/device-memory.md, docs/design.md §13).

import type { MemoryPrediction, MemoryTerms } from './model.js';

/**
 * The buckets of onnxruntime WebGPU's default 'bucket' buffer cache (onnxruntime 1.30,
 * core/providers/webgpu/buffer_manager.cc `BUCKET_DEFAULT_LIMIT_TABLE`): a storage buffer request
 * gets the smallest bucket at least its size; above the largest it is its own size, rounded up to 16 bytes.
 */
const WEBGPU_BUCKETS: readonly number[] = [
  64, 128, 256, 512, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608, 12582912, 16777216,
  26214400, 33554432, 44236800, 58982400, 67108864, 134217728, 167772160,
];

/** The bytes of the GPU buffer onnxruntime's WebGPU provider allocates for a tensor of `bytes` (its bucket). */
export function webgpuBufferBytes(bytes: number): number {
  if (bytes === 0) return 0;
  return WEBGPU_BUCKETS.find((b) => b >= bytes) ?? Math.ceil(bytes / 16) * 16;
}

/** A GPU rank's predicted device peak, in bytes, from its terms. */
export function deviceBytesOf(terms: MemoryTerms): number {
  // growth: the cache keeps an earlier, smaller run's buffers, so a larger later run adds its own.
  return terms.sessionWeights + Math.max(terms.deviceActivation + terms.growth + terms.recurrent, terms.shard);
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
