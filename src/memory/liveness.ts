// The activation peak of one graph run: a liveness scan over the node order with the shapes of
// shapes.ts. A value's buffer lives from the node that makes it to its last reader (graph
// outputs to the end); views (Reshape, Identity, Squeeze, …) share their input's buffer, as
// onnxruntime aliases them. The peak is the largest sum of buffers live while a node runs —
// its inputs and its outputs together — not counting initializers (weights are counted apart)
// nor the graph inputs (the caller's buffers).

import type { ModelProto } from '../graph/onnx-proto.js';
import { bytesOf, type ValueShape } from '../graph/ops.js';
import { inferShapes } from './shapes.js';

export interface ActivationPeak {
  /** Largest sum of intermediate buffers live at once (bytes). */
  peakBytes: number;
  /** Largest single intermediate or output tensor (bytes). */
  maxTensorBytes: number;
  /** The graph's outputs (bytes). */
  outputBytes: number;
  /** The graph's inputs (bytes). */
  inputBytes: number;
  /** The node at which the peak is reached. */
  peakNode: string;
}

const VIEWS = new Set(['Reshape', 'Identity', 'Squeeze', 'Unsqueeze', 'Flatten']);

/** The activation peak of running `model` once on inputs of these dims. */
export function activationPeak(model: ModelProto, inputDims: Readonly<Record<string, readonly number[]>>): ActivationPeak {
  const shapes = inferShapes(model, inputDims);
  return peakOf(model, shapes);
}

interface Topology {
  /** Per node: the buffers its outputs allocate, and the buffers freed after it runs. */
  allocates: string[][];
  frees: string[][];
  outputs: string[];
  /** The buffers the graph's outputs are (an output made by a view is its input's buffer). */
  outputBuffers: Set<string>;
  inputs: string[];
  names: string[];
}

const topologies = new WeakMap<ModelProto, Topology>();

/** Buffer lifetimes of a model, which do not depend on its input dims (read once per model). */
function topologyOf(model: ModelProto): Topology {
  const known = topologies.get(model);
  if (known) return known;
  const graph = model.graph!;
  const nodes = graph.node ?? [];
  const outputs = (graph.output ?? []).map((o) => o.name!);
  const bufferOf = new Map<string, string>();
  const lastUse = new Map<string, number>();
  const allocates: string[][] = nodes.map(() => []);
  // A Cast of a weight is folded by onnxruntime into a weight of the new type (graph/precision.ts): counted with the weights.
  const initializers = new Set((graph.initializer ?? []).map((t) => t.name!));
  nodes.forEach((node, i) => {
    for (const name of node.input ?? []) {
      const b = bufferOf.get(name);
      if (b !== undefined) lastUse.set(b, i);
    }
    (node.output ?? []).forEach((name, k) => {
      const source = VIEWS.has(node.op_type ?? '') && k === 0 ? bufferOf.get(node.input?.[0] ?? '') : undefined;
      if (source !== undefined) {
        bufferOf.set(name, source);
        lastUse.set(source, i);
        return;
      }
      bufferOf.set(name, name);
      const folded = node.op_type === 'Constant' || (node.op_type === 'Cast' && initializers.has(node.input?.[0] ?? ''));
      if (!folded) allocates[i]!.push(name);
      lastUse.set(name, i);
    });
  });
  for (const name of outputs) {
    const b = bufferOf.get(name);
    if (b !== undefined) lastUse.set(b, nodes.length);
  }
  const allocated = new Set(allocates.flat());
  const frees: string[][] = nodes.map(() => []);
  for (const [b, i] of lastUse) if (i < nodes.length && allocated.has(b)) frees[i]!.push(b);
  const outputBuffers = new Set(outputs.map((name) => bufferOf.get(name) ?? name));
  const topology = {
    allocates,
    frees,
    outputs,
    outputBuffers,
    inputs: (graph.input ?? []).map((x) => x.name!),
    names: nodes.map((n) => n.name ?? ''),
  };
  topologies.set(model, topology);
  return topology;
}

/**
 * The activation peak of one run with these shapes. `bufferBytes` maps a tensor's bytes to the
 * buffer a provider allocates for it (memory/device-memory.ts: onnxruntime WebGPU's buckets);
 * by default a tensor takes its own bytes.
 */
