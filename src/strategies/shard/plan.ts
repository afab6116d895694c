// The shard plan of a decoder model: its staged graphs (graph/stages.ts) with every stage as the
// band model a rank runs (band-models.ts: halo joins, crops, GroupNorm statistics and
// application in-graph), the locality report that gives every stage its halo and every value
// crossing a step its row layout, when each value is last read, and the collectives a run will
// make (so a run's counters can be checked against the analysis). Refuses — naming the ops — a
// model whose nonlocal ops are not all sync regions. The graph's input may be a decoder's latent
// or an encoder's image: bands count the input's rows, and the plan's granule says which band
// edges land on whole rows of every value (an encoder's down-sampled ones included).

import type { ShardExchange } from '../../families/runtime-types.js';
import type { CommCounters } from '../../ranks/program.js';
import { DistVaeError, reason, refuse } from '../../errors.js';
import { analyzeLocality, type LocalityReport, type SpatialFact } from '../../graph/locality.js';
import type { ModelProto } from '../../graph/onnx-proto.js';
import { wholeTimes, type Ratio } from '../../graph/ratio.js';
import { stageGraph, type StagedGraph, type StagedStep } from '../../graph/stages.js';
import type { GroupNormRegion } from '../../graph/sync.js';
import { tensorProtoValues } from '../../graph/tensor-proto.js';
import { bandRows, haloSources, rowsForReader, type Band } from './bands.js';
import { bandModel, bandName, type BandModel } from './band-models.js';
import type { GroupNormParams } from './group-norm.js';

/** One step of a band run. */
export type ShardStep =
  /** A stage as its band model, with its halo in latent rows. */
  | { kind: 'stage'; index: number; band: BandModel; halo: Ratio }
  /** The merge of a GroupNorm's band statistics (one all-gather) into its scale and shift. */
  | { kind: 'group-norm'; region: GroupNormRegion; params: GroupNormParams }
  | Extract<StagedStep, { kind: 'attention' }>;

/** How a decoder model is row-sharded: its staged graph, the locality report, every step as a rank runs it, and when each value is last read. */
export interface ShardPlan {
  staged: StagedGraph;
  locality: LocalityReport;
  steps: ShardStep[];
  /** Whether band models join halo rows (false: one band over the whole image only). */
  halos: boolean;
  /** Index of the last step that reads each value (the graph output is never dropped). */
  lastUse: Map<string, number>;
  /** Band edges (graph input rows) and the input's columns must be multiples of these (checkBandsAligned). */
  granule: { rows: number; cols: number };
}

/** What a plan's ranks exchange (FamilyRuntime.shardExchanges' words), each once, in the order the steps first need it. */
export function shardExchanges(plan: ShardPlan): ShardExchange[] {
  const seen = new Set<ShardExchange>();
  for (const step of plan.steps) {
    if (step.kind === 'stage') {
      if (step.halo.num > 0) seen.add('halo-rows');
    } else if (step.kind === 'group-norm') seen.add('group-norm-statistics');
    else if (step.frameCausal) seen.add('frame-causal-keys-values');
    else seen.add(step.split ? 'linear-attention-sums' : 'attention-keys-values');
  }
  return [...seen];
}

/** The values a step reads (band-model inputs, merged statistics, attention operands). */
export function stepReads(step: ShardStep): string[] {
  if (step.kind === 'stage')
    return [...step.band.inputs, ...step.band.applies.flatMap((r) => [bandName.scale(r.output), bandName.shift(r.output)])];
  if (step.kind === 'group-norm') return [step.region.input, bandName.mean(step.region.input), bandName.m2(step.region.input)];
  return [step.region.query, step.region.key, step.region.value];
}

export interface ShardPlanOptions {
  /**
   * Whether stages with a halo read their neighbours' rows (default true). False for a single
   * band over the whole image (one rank): no stage reads rows it does not own, so its band
   * models skip the halo join and the crops, each a copy of a stage's input or output held
   * while the stage runs (at 512² the join alone copies a 256 MiB input).
   */
  halos?: boolean;
}

