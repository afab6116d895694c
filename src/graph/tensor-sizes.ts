// Tensor sizes of a built graph for given input dims: every value's shape from the one shape
// inference (shapes.ts; small tensors — shapes, axes, scales — carry their elements, so a
// Reshape to `Shape(x)` is sized), giving the largest tensor a run allocates. This is what a
// device whose buffers are capped (WebGPU's maxBufferSize / maxStorageBufferBindingSize) must
// hold in one buffer, so tile plans are checked against it before a decode starts; and the node
// binding the most storage buffers in one shader (WebGPU caps that count too). Ops outside the
// op table are refused by name rather than guessed.

import { DistVaeError } from '../errors.js';
import type { ModelProto, NodeProto } from './onnx-proto.js';
import { bytesOf, type ValueShape } from './ops.js';
import { inferShapes } from './shapes.js';

/** One tensor of a run: its value name, shape and size in bytes. */
export interface TensorSize {
  name: string;
  dims: number[];
  bytes: number;
}

/** A node and the storage buffers its WebGPU shader binds (`storageBuffersOf`). */
export interface NodeStorageBuffers {
  node: string;
  op: string;
  buffers: number;
}

/** Ops whose onnxruntime WebGPU kernel binds its inputs a pass at a time, within the device's count (measured: a 40-input Concat). */
const BATCHED_INPUTS: ReadonlySet<string> = new Set(['Concat']);

/**
 * The storage buffers one WebGPU shader of `node` binds, as onnxruntime's WebGPU kernels bind
 * them: one per float (or bool) input and output — int64 inputs (shapes, axes, starts) are read
 * on the host — and a Concat one input per pass. WebGPU caps this count per shader
 * (maxStorageBuffersPerShaderStage: 8 by default, 16 on lavapipe); a Split's outputs all bind at
 * once, which is what failed a chunked attention of 128 chunks. A tensor counts once: within
 * maxStorageBufferBindingSize (what tile plans keep every tensor to), onnxruntime binds it whole.
 */
export function storageBuffersOf(node: NodeProto, shapes: ReadonlyMap<string, ValueShape>): number {
  const bound = (names: readonly string[] | undefined) =>
    (names ?? []).filter((n) => n !== '' && (shapes.get(n)?.itemBytes ?? 8) !== 8).length;
  const inputs = bound(node.input);
  return (BATCHED_INPUTS.has(node.op_type ?? '') ? Math.min(inputs, 1) : inputs) + bound(node.output);
}

/** Sizes of every tensor of a run (initializers, inputs, node outputs) and the largest of them. */
export interface GraphTensorSizes {
  largest: TensorSize;
  /** The node whose WebGPU shader binds the most storage buffers (`storageBuffersOf`). */
  widestNode: NodeStorageBuffers;
  /** Each graph output's shape. */
  outputs: Record<string, number[]>;
  /** Every value, in graph order. */
  tensors: TensorSize[];
}

function refuse(node: NodeProto, why: string): never {
  throw new DistVaeError('UNSUPPORTED', `tensor sizes: cannot size ${node.op_type} node ${node.name ?? '?'}: ${why}`);
}

/**
 * Sizes every tensor of a run of `model` on inputs of the given dims (graph input name → dims),
 * initializers included, and names the largest.
 */
export function graphTensorSizes(model: ModelProto, inputDims: Readonly<Record<string, readonly number[]>>): GraphTensorSizes {
  const graph = model.graph ?? {};
  const initializers = new Set((graph.initializer ?? []).map((t) => t.name ?? ''));
  const inputs = new Map<string, ValueShape>();
  for (const input of graph.input ?? []) {
    const name = input.name ?? '';
    if (initializers.has(name)) continue;
    const dims = inputDims[name];
    if (!dims) throw new DistVaeError('INVALID_ARGUMENT', `tensor sizes: no dims given for graph input ${name}`);
    inputs.set(name, { dims: [...dims], itemBytes: 4 });
  }
  const shapes = inferShapes(model, inputs, refuse);
  // Graph order: initializers, inputs, then each node's outputs.
  const names = [...initializers, ...inputs.keys(), ...(graph.node ?? []).flatMap((n) => n.output ?? [])];
  const tensors: TensorSize[] = [];
  for (const name of names) {
    const s = shapes.get(name);
    if (s) tensors.push({ name, dims: [...s.dims], bytes: bytesOf(s) });
  }
  const outputs: Record<string, number[]> = {};
  for (const o of graph.output ?? []) {
    const s = shapes.get(o.name ?? '');
    if (s) outputs[o.name ?? ''] = [...s.dims];
  }
  const largest = tensors.reduce((a, b) => (b.bytes > a.bytes ? b : a), { name: '', dims: [], bytes: 0 });
  let widestNode: NodeStorageBuffers = { node: '', op: '', buffers: 0 };
  for (const node of graph.node ?? []) {
    const buffers = storageBuffersOf(node, shapes);
    if (buffers > widestNode.buffers) widestNode = { node: node.name ?? '', op: node.op_type ?? '', buffers };
  }
  return { largest, widestNode, outputs, tensors };
}