export function peakOf(
  model: ModelProto,
  shapes: ReadonlyMap<string, ValueShape>,
  bufferBytes: (bytes: number) => number = (bytes) => bytes,
): ActivationPeak {
  const t = topologyOf(model);
  const size = (name: string) => {
    const s = shapes.get(name);
    return s ? bufferBytes(bytesOf(s)) : 0;
  };
  let live = 0;
  let peak = 0;
  let peakNode = '';
  let maxTensor = 0;
  const freed = new Set<string>();
  t.allocates.forEach((allocated, i) => {
    for (const name of allocated) {
      const bytes = size(name);
      live += bytes;
      if (bytes > maxTensor) maxTensor = bytes;
    }
    if (live > peak) {
      peak = live;
      peakNode = t.names[i]!;
    }
    for (const b of t.frees[i]!) {
      if (!freed.has(b)) live -= size(b);
      freed.add(b);
    }
  });
  const outputBytes = t.outputs.reduce((s, name) => s + size(name), 0);
  const inputBytes = t.inputs.reduce((s, name) => s + size(name), 0);
  return { peakBytes: peak, maxTensorBytes: Math.max(maxTensor, outputBytes), outputBytes, inputBytes, peakNode };
}

/**
 * glibc malloc's dynamic mmap threshold, as a process that runs sessions without onnxruntime's
 * arena sees it (the row-sharded stage sessions: each tensor is a malloc of its own). A request
 * at or over the threshold is mmapped and unmapped when freed; a smaller one is served from the
 * heap, whose freed chunks stay resident (glibc trims only the heap's top, and only past twice the
 * threshold). Freeing an mmapped chunk raises the threshold to its size, up to 32 MiB — so after
 * the first free of a tensor under 32 MiB, every later tensor of that size comes from the heap,
 * while tensors over 32 MiB are always mapped. Starts at 128 KiB; carried across the runs of one
 * process (MALLOC_MMAP_THRESHOLD_ in the environment fixes it and turns the raising off).
 */
export interface MallocThreshold {
  bytes: number;
  /** Set in the environment (MALLOC_MMAP_THRESHOLD_): frees do not raise it. */
  fixed?: boolean;
}

/** glibc's initial mmap threshold (M_MMAP_THRESHOLD) and its dynamic cap (DEFAULT_MMAP_THRESHOLD_MAX, 64-bit). */
export const MMAP_THRESHOLD_START = 128 * 1024;
export const MMAP_THRESHOLD_MAX = 32 * 2 ** 20;
const PAGE = 4096;
/** What an aligned allocation (onnxruntime: posix_memalign, 64 bytes) adds to a request: the alignment slack and chunk header. */
const MEMALIGN_OVERHEAD = 64 + 32;

/**
 * The bytes of one run's intermediate tensors that glibc serves from its heap (under the dynamic
 * mmap threshold, which the run's frees of mapped chunks raise: `threshold` is updated). Graph
 * inputs and outputs are the caller's buffers and do not count.
 */
export function heapServedBytes(model: ModelProto, shapes: ReadonlyMap<string, ValueShape>, threshold: MallocThreshold): number {
  const t = topologyOf(model);
  const size = (name: string) => {
    const s = shapes.get(name);
    return s ? bytesOf(s) : 0;
  };
  const mapped = new Set<string>();
  const freed = new Set<string>();
  let heap = 0;
  t.allocates.forEach((allocated, i) => {
    for (const name of allocated) {
      if (t.outputBuffers.has(name)) continue;
      const bytes = size(name);
      if (bytes === 0) continue;
      if (bytes + MEMALIGN_OVERHEAD >= threshold.bytes) mapped.add(name);
      else heap += bytes;
    }
    for (const b of t.frees[i]!) {
      if (freed.has(b) || !mapped.has(b)) continue;
      freed.add(b);
      const chunk = Math.ceil((size(b) + MEMALIGN_OVERHEAD + 16) / PAGE) * PAGE;
      if (!threshold.fixed && chunk > threshold.bytes && chunk <= MMAP_THRESHOLD_MAX) threshold.bytes = chunk;
    }
  });
  return heap;
}
