// A row-sharded rank's peak, walked step by step through the shard plan
// (strategies/shard/plan.ts) as the staged decoder runs it: at each step the rank holds the band
// rows of every value a later step still reads and the buffers its pool keeps for reuse, plus
// the step's own work — a stage's band model run over band + halo rows (stage sessions run
// without an arena, so only the running step counts; the halo joins and crops are in the band
// model, so its liveness counts them) with the halo rows received; an attention's gathered keys
// and values and one query chunk's scores. Edge ranks read a halo on one side, middle ranks on
// both. Sizes come from the whole graph's static shapes with the row axis cut to the band.
// The plan is the float32 graph's, as a rank builds it; in float16 each stage's and attention
// core's model is rewritten as its session opens it (graph/precision.ts), so a step's work is
// the rewritten model's liveness (2-byte activations, its Casts), while the values between
// steps stay float32 (a rewritten graph's inputs and outputs are float32).
//
// Stage sessions run without an arena, so every tensor is a malloc of its own, and glibc's
// allocator adds what the graph does not show (liveness.ts `heapServedBytes`): tensors under
// its dynamic mmap threshold (at most 32 MiB) come from the heap, whose freed chunks stay
// resident. A rank whose band makes a level's tensors just under 32 MiB (the edge ranks of TAEF2
// at 1024² on 3 ranks: 27.5 MiB at half resolution; the middle rank's are 33.5 MiB, mapped)
// ends its last stage with hundreds of MiB of freed heap still resident; with the threshold fixed
// (MALLOC_MMAP_THRESHOLD_=4194304) the same ranks peak at their liveness (measured, see
// bench/results/memory-model.md). The walk carries the threshold and the heap from step to step:
// a later run reuses the chunks an earlier one left, so the heap holds the most any run so far
// had served from it (the `heap` term, scaled by the calibration's heapFactor: the share of those
// bytes still resident at the peak).

import type { ModelProto } from '../graph/onnx-proto.js';
import { modelInPrecision, type Precision } from '../graph/precision.js';
import { wholeTimes } from '../graph/ratio.js';
import { bandRows, haloRows, type Band } from '../strategies/shard/bands.js';
import { bandName } from '../strategies/shard/band-models.js';
import { isFramed, layoutOf, predictCollectives, rowUnit, shardPlan, type ShardPlan } from '../strategies/shard/plan.js';
import { heapServedBytes, MMAP_THRESHOLD_START, peakOf, type MallocThreshold } from './liveness.js';
import { bytesOf, elements, type ValueShape } from '../graph/ops.js';
import { inferShapes } from './shapes.js';

/** Scores one attention chunk holds (queries × keys), as the staged decoder chunks them. */
const ATTENTION_CHUNK_ELEMENTS = 1 << 24;

const plans = new WeakMap<ModelProto, { halos?: ShardPlan; single?: ShardPlan }>();

/**
 * The shard plan of `model` (memoised per model): with halo joins, or without them when one band
 * covers the image, as a rank builds it (strategies/shard/rank-program.ts).
 */
export function planOf(model: ModelProto, halos = true): ShardPlan {
  let known = plans.get(model);
  if (!known) plans.set(model, (known = {}));
  const key = halos ? 'halos' : 'single';
  return (known[key] ??= shardPlan(model, { halos }));
}

export interface ShardHold {
  /** Bytes held at the peak step (values kept for later steps, the pool, the step's work). */
  peakBytes: number;
  /** Bytes glibc's heap holds at the peak step: the most any stage run so far had served from it. */
  heapBytes: number;
  /** The step where it is reached. */
  step: number;
  /** Largest single tensor of any step (a stage's, an attention chunk's, the joined keys). */
  maxTensorBytes: number;
}

const rewritten = new WeakMap<ModelProto, ModelProto>();

/** A step's model as its session runs it in `precision` (memoised: the plan's models are memoised too). */
function inPrecision(model: ModelProto, precision: Precision): ModelProto {
  if (precision === 'fp32') return model;
  let known = rewritten.get(model);
  if (!known) rewritten.set(model, (known = modelInPrecision(model, precision)));
  return known;
}

/** How a rank's walk is weighed and run. */
export interface ShardHoldOptions {
  /** Resident heap bytes per held byte: the calibration's heapFactor over its shardFactor (default 0). */
  heapWeight?: number;
  /** The rank process's mmap threshold at its start: glibc's dynamic one, or one fixed in its environment. */
  start?: MallocThreshold;
  /** The precision the stage sessions compute in (default fp32). */
  precision?: Precision;
}

/**
 * The peak of `band` in a row-sharded decode of `model` (the float32 graph) whose whole-graph
 * shapes are `whole`: the step with the largest held + work + heapWeight × heap.
 */
