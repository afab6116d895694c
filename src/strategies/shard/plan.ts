// The shard plan of a decoder model: its staged graphs (graph/stages.ts), the locality report
// that gives every stage its halo and every value crossing a step its row layout, when each
// value is last read, and the collectives a run will make (so a run's counters can be checked
// against the analysis). Refuses — naming the ops — a model whose nonlocal ops are not all
// sync regions, or whose values are not at whole multiples of the latent resolution.

import type { CommCounters } from '../../ranks/program.js';
import { DistVaeError, reason, refuse } from '../../errors.js';
import { analyzeLocality, type LocalityReport, type SpatialFact } from '../../graph/locality.js';
import type { ModelProto } from '../../graph/onnx-proto.js';
import { formatRatio, wholeTimes, ZERO, type Ratio } from '../../graph/ratio.js';
import { stageGraph, type StagedGraph } from '../../graph/stages.js';
import { tensorProtoValues } from '../../graph/tensor-proto.js';
import { bandRows, haloSources, rowsForReader, type Band } from './bands.js';
import type { GroupNormParams } from './group-norm.js';

/** How a decoder model is row-sharded: its staged graph, the locality report, every step's halo and the collectives a run makes. */
export interface ShardPlan {
  staged: StagedGraph;
  locality: LocalityReport;
  /** Halo of each step in latent rows (zero for regions). */
  halos: Ratio[];
  /** Index of the last step that reads each value (the graph output is never dropped). */
  lastUse: Map<string, number>;
  /** Statistics-free parameters of each GroupNorm step, by step index. */
  groupNorms: Map<number, GroupNormParams>;
}

/** The shard plan of `model`; UNSUPPORTED naming the ops when it has nonlocal ops that are not sync regions. */
export function shardPlan(model: ModelProto): ShardPlan {
  const locality = analyzeLocality(model);
  if (!locality.sharding.possible) {
    const reasons = locality.sharding.blockers.map((b) => reason('NONLOCAL_OP', 'graph', b, 'local ops or sync regions (GroupNorm, attention)', `row sharding cannot synchronise ${b}`));
    throw new DistVaeError('UNSUPPORTED', `row sharding refused: ${locality.sharding.blockers.join('; ')}`, { reasons });
  }
  for (const [name, f] of locality.values) {
    if (f.scale.rows.den !== 1 || f.scale.cols.den !== 1) {
      refuse('UNSUPPORTED', reason('FRACTIONAL_SCALE', 'graph', name, 'values at whole multiples of the latent resolution', `value ${name} is at ${formatRatio(f.scale.rows)} rows per latent row: bands of whole latent rows do not land on its rows`));
    }
  }
  const staged = stageGraph(model);
  for (const step of staged.steps) {
    if (step.kind !== 'attention') continue;
    const extra = step.core.inputs.filter((n) => n !== step.region.query && n !== step.region.key && n !== step.region.value);
    if (extra.length > 0) {
      refuse('UNSUPPORTED', reason('ATTENTION_READS_MORE', 'graph', step.region.name, 'attention over query, key and value only', `attention ${step.region.name} also reads ${extra.join(', ')} (a mask over positions), which bands cannot gather`));
    }
  }
  const initializers = new Map((model.graph?.initializer ?? []).map((t) => [t.name!, t]));
  const stageHalo = new Map(locality.stages.map((s) => [s.index, s.halo!.rows]));
  const halos: Ratio[] = [];
  const lastUse = new Map<string, number>();
  const groupNorms = new Map<number, GroupNormParams>();
  staged.steps.forEach((step, i) => {
    halos.push(step.kind === 'stage' ? stageHalo.get(step.index)! : ZERO);
    const reads = step.kind === 'stage' ? step.graph.inputs : step.kind === 'group-norm' ? [step.region.input] : [step.region.query, step.region.key, step.region.value];
    for (const v of reads) lastUse.set(v, i);
    if (step.kind === 'group-norm') {
      const values = (name: string) => Float32Array.from(tensorProtoValues(initializers.get(name)!));
      groupNorms.set(i, { groups: step.region.groups, epsilon: step.region.epsilon, scale: values(step.region.scale), bias: values(step.region.bias) });
    }
  });
  lastUse.set(staged.output, Number.POSITIVE_INFINITY);
  return { staged, locality, halos, lastUse, groupNorms };
}

/** The row layout of a value that crosses steps. */
export function layoutOf(plan: ShardPlan, name: string): SpatialFact {
  const f = plan.locality.values.get(name);
  if (!f) throw new DistVaeError('INVALID_ARGUMENT', `value ${name} crosses a step but has no row layout in the analysis`);
  return f;
}

/** Entries of one row of a value along its row axis: 1 for images, the row's tokens when flattened. */
export function rowUnit(f: SpatialFact, latentCols: number): number {
  return f.colAxis === null ? wholeTimes(latentCols, f.scale.cols) : 1;
}

/** Elements of one row of a value (all axes but the row axis), or null when a size is unknown. */
function rowElements(f: SpatialFact, batch: number, latentCols: number): number | null {
  let n = rowUnit(f, latentCols);
  for (let axis = 0; axis < f.rank; axis++) {
    if (axis === f.rowAxis) continue;
    if (axis === f.colAxis) n *= wholeTimes(latentCols, f.scale.cols);
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
 * two all-reduces per GroupNorm, one all-gather of keys and values per attention.
 */
export function predictCollectives(plan: ShardPlan, bands: readonly Band[], latentRows: number, latentCols: number, batch: number): CommCounters[] {
  const counters = bands.map(() => emptyCounters());
  const peers = bands.length - 1;
  plan.staged.steps.forEach((step, i) => {
    if (step.kind === 'stage') {
      const halo = plan.halos[i]!;
      for (const reader of bands) {
        for (const owner of haloSources(bands, reader, halo)) {
          const c = counters[owner]!.send;
          c.calls++;
          for (const name of step.graph.inputs) {
            const f = layoutOf(plan, name);
            const rows = rowsForReader(bands[owner]!, reader, halo, latentRows, f.scale.rows);
            c.bytes += (rows.to - rows.from) * (rowElements(f, batch, latentCols) ?? Number.NaN) * FLOAT32;
          }
        }
      }
    } else if (step.kind === 'group-norm') {
      for (const c of counters) {
        c.allReduce.calls += 2;
        c.allReduce.bytes += 3 * batch * step.region.groups * FLOAT64 * peers;
      }
    } else {
      bands.forEach((band, rank) => {
        const c = counters[rank]!.allGather;
        c.calls++;
        for (const name of [step.region.key, step.region.value]) {
          const f = layoutOf(plan, name);
          const rows = bandRows(band, f.scale.rows);
          c.bytes += (rows.to - rows.from) * (rowElements(f, batch, latentCols) ?? Number.NaN) * FLOAT32 * peers;
        }
      });
    }
  });
  return counters;
}
