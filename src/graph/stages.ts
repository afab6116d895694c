// Staged graphs: a built model cut at its sync regions (sync.ts) into a sequence of steps —
// stages (runs of nodes between regions, each its own ONNX model) and the regions themselves —
// so a sharded run can synchronise between stages. The cut works on value names alone, on the
// very model the fused path runs: a stage's inputs are the values it reads that earlier steps
// produce, its outputs the values it produces that later steps (or the graph output) read, and
// it carries the initializers its nodes use. Constant and Shape nodes are copied into every
// stage that reads them rather than passed between stages (their values are not float32
// activations, and a Shape must describe the tensor the stage actually holds).

import { DistVaeError } from '../errors.js';
import type { ModelProto, NodeProto, TensorProto, ValueInfoProto } from './onnx-proto.js';
import { DataType } from './onnx-proto.js';
import { syncRegionsOf, type AttentionRegion, type GroupNormRegion, type SyncRegion } from './sync.js';

/** A run of the node list: a stage between regions, or one region. */
export type Segment = { kind: 'stage'; index: number; nodes: NodeProto[] } | { kind: 'region'; region: SyncRegion; nodes: NodeProto[] };

/** One extracted model with its interface. */
export interface Subgraph {
  model: ModelProto;
  inputs: string[];
  outputs: string[];
}

export type StagedStep =
  | { kind: 'stage'; index: number; graph: Subgraph }
  | { kind: 'group-norm'; region: GroupNormRegion }
  /**
   * `core` computes the region's output from query, key and value (run on gathered keys and
   * values). With a `summary` (sync.ts), `partial` computes it from a band's keys and values and
   * `apply` the output from the queries and the summed summary, the core's two halves.
   */
  /**
   * With a frame-causal mask (sync.ts), `frameCausal` is the core without its mask nodes (the
   * softmax reads the raw scores): run on one query frame's queries with the keys and values of
   * that frame and earlier, it equals the masked core on those queries.
   */
  | {
      kind: 'attention';
      region: AttentionRegion;
      core: Subgraph;
      split?: { partial: Subgraph; apply: Subgraph };
      frameCausal?: Subgraph;
    };

export interface StagedGraph {
  /** The fused graph's single input and output. */
  input: string;
  output: string;
  steps: StagedStep[];
}

/** Nodes (with pass-through Constant/Shape producers) that are copied rather than cut. */
const COPIED_OPS = new Set(['Constant', 'Shape']);

function graphOf(model: ModelProto) {
  const graph = model.graph;
  if (!graph?.node) throw new DistVaeError('INVALID_ARGUMENT', 'the model has no graph nodes');
  return { ...graph, node: graph.node };
}

/** The single input and output a decoder graph must have. */
export function graphIO(model: ModelProto): { input: string; output: string } {
  const g = graphOf(model);
  if (g.input?.length !== 1 || g.output?.length !== 1) {
    throw new DistVaeError(
      'UNSUPPORTED',
      `graph ${g.name ?? ''} has ${g.input?.length ?? 0} inputs and ${g.output?.length ?? 0} outputs; staging needs exactly one of each`,
    );
  }
  return { input: g.input[0]!.name!, output: g.output[0]!.name! };
}

/** Cuts the node list at the model's sync regions (each a contiguous run of nodes). */
export function segmentGraph(model: ModelProto, regions: readonly SyncRegion[] = syncRegionsOf(model)): Segment[] {
  const nodes = graphOf(model).node;
  const regionOf = new Map<string, number>();
  regions.forEach((r, i) => {
    for (const n of r.nodes) regionOf.set(n, i);
  });
  const segments: Segment[] = [];
  let stage: NodeProto[] = [];
  let stages = 0;
  const closeStage = () => {
    if (stage.length > 0) segments.push({ kind: 'stage', index: stages++, nodes: stage });
    stage = [];
  };
  for (let i = 0; i < nodes.length;) {
    const r = regionOf.get(nodes[i]!.name ?? '');
    if (r === undefined) {
      stage.push(nodes[i++]!);
      continue;
    }
    const region = regions[r]!;
    const run = nodes.slice(i, i + region.nodes.length);
    if (run.length !== region.nodes.length || run.some((n, k) => n.name !== region.nodes[k])) {
      throw new DistVaeError(
        'INVALID_ARGUMENT',
        `sync region ${region.name} (${region.kind}) is not a contiguous run of ${region.nodes.length} nodes starting at ${region.nodes[0]}`,
      );
    }
    closeStage();
    segments.push({ kind: 'region', region, nodes: run });
    i += run.length;
  }
  closeStage();
  return segments;
}

/**
 * The model of `nodes` (a topologically ordered run of `model`'s nodes) computing `outputs`:
 * inputs are the values read but not produced (Constant and Shape producers are copied in),
 * initializers those read.
 */
