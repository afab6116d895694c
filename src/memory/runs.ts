// What a decoding process holds for the tile runs it makes, from the family's own graphs: each
// session's activation peak per run (liveness.ts over the graph the runner opens for that tile),
// how onnxruntime's arena keeps them, and the weights and state the sessions hold. Graph inputs
// are resolved from their declared axes, so a family describes its runs (FamilyRuntime.memoryRuns)
// without computing shapes itself.
//
// The arena (CPU EP), as measured (bench/results/memory-model.md): a session's first run on a
// shape allocates tensor by tensor from the arena, which grows to hold them (the `activation`
// term: each session's largest run); a later shape larger than every earlier one adds regions
// (`growth`). With memory patterns on, the second run on a shape allocates its pattern as one
// block, which the fragmented regions of the first rarely hold, so the arena grows again
// (`pattern`: the largest shape run at least twice) — but sessions with the arena run with
// memory patterns off (runtime/session.ts), so a decode's pattern term is 0 unless asked.

import type { TileMemoryRuns } from '../families/runtime-types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { webgpuBufferBytes } from './device-memory.js';
import { MMAP_THRESHOLD_MAX, peakOf, type ActivationPeak } from './liveness.js';
import { bytesOf } from '../graph/ops.js';
import { inferShapes } from './shapes.js';

/** One session's run on one tile shape. */
export interface SessionRun {
  key: string;
  /** Sessions of one slot replace each other in the runner (never held at once); default: the key. */
  slot?: string;
  peak: ActivationPeak;
  /** The activation peak with every buffer as onnxruntime's WebGPU provider sizes it (device-memory.ts `webgpuBufferBytes`); default: `peak`'s. */
  devicePeakBytes?: number;
  /** Runs per tile. */
  runs: number;
  /** Bytes of the session's initializers (its weights). */
  weightBytes: number;
  /** Of those, the 2-D convolutions' kernels wider than 1×1, which onnxruntime's CPU EP also keeps prepacked (conv2dWeightBytes). */
  packedBytes: number;
  /** Bytes of each initializer (what the cache test of heapWeightBytes reads). */
  weightSizes: readonly number[];
  /** Bytes of each kernel the CPU EP reads in place from the mapped external data (mappedKernelSizes); default none. */
  mappedSizes?: readonly number[];
  /** Bytes of each output the runner keeps across runs (one copy), by name. */
  kept: Map<string, number>;
  /** Bytes of the outputs it hands back (those it does not keep). */
  outputBytes: number;
}

/** The axes a latent tile gives a graph's declared input dims. */
function axesOf(tileDims: readonly number[]): Record<string, number> {
  return tileDims.length === 5
    ? { batch: tileDims[0]!, frames: tileDims[2]!, height: tileDims[3]!, width: tileDims[4]! }
    : { batch: tileDims[0]!, height: tileDims[2]!, width: tileDims[3]! };
}

/** A declared dim (`height`, `height*4`, 16) under the tile's axes. */
function resolveDim(
  dim: { dim_value?: number | bigint | null; dim_param?: string | null },
  axes: Record<string, number>,
  input: string,
): number {
  if (dim.dim_value !== undefined && dim.dim_value !== null) return Number(dim.dim_value);
  const param = dim.dim_param ?? '';
  const value = param.split('*').reduce((p, f) => p * (/^\d+$/.test(f) ? Number(f) : (axes[f] ?? Number.NaN)), 1);
  if (!Number.isFinite(value)) throw new Error(`memory model: input ${input} has axis '${param}', which a latent tile does not give`);
  return value;
}

/** Dims of every graph input for a latent tile. */
export function inputDimsOf(model: ModelProto, tileDims: readonly number[]): Record<string, number[]> {
  const axes = axesOf(tileDims);
  const out: Record<string, number[]> = {};
  for (const input of model.graph?.input ?? []) {
    const dims = input.type?.tensor_type?.shape?.dim ?? [];
    out[input.name!] = dims.map((d) => resolveDim(d, axes, input.name!));
  }
  return out;
}

const weightBytesOf = new WeakMap<ModelProto, number>();
const weightSizesOf = new WeakMap<ModelProto, number[]>();

