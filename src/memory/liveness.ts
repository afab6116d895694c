// The activation peak of one graph run: a liveness scan over the node order with the shapes of
// shapes.ts. A value's buffer lives from the node that makes it to its last reader (graph
// outputs to the end); views (Reshape, Identity, Squeeze, …) share their input's buffer, as
// onnxruntime aliases them. The peak is the largest sum of buffers live while a node runs —
// its inputs and its outputs together — not counting initializers (weights are counted apart)
// nor the graph inputs (the caller's buffers).

import type { ModelProto } from '../graph/onnx-proto.js';
import { bytesOf, inferShapes, type ValueShape } from './shapes.js';

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
      if (node.op_type !== 'Constant') allocates[i]!.push(name);
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
  const topology = { allocates, frees, outputs, inputs: (graph.input ?? []).map((x) => x.name!), names: nodes.map((n) => n.name ?? '') };
  topologies.set(model, topology);
  return topology;
}

export function peakOf(model: ModelProto, shapes: ReadonlyMap<string, ValueShape>): ActivationPeak {
  const t = topologyOf(model);
  const size = (name: string) => {
    const s = shapes.get(name);
    return s ? bytesOf(s) : 0;
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