/** The shard plan of `model`; UNSUPPORTED naming the ops when it has nonlocal ops that are not sync regions. */
export function shardPlan(model: ModelProto, options: ShardPlanOptions = {}): ShardPlan {
  const locality = analyzeLocality(model);
  if (!locality.sharding.possible) {
    const reasons = locality.sharding.blockers.map((b) =>
      reason('NONLOCAL_OP', 'graph', b, 'local ops or sync regions (GroupNorm, attention)', `row sharding cannot synchronise ${b}`),
    );
    throw new DistVaeError('UNSUPPORTED', `row sharding refused: ${locality.sharding.blockers.join('; ')}`, { reasons });
  }
  const staged = stageGraph(model);
  for (const step of staged.steps) {
    if (step.kind !== 'attention') continue;
    if (step.region.mask && step.region.mask.kind !== 'frame-causal') {
      refuse(
        'UNSUPPORTED',
        reason(
          'ATTENTION_READS_MORE',
          'graph',
          step.region.name,
          'attention unmasked or with a frame-causal mask',
          `attention ${step.region.name} masks its scores in a way row sharding does not model`,
        ),
      );
    }
    const extra = (step.frameCausal ?? step.core).inputs.filter(
      (n) => n !== step.region.query && n !== step.region.key && n !== step.region.value,
    );
    if (extra.length > 0) {
      refuse(
        'UNSUPPORTED',
        reason(
          'ATTENTION_READS_MORE',
          'graph',
          step.region.name,
          'attention over query, key and value only',
          `attention ${step.region.name} also reads ${extra.join(', ')} (a mask over positions), which bands cannot gather`,
        ),
      );
    }
  }
  const norms = staged.steps.flatMap((s) => (s.kind === 'group-norm' ? [s.region] : []));
  checkGroupNormsStaged(staged, norms);
  const initializers = new Map((model.graph?.initializer ?? []).map((t) => [t.name!, t]));
  const stageHalo = new Map(locality.stages.map((s) => [s.index, s.halo!.rows]));
  const steps = staged.steps.map((step): ShardStep => {
    if (step.kind === 'attention') return step;
    if (step.kind === 'group-norm') {
      const values = (name: string) => Float32Array.from(tensorProtoValues(initializers.get(name)!));
      const r = step.region;
      return {
        kind: 'group-norm',
        region: r,
        params: { groups: r.groups, epsilon: r.epsilon, scale: values(r.scale), bias: values(r.bias) },
      };
    }
    const halo = stageHalo.get(step.index)!;
    const band = bandModel({
      stage: step.graph,
      halo: halo.num > 0 && options.halos !== false,
      rowAxis: (v) => layoutOf({ locality }, v).rowAxis,
      framed: (v) => isFramed(layoutOf({ locality }, v)),
      applies: norms.filter((r) => step.graph.inputs.includes(r.output)),
      stats: norms.filter((r) => step.graph.outputs.includes(r.input)),
    });
    return { kind: 'stage', index: step.index, band, halo };
  });
  const lastUse = new Map<string, number>();
  steps.forEach((step, i) => {
    for (const v of stepReads(step)) lastUse.set(v, i);
  });
  lastUse.set(staged.output, Number.POSITIVE_INFINITY);
  return { staged, locality, steps, lastUse, halos: options.halos !== false, granule: granuleOf(locality) };
}

/**
 * The input rows and columns every band edge must be a multiple of: the least common multiple
 * of the denominators of every value's scale, so each value's band starts on a whole row of it.
 * 1 for a decoder (its values are at whole multiples of the latent); r for an encoder, whose
 * stride-2 down-samplers take its values to 1/2, 1/4, … of the input — bands of whole latent
 * rows then split every down-sampler (and the bottom pad before it) exactly.
 */
