// Band models: each stage of a row-sharded decode as the ONNX model one rank runs on its band,
// so that no pass over activations happens in JS (docs/design.md §6). Built from the stage cut
// (graph/stages.ts) by adding nodes around the stage's own:
// - halo joins: with a halo, every activation input X is fed as three tensors — the rows from
//   the ranks above (`X::above`), the band's own (`X::band`) and those from below (`X::below`),
//   any of which may be empty — and concatenated in-graph, so JS never copies a band to extend it;
// - GroupNorm application: a stage that reads a GroupNorm's output Y reads its input X instead,
//   with the merged statistics folded per (sample, channel) into a scale and a shift
//   (`Y::scale`, `Y::shift`, [B·C]), and computes Y = X·scale + shift as one
//   BatchNormalization pass over X viewed as [1, B·C, −1] (its own statistics fed as the
//   identity, `Y::zero` and `Y::one`, as the fused graph's affine does; graph/group-norm.ts);
// - crops: with a halo, every output O is cut back to the band's rows in-graph (`O::cropped`),
//   by row bounds fed as float32 `O::crop` = [from, to) in entries of O's row axis;
// - band statistics: a stage that outputs a GroupNorm's input X also outputs the mean and the
//   sum of squared deviations about it (`X::mean`, `X::m2`) of every row of its band's own rows
//   (X's last axis, e.g. [B, C, rows, 1]) — two float32 passes, each summing one row, so
//   rounding stays at a row's length (a float32 sum over a whole group of millions of elements
//   drifted to 1.8e-3 max abs at 512²) — which JS merges per group in float64 and the one
//   all-gather merges across bands (group-norm.ts).

import { attr } from '../../graph/attributes.js';
import { DataType, type ModelProto, type NodeProto, type TensorProto, type ValueInfoProto } from '../../graph/onnx-proto.js';
import type { Subgraph } from '../../graph/stages.js';
import type { GroupNormRegion } from '../../graph/sync.js';
import { int64TensorProto } from '../../graph/tensor-proto.js';

/** Names of the values a band model adds, derived from the value they belong to. */
export const bandName = {
  above: (v: string) => `${v}::above`,
  band: (v: string) => `${v}::band`,
  below: (v: string) => `${v}::below`,
  crop: (v: string) => `${v}::crop`,
  cropped: (v: string) => `${v}::cropped`,
  scale: (y: string) => `${y}::scale`,
  shift: (y: string) => `${y}::shift`,
  zero: (y: string) => `${y}::zero`,
  one: (y: string) => `${y}::one`,
  mean: (x: string) => `${x}::mean`,
  m2: (x: string) => `${x}::m2`,
};

/** The BatchNormalization epsilon of the in-graph affine; its fed variance is 1 − ε, so var + ε rounds to 1. */
export const AFFINE_EPSILON = 1e-5;

export interface BandModelSpec {
  stage: Subgraph;
  /** Whether the stage runs on band + halo rows (then inputs are joined and outputs cropped in-graph). */
  halo: boolean;
  /** The row axis of each activation the stage reads or outputs. */
  rowAxis: (value: string) => number;
  /** GroupNorms whose output the stage reads: applied in-graph to their input. */
  applies: readonly GroupNormRegion[];
  /** GroupNorms whose input the stage outputs: band statistics computed in-graph. */
  stats: readonly GroupNormRegion[];
}

export interface BandModel {
  model: ModelProto;
  halo: boolean;
  /** Activations the stage reads (each fed as above / band / below with a halo). */
  inputs: string[];
  /** Activations it outputs (named `…::cropped` in the model with a halo). */
  outputs: string[];
  applies: GroupNormRegion[];
  stats: GroupNormRegion[];
}

const floatValue = (name: string): ValueInfoProto => ({ name, type: { tensor_type: { elem_type: DataType.FLOAT } } });

/** The stage of `spec` as a band model. */
export function bandModel(spec: BandModelSpec): BandModel {
  const { stage, halo } = spec;
  const graph = stage.model.graph!;
  const applied = new Map(spec.applies.map((r) => [r.output, r]));
  const inputs = [...new Set(stage.inputs.map((v) => applied.get(v)?.input ?? v))];
  const nodes: NodeProto[] = [];
  const constants = new Map<string, TensorProto>();
  const int64 = (values: readonly number[]): string => {
    const name = `band::i64[${values.join(',')}]`;
    if (!constants.has(name)) constants.set(name, int64TensorProto(name, [values.length], values));
    return name;
  };
  let serial = 0;
  const node = (op: string, input: string[], output: string, attribute: NodeProto['attribute'] = []): string => {
    nodes.push({ op_type: op, input, output: [output], name: `band/${op}_${serial++}`, attribute });
    return output;
  };

  const feeds: string[] = [];
  for (const v of inputs) {
    if (!halo) {
      feeds.push(v);
      continue;
    }
    feeds.push(bandName.above(v), bandName.band(v), bandName.below(v));
    node('Concat', [bandName.above(v), bandName.band(v), bandName.below(v)], v, [attr.int('axis', spec.rowAxis(v))]);
  }
  for (const r of spec.applies) {
    const y = r.output;
    feeds.push(bandName.scale(y), bandName.shift(y), bandName.zero(y), bandName.one(y));
    const shape = node('Shape', [r.input], `${y}::shape`);
    const lead = node('Slice', [shape, int64([0]), int64([2])], `${y}::lead`);
    const channels = node('ReduceProd', [lead], `${y}::bc`, [attr.int('keepdims', 1)]);
    const target = node('Concat', [int64([1]), channels, int64([-1])], `${y}::target`, [attr.int('axis', 0)]);
    const flat = node('Reshape', [r.input, target], `${y}::flat`);
    const affine = node(
      'BatchNormalization',
      [flat, bandName.scale(y), bandName.shift(y), bandName.zero(y), bandName.one(y)],
      `${y}::affine`,
      [attr.float('epsilon', AFFINE_EPSILON)],
    );
    node('Reshape', [affine, shape], y);
  }
  nodes.push(...graph.node!);
  const outputs: string[] = [];
  for (const o of stage.outputs) {
    if (!halo) {
      outputs.push(o);
      continue;
    }
    feeds.push(bandName.crop(o));
    const bounds = node('Cast', [bandName.crop(o)], `${o}::crop_i64`, [attr.int('to', DataType.INT64)]);
    const from = node('Slice', [bounds, int64([0]), int64([1])], `${o}::crop_from`);
    const to = node('Slice', [bounds, int64([1]), int64([2])], `${o}::crop_to`);
    outputs.push(node('Slice', [o, from, to, int64([spec.rowAxis(o)])], bandName.cropped(o)));
  }
  for (const r of spec.stats) {
    const x = halo ? bandName.cropped(r.input) : r.input;
    const mean = node('ReduceMean', [x, int64([-1])], bandName.mean(r.input), [attr.int('keepdims', 1)]);
    const centred = node('Sub', [x, mean], `${r.input}::centred`);
    node('ReduceSumSquare', [centred, int64([-1])], bandName.m2(r.input), [attr.int('keepdims', 1)]);
    outputs.push(bandName.mean(r.input), bandName.m2(r.input));
  }
  return {
    halo,
    inputs,
    outputs: stage.outputs,
    applies: [...spec.applies],
    stats: [...spec.stats],
    model: {
      ...stage.model,
      graph: {
        ...graph,
        node: nodes,
        initializer: [...(graph.initializer ?? []), ...constants.values()],
        input: feeds.map(floatValue),
        output: outputs.map(floatValue),
      },
    },
  };
}