export function extractSubgraph(model: ModelProto, nodes: readonly NodeProto[], outputs: readonly string[], name: string): Subgraph {
  const g = graphOf(model);
  const order = new Map<NodeProto, number>(g.node.map((n, i) => [n, i]));
  const producer = new Map<string, NodeProto>();
  for (const n of g.node) for (const o of n.output ?? []) producer.set(o, n);
  const initializers = new Map<string, TensorProto>((g.initializer ?? []).map((t) => [t.name!, t]));
  const chosen = new Set<NodeProto>(nodes);
  const produced = new Set<string>();
  const inputs: string[] = [];
  const usedInitializers: TensorProto[] = [];
  // Pull in copied producers until every read value is produced, an initializer or an input.
  for (let changed = true; changed;) {
    changed = false;
    for (const n of chosen) for (const o of n.output ?? []) produced.add(o);
    for (const n of [...chosen]) {
      for (const i of n.input ?? []) {
        if (!i || produced.has(i) || initializers.has(i)) continue;
        const p = producer.get(i);
        if (p && COPIED_OPS.has(p.op_type ?? '') && !chosen.has(p)) {
          chosen.add(p);
          changed = true;
        }
      }
    }
  }
  const sorted = [...chosen].sort((a, b) => order.get(a)! - order.get(b)!);
  const seen = new Set<string>();
  for (const n of sorted) {
    for (const i of n.input ?? []) {
      if (!i || produced.has(i) || seen.has(i)) continue;
      seen.add(i);
      const init = initializers.get(i);
      if (init) usedInitializers.push(init);
      else inputs.push(i);
    }
  }
  for (const o of outputs)
    if (!produced.has(o)) throw new DistVaeError('INVALID_ARGUMENT', `subgraph ${name} cannot output ${o}: none of its nodes produces it`);
  const floatValue = (n: string): ValueInfoProto => ({ name: n, type: { tensor_type: { elem_type: DataType.FLOAT } } });
  return {
    inputs,
    outputs: [...outputs],
    model: {
      ...(model.ir_version !== undefined ? { ir_version: model.ir_version } : {}),
      ...(model.opset_import ? { opset_import: model.opset_import } : {}),
      ...(model.producer_name ? { producer_name: model.producer_name } : {}),
      graph: { name, node: sorted, initializer: usedInitializers, input: inputs.map(floatValue), output: outputs.map(floatValue) },
    },
  };
}

/**
 * The attention core of `nodes` without the mask that rewrites `mask.scores` into `mask.masked`:
 * the mask's own nodes (traced back from `masked` to `scores`) are dropped and their readers
 * read the scores.
 */
function unmaskedCore(model: ModelProto, nodes: readonly NodeProto[], region: AttentionRegion): Subgraph {
  const { scores, masked } = region.mask!;
  const producer = new Map<string, NodeProto>();
  for (const n of nodes) for (const o of n.output ?? []) producer.set(o, n);
  const dropped = new Set<NodeProto>();
  const trace = (name: string) => {
    const n = producer.get(name);
    if (name === scores || !n || dropped.has(n)) return;
    dropped.add(n);
    for (const i of n.input ?? []) if (i) trace(i);
  };
  trace(masked);
  const rewired = new Map<NodeProto, NodeProto>();
  for (const n of graphOf(model).node) {
    if (dropped.has(n)) continue;
    rewired.set(n, (n.input ?? []).includes(masked) ? { ...n, input: n.input!.map((i) => (i === masked ? scores : i)) } : n);
  }
  const unmasked: ModelProto = { ...model, graph: { ...graphOf(model), node: [...rewired.values()] } };
  const kept = nodes.filter((n) => !dropped.has(n)).map((n) => rewired.get(n)!);
  return extractSubgraph(unmasked, kept, [region.output], `${graphOf(model).name ?? 'graph'}_${region.name}_unmasked`);
}

/** The model as steps: stage models between the sync regions, and the regions. */
export function stageGraph(model: ModelProto, regions: readonly SyncRegion[] = syncRegionsOf(model)): StagedGraph {
  const g = graphOf(model);
  const io = graphIO(model);
  const segments = segmentGraph(model, regions);
  const consumerSegments = new Map<string, number>();
  segments.forEach((s, i) => {
    for (const n of s.nodes) for (const v of n.input ?? []) if (v) consumerSegments.set(v, Math.max(consumerSegments.get(v) ?? -1, i));
  });
  const steps: StagedStep[] = segments.map((s, i) => {
    if (s.kind === 'region') {
      const r = s.region;
      if (r.kind === 'group-norm') return { kind: 'group-norm', region: r };
      const core = extractSubgraph(model, s.nodes, [r.output], `${g.name ?? 'graph'}_${r.name}_core`);
      if (r.mask?.kind === 'frame-causal') return { kind: 'attention', region: r, core, frameCausal: unmaskedCore(model, s.nodes, r) };
      if (!r.summary) return { kind: 'attention', region: r, core };
      // The summary's own nodes (traced back from it inside the region), then the rest.
      const producer = new Map<string, NodeProto>();
      for (const n of s.nodes) for (const o of n.output ?? []) producer.set(o, n);
      const own = new Set<NodeProto>();
      const trace = (name: string) => {
        const n = producer.get(name);
        if (!n || own.has(n)) return;
        own.add(n);
        for (const i of n.input ?? []) if (i) trace(i);
      };
      trace(r.summary.value);
      const partial = extractSubgraph(model, [...own], [r.summary.value], `${g.name ?? 'graph'}_${r.name}_partial`);
      const apply = extractSubgraph(
        model,
        s.nodes.filter((n) => !own.has(n)),
        [r.output],
        `${g.name ?? 'graph'}_${r.name}_apply`,
      );
      return { kind: 'attention', region: r, core, split: { partial, apply } };
    }
    const outputs: string[] = [];
    for (const n of s.nodes) {
      if (COPIED_OPS.has(n.op_type ?? '')) continue;
      for (const o of n.output ?? []) if (o === io.output || (consumerSegments.get(o) ?? -1) > i) outputs.push(o);
    }
    return { kind: 'stage', index: s.index, graph: extractSubgraph(model, s.nodes, outputs, `${g.name ?? 'graph'}_stage_${s.index}`) };
  });
  return { ...io, steps };
}