function granuleOf(locality: LocalityReport): { rows: number; cols: number } {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const lcm = (a: number, b: number) => (a / gcd(a, b)) * b;
  let rows = 1;
  let cols = 1;
  for (const f of locality.values.values()) {
    rows = lcm(rows, f.scale.rows.den);
    cols = lcm(cols, f.scale.cols.den);
  }
  return { rows, cols };
}

/**
 * Refuses (FRACTIONAL_SCALE) bands whose edges do not land on whole rows of every value: each
 * band edge must be a multiple of the plan's row granule (graph input rows), the input's
 * columns a multiple of its column granule.
 */
export function checkBandsAligned(plan: Pick<ShardPlan, 'granule'>, bands: readonly Band[], inputCols: number): void {
  const { rows, cols } = plan.granule;
  const off = bands.find((b) => b.start % rows !== 0 || b.end % rows !== 0);
  if (off || inputCols % cols !== 0) {
    refuse(
      'UNSUPPORTED',
      reason(
        'FRACTIONAL_SCALE',
        'graph',
        off ? `band ${off.rank} rows [${off.start}, ${off.end})` : `${inputCols} columns`,
        `band edges at multiples of ${rows} input rows, columns a multiple of ${cols}`,
        off
          ? `band ${off.rank} starts or ends between rows of a value ${rows}× coarser than the input: its rows would not split exactly`
          : `${inputCols} input columns do not land on whole columns of a value ${cols}× coarser than the input`,
      ),
    );
  }
}

/**
 * Band statistics come out of the stage that computes a GroupNorm's input and the normalisation
 * is applied inside the stages that read its output, so both must be stages (not the graph's
 * input or output, nor another sync region).
 */
function checkGroupNormsStaged(staged: StagedGraph, norms: readonly GroupNormRegion[]): void {
  const stageOutputs = new Set(staged.steps.flatMap((s) => (s.kind === 'stage' ? s.graph.outputs : [])));
  const otherReads = new Set([
    staged.output,
    ...staged.steps.flatMap((s) =>
      s.kind === 'attention' ? [s.region.query, s.region.key, s.region.value] : s.kind === 'group-norm' ? [s.region.input] : [],
    ),
  ]);
  for (const r of norms) {
    if (!stageOutputs.has(r.input) || otherReads.has(r.output)) {
      refuse(
        'UNSUPPORTED',
        reason(
          'GROUP_NORM_UNSTAGED',
          'graph',
          r.name,
          'a GroupNorm computed from a stage and read by stages only',
          `GroupNorm ${r.name} ${stageOutputs.has(r.input) ? 'feeds a sync region or the graph output directly' : 'reads the graph input or a sync region directly'}: row sharding computes band statistics and applies them inside stages`,
        ),
      );
    }
  }
}

/** The row layout of a value that crosses steps. */
export function layoutOf(plan: Pick<ShardPlan, 'locality'>, name: string): SpatialFact {
  const f = plan.locality.values.get(name);
  if (!f) throw new DistVaeError('INVALID_ARGUMENT', `value ${name} crosses a step but has no row layout in the analysis`);
  return f;
}

/** Whether a value's row axis holds frame-major tokens (frames, rows, columns flattened): one block of rows per frame. */
export function isFramed(f: SpatialFact): boolean {
  return f.frameAxis !== null && f.frameAxis === f.rowAxis;
}

/** A value's frame count for a latent of `latentFrames` frames (1 for images). */
export function framesOf(f: SpatialFact, latentFrames: number): number {
  if (f.frameAxis === null) return 1;
  if (!f.frames)
    throw new DistVaeError('INVALID_ARGUMENT', 'a video value crosses a step with a frame count the locality analysis does not know');
  const frames = f.frames.a * latentFrames + f.frames.b;
  // Strided convs in time make a and b fractions: F must be one the down-samplers divide evenly (1 + 4k for HunyuanVideo's encoders).
  if (!Number.isInteger(frames) || frames < 1)
    throw new DistVaeError(
      'INVALID_ARGUMENT',
      `a video value of ${f.frames.a}·F + ${f.frames.b} frames has no whole frame count for F = ${latentFrames} input frames`,
    );
  return frames;
}

