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
// - frame-major tokens (a video's frames, rows and columns flattened): their halo pieces are fed
//   viewed as (…, frames, entries, …) and joined on the entries axis, their crop bounds are per
//   frame with the frame count fed as a third entry of `O::crop`, and either is merged back to
//   tokens in-graph, so each frame's rows are joined and cropped;
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
  /** Whether the row axis holds frame-major tokens (one block of rows per frame). */
  framed?: (value: string) => boolean;
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
  const framed = spec.framed ?? (() => false);
  const END = Number.MAX_SAFE_INTEGER;
  // Axes `axis` and `axis` + 1 of x merged into one (a framed view back to tokens).
  const merge = (x: string, axis: number, out: string): string => {
    const shape = node('Shape', [x], `${out}::view_shape`);
    const before = node('Slice', [shape, int64([0]), int64([axis])], `${out}::view_before`);
    const pair = node('Slice', [shape, int64([axis]), int64([axis + 2])], `${out}::view_pair`);
    const merged = node('ReduceProd', [pair], `${out}::view_merged`, [attr.int('keepdims', 1)]);
    const after = node('Slice', [shape, int64([axis + 2]), int64([END])], `${out}::view_after`);
    return node('Reshape', [x, node('Concat', [before, merged, after], `${out}::view_target`, [attr.int('axis', 0)])], out);
  };

  const feeds: string[] = [];
  for (const v of inputs) {
    if (!halo) {
      feeds.push(v);
      continue;
    }
    feeds.push(bandName.above(v), bandName.band(v), bandName.below(v));
    const axis = spec.rowAxis(v);
    const pieces = [bandName.above(v), bandName.band(v), bandName.below(v)];
    if (!framed(v)) node('Concat', pieces, v, [attr.int('axis', axis)]);
    else merge(node('Concat', pieces, `${v}::joined`, [attr.int('axis', axis + 1)]), axis, v);
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
    const axis = spec.rowAxis(o);
    if (!framed(o)) {
      outputs.push(node('Slice', [o, from, to, int64([axis])], bandName.cropped(o)));
      continue;
    }
    // Tokens viewed as (…, frames, entries per frame, …), cropped per frame, merged back.
    const frames = node('Slice', [bounds, int64([2]), int64([3])], `${o}::crop_frames`);
    const shape = node('Shape', [o], `${o}::crop_shape`);
    const before = node('Slice', [shape, int64([0]), int64([axis])], `${o}::crop_before`);
    const tokens = node('Slice', [shape, int64([axis]), int64([axis + 1])], `${o}::crop_tokens`);
    const perFrame = node('Div', [tokens, frames], `${o}::crop_per_frame`);
    const after = node('Slice', [shape, int64([axis + 1]), int64([END])], `${o}::crop_after`);
    const target = node('Concat', [before, frames, perFrame, after], `${o}::crop_view_target`, [attr.int('axis', 0)]);
    const view = node('Reshape', [o, target], `${o}::crop_view`);
    const cut = node('Slice', [view, from, to, int64([axis + 1])], `${o}::crop_cut`);
    outputs.push(merge(cut, axis, bandName.cropped(o)));
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