/** Bytes of each of a graph's initializers (memoised per graph). */
export function initializerSizes(model: ModelProto): number[] {
  let sizes = weightSizesOf.get(model);
  if (!sizes) {
    sizes = (model.graph?.initializer ?? []).map((t) => 4 * (t.dims ?? []).reduce((a: number, b) => a * Number(b), 1));
    weightSizesOf.set(model, sizes);
  }
  return sizes;
}

/**
 * Bytes of the initializers smaller than `mmapThreshold`: glibc serves those from its heap, so
 * the copies onnxruntime reads and frees while it opens the session (the external data read in,
 * the originals of what it prepacks) stay resident; larger ones are mmapped and returned.
 */
export function heapWeightBytes(sizes: readonly number[], mmapThreshold: number): number {
  return sizes.reduce((a, b) => a + (b < mmapThreshold ? b : 0), 0);
}

function initializerBytes(model: ModelProto): number {
  let bytes = weightBytesOf.get(model);
  if (bytes === undefined) {
    bytes = 0;
    for (const t of model.graph?.initializer ?? []) bytes += 4 * (t.dims ?? []).reduce((a: number, b) => a * Number(b), 1);
    weightBytesOf.set(model, bytes);
  }
  return bytes;
}

const packedBytesOf = new WeakMap<ModelProto, number>();

/**
 * Bytes of a model's 2-D convolution weights with a spatial extent (initializers a Conv reads as
 * its 4-D kernel, kH×kW > 1). onnxruntime's CPU EP prepacks them into a layout of its own and
 * keeps the initializer as well: measured after building the sessions, SD-size AutoencoderKL and
 * Flux.2 (2-D convolutions) hold 2.2 copies of their weights, HunyuanVideo (3-D convolutions) 1.07.
 * Pointwise (1×1) kernels are left out — a fit, not a mechanism: DC-AE, whose kernels are
 * two-thirds 1×1 (405 of 553 MiB), measured 1133 MiB against 1356 predicted with them counted
 * and 1031 without (refitted), while every other matrix case has under 1 MiB of 1×1 kernels. A
 * probe session of only 1×1 or only 3×3 kernels (bench/kernel-copies.ts) holds the same ~4
 * copies of either at its peak, so what DC-AE's decode does not keep is still open
 * (bench/results/dc-ae-memory.md).
 */
export function conv2dWeightBytes(model: ModelProto): number {
  let bytes = packedBytesOf.get(model);
  if (bytes === undefined) {
    const kernels = new Map<string, number>();
    for (const t of model.graph?.initializer ?? [])
      // 1×1 kernels: not counted (fitted on DC-AE, see above).
      if ((t.dims ?? []).length === 4 && Number(t.dims![2]) * Number(t.dims![3]) > 1)
        kernels.set(t.name!, 4 * (t.dims ?? []).reduce((a: number, b) => a * Number(b), 1));
    const counted = new Set<string>();
    bytes = 0;
    for (const node of model.graph?.node ?? []) {
      const w = node.input?.[1];
      if (node.op_type !== 'Conv' || w === undefined || counted.has(w) || !kernels.has(w)) continue;
      counted.add(w);
      bytes += kernels.get(w)!;
    }
    packedBytesOf.set(model, bytes);
  }
  return bytes;
}

const mappedSizesOf = new WeakMap<ModelProto, number[]>();

/**
 * Bytes of each convolution kernel that onnxruntime's CPU EP neither prepacks nor copies: the
 * kernels of Conv nodes that are not 2-D (a 5-D kernel: 3-D convolutions). Its generic Conv
 * reads them in place where the external data lies: onnxruntime maps the weights file, so
 * opening the session leaves them on disk and the first run pages them in as file-backed
 * resident memory — one copy whatever the allocator (bench/mapped-kernels.ts: twenty 512² × 3×3×3
 * kernels, 540 MiB, add 0 MiB opening and 540 MiB of RssFile in the run, under the rank
 * allocator and glibc's defaults alike; 2-D kernels of the same graph add one anonymous,
 * prepacked copy when the session opens and nothing in the run).
 */
