// A row-sharded rank's activation peak, walked step by step through the shard plan
// (strategies/shard/plan.ts) as the staged decoder runs it: at each step the rank holds the band
// rows of every value a later step still reads, plus the step's own work — a stage session's
// activation peak over band + halo rows (stage sessions run without an arena, so only the step
// that runs counts) with its halo-extended inputs, its outputs and their band crops; a
// GroupNorm's output buffer; an attention's gathered keys and values and one query chunk's
// scores. Edge ranks read a halo on one side, middle ranks on both, so their peaks differ.
// Sizes come from the whole graph's static shapes, scaled by the rows a band reads.

import type { ModelProto } from '../graph/onnx-proto.js';
import { bandRows, haloRows, type Band } from '../strategies/shard/bands.js';
import { shardPlan, type ShardPlan } from '../strategies/shard/plan.js';
import { peakOf } from './liveness.js';
import { bytesOf, inferShapes, type ValueShape } from './shapes.js';

/** Scores one attention chunk holds (queries × keys), as the staged decoder chunks them. */
const ATTENTION_CHUNK_ELEMENTS = 1 << 24;

const plans = new WeakMap<ModelProto, ShardPlan>();

function planOf(model: ModelProto): ShardPlan {
  let plan = plans.get(model);
  if (!plan) {
    plan = shardPlan(model);
    plans.set(model, plan);
  }
  return plan;
}

export interface ShardHold {
  /** Largest bytes held at any step (values kept for later steps plus the step's work). */
  peakBytes: number;
  /** The step where it is reached. */
  step: number;
  /** Largest single tensor of any step (a stage's, an attention chunk's, the joined keys). */
  maxTensorBytes: number;
}

/** The peak of `band` in a row-sharded decode of `model` whose whole-graph shapes are `whole`. */
export function shardRankHold(model: ModelProto, whole: ReadonlyMap<string, ValueShape>, band: Band, latentRows: number): ShardHold {
  const plan = planOf(model);
  const { staged } = plan;
  const size = (name: string) => {
    const s = whole.get(name);
    return s ? bytesOf(s) : 0;
  };
  const fraction = (name: string, read: boolean, halo = plan.halos[0]!): number => {
    const f = plan.locality.values.get(name);
    const scale = f?.scale.rows ?? { num: 1, den: 1 };
    const all = bandRows({ rank: 0, start: 0, end: latentRows }, scale);
    const rows = read ? haloRows(band, halo, latentRows, scale) : bandRows(band, scale);
    return (rows.to - rows.from) / Math.max(1, all.to - all.from);
  };
  const held = new Map<string, number>([[staged.input, size(staged.input) * fraction(staged.input, false)]]);
  let peak = 0;
  let peakStep = 0;
  let maxTensor = 0;
  const scan = (p: { peakBytes: number; maxTensorBytes: number }) => {
    maxTensor = Math.max(maxTensor, p.maxTensorBytes);
    return p.peakBytes;
  };
  staged.steps.forEach((step, i) => {
    const keptBytes = [...held.values()].reduce((a, b) => a + b, 0);
    let work = 0;
    const outputs: string[] = [];
    if (step.kind === 'stage') {
      const halo = plan.halos[i]!;
      const withHalo = halo.num !== 0;
      const readFraction = fraction(step.graph.inputs[0] ?? staged.input, true, halo);
      // The stage session's own buffers over band + halo rows (outputs included), freed when it returns.
      const scaled = new Map<string, ValueShape>();
      for (const [name, s] of whole) scaled.set(name, { dims: [Math.round(bytesOf(s) * (s.values ? 1 : readFraction))], itemBytes: 1 });
      work += scan(peakOf(step.graph.model, scaled));
      for (const name of step.graph.inputs) if (withHalo) work += size(name) * fraction(name, true, halo);
      for (const name of step.graph.outputs) {
        // The outputs copied out of onnxruntime, and cropped to the band when a halo was read.
        work += size(name) * fraction(name, true, halo);
        if (withHalo) work += size(name) * fraction(name, false);
        outputs.push(name);
      }
    } else if (step.kind === 'group-norm') {
      work += size(step.region.output) * fraction(step.region.output, false);
      outputs.push(step.region.output);
    } else {
      const { region, core } = step;
      const kv = size(region.key) + size(region.value);
      // Every band's keys and values as received, then joined.
      work += 2 * kv;
      const keys = whole.get(region.key)!.dims[2]!;
      const bandQueries = Math.round(whole.get(region.query)!.dims[1]! * fraction(region.query, false));
      const chunk = Math.min(bandQueries, Math.max(1, Math.floor(ATTENTION_CHUNK_ELEMENTS / Math.max(1, keys))));
      const q = [...whole.get(region.query)!.dims];
      q[1] = chunk;
      const dims: Record<string, number[]> = { [region.query]: q, [region.key]: [...whole.get(region.key)!.dims], [region.value]: [...whole.get(region.value)!.dims] };
      work += scan(peakOf(core.model, inferShapes(core.model, dims)));
      maxTensor = Math.max(maxTensor, kv / 2);
      // The chunks' outputs, then joined.
      work += 2 * size(region.output) * fraction(region.output, false);
      outputs.push(region.output);
    }
    if (keptBytes + work > peak) {
      peak = keptBytes + work;
      peakStep = i;
    }
    for (const name of outputs) held.set(name, size(name) * fraction(name, false));
    for (const name of [...held.keys()]) if ((plan.lastUse.get(name) ?? -1) <= i) held.delete(name);
  });
  return { peakBytes: peak, step: peakStep, maxTensorBytes: maxTensor };
}