/** Entries of one row of a value along its row axis: 1 for images, the row's tokens when flattened. */
export function rowUnit(f: SpatialFact, latentCols: number): number {
  return f.colAxis === null ? wholeTimes(latentCols, f.scale.cols) : 1;
}

/** Elements of one row of a value (all axes but the row axis, every frame), or null when a size is unknown. */
function rowElements(f: SpatialFact, batch: number, latentCols: number, latentFrames: number): number | null {
  let n = rowUnit(f, latentCols) * (isFramed(f) ? framesOf(f, latentFrames) : 1);
  for (let axis = 0; axis < f.rank; axis++) {
    if (axis === f.rowAxis) continue;
    if (axis === f.colAxis) n *= wholeTimes(latentCols, f.scale.cols);
    else if (axis === f.frameAxis) n *= framesOf(f, latentFrames);
    else if (axis === 0) n *= batch;
    else if (f.dims[axis] == null) return null;
    else n *= f.dims[axis]!;
  }
  return n;
}

const FLOAT32 = 4;
const FLOAT64 = 8;

function emptyCounters(): CommCounters {
  const zero = () => ({ calls: 0, bytes: 0 });
  return { send: zero(), broadcast: zero(), allGather: zero(), allReduce: zero(), neighbourExchange: zero(), barrier: zero() };
}

/**
 * What each rank will send in a run (calls and payload bytes by kind, counted as the rank
 * group's communicator counts them): halo rows point to point before each stage with a halo,
 * one all-gather of band statistics per GroupNorm, one of keys and values per attention (one
 * all-reduce of its summary instead, for a linear attention).
 */
export function predictCollectives(
  plan: ShardPlan,
  bands: readonly Band[],
  latentRows: number,
  latentCols: number,
  batch: number,
  latentFrames = 1,
): CommCounters[] {
  const counters = bands.map(() => emptyCounters());
  const peers = bands.length - 1;
  for (const step of plan.steps) {
    if (step.kind === 'stage') {
      const { halo } = step;
      for (const reader of bands) {
        for (const owner of haloSources(bands, reader, halo)) {
          const c = counters[owner]!.send;
          c.calls++;
          for (const name of step.band.inputs) {
            const f = layoutOf(plan, name);
            const rows = rowsForReader(bands[owner]!, reader, halo, latentRows, f.scale.rows);
            c.bytes += (rows.to - rows.from) * (rowElements(f, batch, latentCols, latentFrames) ?? Number.NaN) * FLOAT32;
          }
        }
      }
    } else if (step.kind === 'group-norm') {
      for (const c of counters) {
        c.allGather.calls++;
        c.allGather.bytes += 3 * batch * step.region.groups * FLOAT64 * peers;
      }
    } else if (step.split && step.region.summary) {
      // One float64 all-reduce of the summary: heads × d × (d + 1) per sample.
      const { heads, headDim } = step.region.summary;
      for (const c of counters) {
        c.allReduce.calls++;
        c.allReduce.bytes += batch * heads * headDim * (headDim + 1) * FLOAT64 * peers;
      }
    } else {
      bands.forEach((band, rank) => {
        const c = counters[rank]!.allGather;
        c.calls++;
        for (const name of [step.region.key, step.region.value]) {
          const f = layoutOf(plan, name);
          const rows = bandRows(band, f.scale.rows);
          c.bytes += (rows.to - rows.from) * (rowElements(f, batch, latentCols, latentFrames) ?? Number.NaN) * FLOAT32 * peers;
        }
      });
    }
  }
  return counters;
}