export function mappedKernelSizes(model: ModelProto): number[] {
  let sizes = mappedSizesOf.get(model);
  if (!sizes) {
    const kernels = new Map<string, number>();
    for (const t of model.graph?.initializer ?? [])
      if ((t.dims ?? []).length !== 4) kernels.set(t.name!, 4 * (t.dims ?? []).reduce((a: number, b) => a * Number(b), 1));
    const counted = new Set<string>();
    sizes = [];
    for (const node of model.graph?.node ?? []) {
      const w = node.input?.[1];
      if (node.op_type !== 'Conv' || w === undefined || counted.has(w) || !kernels.has(w)) continue;
      counted.add(w);
      sizes.push(kernels.get(w)!);
    }
    mappedSizesOf.set(model, sizes);
  }
  return sizes;
}

/**
 * Of those kernels, the bytes at or over the process's mmap threshold: the ones no other term
 * counts. Those under it are in heapWeightBytes, whose fitted factor (0.81) prices them — fitted on
 * Wan's and HunyuanVideo's 3-D kernels (all under 32 MiB) in processes under glibc's dynamic
 * threshold, where they are in fact mapped too (a refit could move them here at one copy).
 */
export function mappedWeightBytes(sizes: readonly number[], mmapThreshold: number): number {
  return sizes.reduce((a, b) => a + (b >= mmapThreshold ? b : 0), 0);
}

/** Each session's run for one tile, read from its graph. */
export function sessionRuns(description: TileMemoryRuns, tileDims: readonly number[]): SessionRun[] {
  return description.sessions.map((s) => {
    const dims = inputDimsOf(s.model, tileDims);
    const shapes = inferShapes(s.model, dims);
    const peak = peakOf(s.model, shapes);
    const devicePeakBytes = peakOf(s.model, shapes, webgpuBufferBytes).peakBytes;
    const kept = new Map<string, number>();
    let outputBytes = 0;
    for (const o of s.model.graph?.output ?? []) {
      const bytes = bytesOf(shapes.get(o.name!)!);
      if (description.kept && o.name!.startsWith(description.kept.prefix)) kept.set(o.name!, description.kept.copies * bytes);
      else outputBytes += bytes;
    }
    return {
      key: s.key,
      ...(s.slot !== undefined ? { slot: s.slot } : {}),
      peak,
      devicePeakBytes,
      runs: s.runs,
      weightBytes: initializerBytes(s.model),
      packedBytes: conv2dWeightBytes(s.model),
      weightSizes: initializerSizes(s.model),
      mappedSizes: mappedKernelSizes(s.model),
      kept,
      outputBytes,
    };
  });
}

/** What a process that makes these tile runs in this order holds, by term. */
export interface DecodingHold {
  /** Weights of every session it opens. */
  weightBytes: number;
  /** Of those, the 2-D convolution weights (prepacked too). */
  packedWeightBytes: number;
  /** Of the weights, those in initializers under the process's mmap threshold (heapWeightBytes). */
  heapWeightBytes: number;
  /** Of the weights, the kernels read in place from the mapped weights file at or over that threshold (mappedWeightBytes). */
  mappedWeightBytes: number;
  /** Sum over sessions of their largest run's activation peak. */
  activation: number;
  /** The same with buffers as onnxruntime's WebGPU provider sizes them (SessionRun.devicePeakBytes). */
  deviceActivation: number;
  /** With memory patterns on: sum over sessions of the largest activation peak among shapes run at least twice (the pattern's block); else 0. */
  pattern: number;
  /** Per session, the peaks of runs larger than every earlier one, but the last (regions added on the way). */
  growth: number;
  /** Sum over sessions run again within a tile on the history they keep of their largest such run's peak. */
  recurrent: number;
  /** State the runner keeps across runs (largest tile). */
  kept: number;
  maxTensorBytes: number;
  /** Largest single run's output (the copy out of onnxruntime: a tile's raw output before assembly). */
  outputBytes: number;
}