export function shardRankHold(
  model: ModelProto,
  whole: ReadonlyMap<string, ValueShape>,
  band: Band,
  latentRows: number,
  options: ShardHoldOptions = {},
): ShardHold {
  const { heapWeight = 0, start = { bytes: MMAP_THRESHOLD_START }, precision = 'fp32' } = options;
  const plan = planOf(model, band.start > 0 || band.end < latentRows);
  const { staged } = plan;
  const latentCols = whole.get(staged.input)!.dims.at(-1)!;
  const rowsOf = (name: string, halo = { num: 0, den: 1 }) => {
    const f = layoutOf(plan, name);
    const unit = rowUnit(f, latentCols);
    const own = bandRows(band, f.scale.rows);
    const read = haloRows(band, halo, latentRows, f.scale.rows);
    return { unit, own, read, all: wholeTimes(latentRows, f.scale.rows) };
  };
  /**
   * A value's dims with `entries` on its row axis — per frame for frame-major tokens (video),
   * whose row axis then holds frames × entries, or, as a band model is fed them (`view`), is
   * split into (frames, entries).
   */
  const cut = (name: string, entries: number, view = false): number[] => {
    const f = layoutOf(plan, name);
    const dims = [...whole.get(name)!.dims];
    if (!isFramed(f)) {
      dims[f.rowAxis] = entries;
      return dims;
    }
    const r = rowsOf(name);
    const frames = dims[f.rowAxis]! / (r.all * r.unit);
    dims.splice(f.rowAxis, 1, ...(view ? [frames, entries] : [frames * entries]));
    return dims;
  };
  const framesOfValue = (name: string): number => {
    const r = rowsOf(name);
    return whole.get(name)!.dims[layoutOf(plan, name).rowAxis]! / (r.all * r.unit);
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
  let peakHeap = 0;
  let peakStep = 0;
  let score = -1;
  const threshold = { ...start };
  let heap = 0;
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
          dims[bandName.above(name)] = cut(name, above, true);
          dims[bandName.band(name)] = cut(name, (r.own.to - r.own.from) * r.unit, true);
          dims[bandName.below(name)] = cut(name, below, true);
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
          const bounds = [(r.own.from - r.read.from) * r.unit, (r.own.to - r.read.from) * r.unit];
          // Frame-major tokens are cropped per frame, the frame count fed with the bounds.
          values[bandName.crop(name)] = isFramed(layoutOf(plan, name)) ? [...bounds, framesOfValue(name)] : bounds;
          dims[bandName.crop(name)] = [values[bandName.crop(name)]!.length];
        }
        take(bandBytes(name));
      }
      const stage = inPrecision(m.model, precision);
      const shapes = inferShapes(stage, dims, values);
      work += scan(peakOf(stage, shapes));
      heap = Math.max(heap, heapServedBytes(stage, shapes, threshold));
      for (const name of m.outputs) {
        held.set(name, bandBytes(name));
        pooled.add(name);
      }
    } else if (step.kind === 'attention') {
      const { region } = step;
      // A frame-causal core runs unmasked per query frame; its largest run reads every key (the last frame).
      const core = step.frameCausal ?? step.core;
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
      const attend = inPrecision(core.model, precision);
      const shapes = inferShapes(attend, dims);
      work += scan(peakOf(attend, shapes));
      heap = Math.max(heap, heapServedBytes(attend, shapes, threshold));
      maxTensor = Math.max(maxTensor, kv / 2);
      // The chunks' outputs, then joined.
      work += 2 * bandBytes(region.output);
      held.set(region.output, bandBytes(region.output));
    }
    const keptBytes = [...held.values()].reduce((a, b) => a + b, 0) + freeBytes();
    if (keptBytes + work + heapWeight * heap > score) {
      score = keptBytes + work + heapWeight * heap;
      peak = keptBytes + work;
      peakHeap = heap;
      peakStep = i;
    }
    for (const name of [...held.keys()]) {
      if ((plan.lastUse.get(name) ?? -1) > i) continue;
      if (pooled.has(name)) free.set(held.get(name)!, (free.get(held.get(name)!) ?? 0) + 1);
      held.delete(name);
    }
  });
  return { peakBytes: peak, heapBytes: peakHeap, step: peakStep, maxTensorBytes: maxTensor };
}

/**
 * The largest single message a coordinator relays between its row-sharded rank processes (one
 * rank's halo rows for one reader, or its attention keys and values for one peer): the IPC
 * channel reads a message in 64 KiB chunks from glibc's heap, joins, deserialises and serialises
 * it again, so what stays resident grows with the largest message rather than with the bytes in
 * all (measured, coordinator over its fixed cost: SD 1024² on 2 ranks, 32 MiB messages, ~150 MiB;
 * 768² on 3 ranks, more bytes in all but 12 MiB messages, ~70 MiB).
 */
export function shardRelayBytes(model: ModelProto, bands: readonly Band[], latentRows: number, latentCols: number, batch: number): number {
  const plan = planOf(model);
  const peers = Math.max(1, bands.length - 1);
  let largest = 0;
  // The collectives' counters are per rank over the steps they are given: one step at a time,
  // a rank's bytes over its calls are its message at that step (a middle rank's halo rows for the
  // reader above and the one below are alike, so their mean stands for either).
  for (const step of plan.steps) {
    for (const c of predictCollectives({ ...plan, steps: [step] }, bands, latentRows, latentCols, batch)) {
      if (Number.isFinite(c.send.bytes) && c.send.calls) largest = Math.max(largest, c.send.bytes / c.send.calls);
      if (Number.isFinite(c.allGather.bytes) && c.allGather.calls)
        largest = Math.max(largest, c.allGather.bytes / c.allGather.calls / peers);
    }
  }
  return largest;
}
