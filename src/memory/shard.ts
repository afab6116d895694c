// A row-sharded rank's peak, walked step by step through the shard plan
// (strategies/shard/plan.ts) as the staged decoder runs it: at each step the rank holds the band
// rows of every value a later step still reads and the buffers its pool keeps for reuse, plus
// the step's own work — a stage's band model run over band + halo rows (stage sessions run
// without an arena, so only the running step counts; the halo joins and crops are in the band
// model, so its liveness counts them) with the halo rows received; an attention's gathered keys
// and values and one query chunk's scores. Edge ranks read a halo on one side, middle ranks on
// both. Sizes come from the whole graph's static shapes with the row axis cut to the band.

import type { ModelProto } from '../graph/onnx-proto.js';
import { wholeTimes } from '../graph/ratio.js';
import { bandRows, haloRows, type Band } from '../strategies/shard/bands.js';
import { bandName } from '../strategies/shard/band-models.js';
import { layoutOf, rowUnit, shardPlan, type ShardPlan } from '../strategies/shard/plan.js';
import { peakOf } from './liveness.js';
import { bytesOf, elements, inferShapes, type ValueShape } from './shapes.js';

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
  /** Largest bytes held at any step (values kept for later steps, the pool, the step's work). */
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
  const latentCols = whole.get(staged.input)!.dims.at(-1)!;
  /** A value's dims with `entries` on its row axis. */
  const cut = (name: string, entries: number): number[] => {
    const f = layoutOf(plan, name);
    const dims = [...whole.get(name)!.dims];
    dims[f.rowAxis] = entries;
    return dims;
  };
  const rowsOf = (name: string, halo = { num: 0, den: 1 }) => {
    const f = layoutOf(plan, name);
    const unit = rowUnit(f, latentCols);
    const own = bandRows(band, f.scale.rows);
    const read = haloRows(band, halo, latentRows, f.scale.rows);
    return { unit, own, read, all: wholeTimes(latentRows, f.scale.rows) };
  };
  const bandBytes = (name: string) => {
    const r = rowsOf(name);
    return 4 * elements(cut(name, (r.own.to - r.own.from) * r.unit));
  };
  // Values held for later steps (bytes), and the staged decoder's pool of dropped stage outputs.
  const held = new Map<string, number>([[staged.input, bandBytes(staged.input)]]);
  const pooled = new Set<string>();
  const free = new Map<number, number>();
  const take = (bytes: number) => {
    const n = free.get(bytes) ?? 0;
    if (n > 0) free.set(bytes, n - 1);
  };
  const freeBytes = () => [...free].reduce((a, [bytes, n]) => a + bytes * n, 0);
  let peak = 0;
  let peakStep = 0;
  let maxTensor = 0;
  const scan = (p: { peakBytes: number; maxTensorBytes: number }) => {
    maxTensor = Math.max(maxTensor, p.maxTensorBytes);
    return p.peakBytes;
  };
  plan.steps.forEach((step, i) => {
    let work = 0;
    if (step.kind === 'stage') {
      const { band: m, halo } = step;
      const dims: Record<string, number[]> = {};
      const values: Record<string, number[]> = {};
      for (const name of m.inputs) {
        const r = rowsOf(name, halo);
        if (m.halo) {
          const above = (r.own.from - r.read.from) * r.unit;
          const below = (r.read.to - r.own.to) * r.unit;
          dims[bandName.above(name)] = cut(name, above);
          dims[bandName.band(name)] = cut(name, (r.own.to - r.own.from) * r.unit);
          dims[bandName.below(name)] = cut(name, below);
          // The halo rows as received, and joined when they come from more than one rank.
          work += 2 * 4 * (elements(cut(name, above)) + elements(cut(name, below)));
        } else {
          dims[name] = cut(name, (r.own.to - r.own.from) * r.unit);
        }
      }
      for (const r of m.applies) {
        const length = whole.get(r.input)!.dims[0]! * whole.get(r.input)!.dims[1]!;
        for (const name of [bandName.scale(r.output), bandName.shift(r.output), bandName.zero(r.output), bandName.one(r.output)])
          dims[name] = [length];
      }
      for (const name of m.outputs) {
        const r = rowsOf(name, halo);
        if (m.halo) {
          dims[bandName.crop(name)] = [2];
          values[bandName.crop(name)] = [(r.own.from - r.read.from) * r.unit, (r.own.to - r.read.from) * r.unit];
        }
        take(bandBytes(name));
      }
      work += scan(peakOf(m.model, inferShapes(m.model, dims, values)));
      for (const name of m.outputs) {
        held.set(name, bandBytes(name));
        pooled.add(name);
      }
    } else if (step.kind === 'attention') {
      const { region, core } = step;
      const kv = bytesOf(whole.get(region.key)!) + bytesOf(whole.get(region.value)!);
      // Every band's keys and values as received, then joined.
      work += 2 * kv;
      const keys = whole.get(region.key)!.dims[2]!;
      const r = rowsOf(region.query);
      const bandQueries = (r.own.to - r.own.from) * r.unit;
      const chunk = Math.min(bandQueries, Math.max(1, Math.floor(ATTENTION_CHUNK_ELEMENTS / Math.max(1, keys))));
      const dims: Record<string, number[]> = {
        [region.query]: cut(region.query, chunk),
        [region.key]: [...whole.get(region.key)!.dims],
        [region.value]: [...whole.get(region.value)!.dims],
      };
      work += scan(peakOf(core.model, inferShapes(core.model, dims)));
      maxTensor = Math.max(maxTensor, kv / 2);
      // The chunks' outputs, then joined.
      work += 2 * bandBytes(region.output);
      held.set(region.output, bandBytes(region.output));
    }
    const keptBytes = [...held.values()].reduce((a, b) => a + b, 0) + freeBytes();
    if (keptBytes + work > peak) {
      peak = keptBytes + work;
      peakStep = i;
    }
    for (const name of [...held.keys()]) {
      if ((plan.lastUse.get(name) ?? -1) > i) continue;
      if (pooled.has(name)) free.set(held.get(name)!, (free.get(held.get(name)!) ?? 0) + 1);
      held.delete(name);
    }
  });
  return { peakBytes: peak, step: peakStep, maxTensorBytes: maxTensor };
}