export function decodingHold(
  tiles: readonly SessionRun[][],
  options: { memoryPattern?: boolean; mmapThreshold?: number } = {},
): DecodingHold {
  const mmapThreshold = options.mmapThreshold ?? MMAP_THRESHOLD_MAX;
  interface Arena {
    slot: string;
    records: number[];
    weightBytes: number;
    packedBytes: number;
    heapWeightBytes: number;
    mappedWeightBytes: number;
    /** Runs per shape (by peak). */
    shapes: Map<number, number>;
    /** Largest peak of a run repeated within a tile on kept history. */
    recurrent: number;
    /** Largest device peak of its runs. */
    device: number;
  }
  const sessions = new Map<string, Arena>();
  let kept = 0;
  let maxTensorBytes = 0;
  let outputBytes = 0;
  for (const tile of tiles) {
    // Every session of a sequence writes the same history entries (first and next frames alike).
    const tileKept = new Map<string, number>();
    for (const r of tile) {
      const s: Arena = sessions.get(r.key) ?? {
        slot: r.slot ?? r.key,
        records: [],
        weightBytes: r.weightBytes,
        packedBytes: r.packedBytes,
        heapWeightBytes: heapWeightBytes(r.weightSizes, mmapThreshold),
        mappedWeightBytes: mappedWeightBytes(r.mappedSizes ?? [], mmapThreshold),
        shapes: new Map(),
        recurrent: 0,
        device: 0,
      };
      sessions.set(r.key, s);
      const peak = r.peak.peakBytes;
      if (peak > (s.records.at(-1) ?? 0)) s.records.push(peak);
      s.device = Math.max(s.device, r.devicePeakBytes ?? peak);
      if (r.runs > 1 && r.kept.size > 0) s.recurrent = Math.max(s.recurrent, peak);
      // Shapes are told apart by their peak: two shapes with one peak share one pattern size.
      s.shapes.set(peak, (s.shapes.get(peak) ?? 0) + r.runs);
      for (const [name, bytes] of r.kept) tileKept.set(name, Math.max(bytes, tileKept.get(name) ?? 0));
      maxTensorBytes = Math.max(maxTensorBytes, r.peak.maxTensorBytes);
      outputBytes = Math.max(outputBytes, r.outputBytes);
    }
    kept = Math.max(
      kept,
      [...tileKept.values()].reduce((a, b) => a + b, 0),
    );
  }
  // A slot holds one session at a time (the runner disposes one before it opens the next, and
  // its arena goes with it): each term is the most any of its sessions holds.
  type Hold = Pick<
    DecodingHold,
    | 'weightBytes'
    | 'packedWeightBytes'
    | 'heapWeightBytes'
    | 'mappedWeightBytes'
    | 'activation'
    | 'deviceActivation'
    | 'pattern'
    | 'growth'
    | 'recurrent'
  >;
  const slots = new Map<string, Hold>();
  for (const s of sessions.values()) {
    const largest = s.records.at(-1) ?? 0;
    const own: Hold = {
      weightBytes: s.weightBytes,
      packedWeightBytes: s.packedBytes,
      heapWeightBytes: s.heapWeightBytes,
      mappedWeightBytes: s.mappedWeightBytes,
      activation: largest,
      deviceActivation: s.device,
      growth: s.records.reduce((a, b) => a + b, 0) - largest,
      recurrent: s.recurrent,
      pattern: options.memoryPattern ? Math.max(0, ...[...s.shapes].filter(([, runs]) => runs > 1).map(([peak]) => peak)) : 0,
    };
    const slot = slots.get(s.slot);
    if (!slot) slots.set(s.slot, own);
    else for (const k of Object.keys(own) as (keyof Hold)[]) slot[k] = Math.max(slot[k], own[k]);
  }
  let weightBytes = 0;
  let packedWeightBytes = 0;
  let heapWeights = 0;
  let mappedWeights = 0;
  let activation = 0;
  let deviceActivation = 0;
  let pattern = 0;
  let growth = 0;
  let recurrent = 0;
  for (const s of slots.values()) {
    recurrent += s.recurrent;
    weightBytes += s.weightBytes;
    packedWeightBytes += s.packedWeightBytes;
    heapWeights += s.heapWeightBytes;
    mappedWeights += s.mappedWeightBytes;
    activation += s.activation;
    deviceActivation += s.deviceActivation;
    growth += s.growth;
    pattern += s.pattern;
  }
  return {
    weightBytes,
    packedWeightBytes,
    heapWeightBytes: heapWeights,
    mappedWeightBytes: mappedWeights,
    activation,
    deviceActivation,
    pattern,
    growth,
    recurrent,
    kept,
    maxTensorBytes,
    outputBytes,
  };
}
