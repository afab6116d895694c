// The time model: the predicted seconds of a decode plan (whole; blended tiles; halo-exact tiles;
// row sharding) for a VAE and a sample shape, per execution provider and thread count. Like the
// memory model it reads the family's own graphs: each op's arithmetic from the one shape
// inference (graph/shapes.ts over the op table graph/ops.ts) — a convolution's or matmul's
// multiply-accumulates, every other op's bytes written — summed over the tiles the busiest rank
// decodes (a tile's overlap and an exact tile's halo are decoded, so they cost), the runs it
// makes, and for a row-sharded rank its band plus halo rows, its steps and the bytes it
// exchanges (strategies/shard/plan.ts' predicted collectives). Ranks that share one machine's
// cores (local CPU ranks) divide them; ranks on separate devices do not. The seconds per unit
// come from a per-provider calibration (time-calibration.ts), fitted by bench/time-model.ts.
//
// A graph's cost is a constant (ops on per-channel values) plus a term linear in its tile's area
// (convolutions, pointwise ops) plus one quadratic in it (attention over positions), so each
// architecture's graphs are read at three small reference tiles and every other tile's cost
// follows exactly from that fit (the policy ranks hundreds of tile grids without a shape
// inference each; time-model.test.ts checks the fit against a direct inference).
//
// Measured on the CPU (bench/results/time-model.md), the seconds do not follow the MACs alone:
// a convolution costs per output it writes as well as per MAC (narrow convolutions — TAEF2's 64
// channels — run several times slower per MAC than SD's 512), one whose operands no longer fit
// the cache runs slower still and does not speed up with threads (memory-bound), and a
// row-sharded rank's stage sessions run without an arena, so every byte their ops write is a
// fresh allocation (page faults). Each is a term below; the per-node cache test is exact for
// any tile (each node's operand bytes fitted over the area like the totals).

import type { VaeSpec } from '../families/types.js';
import type { ModelProto, NodeProto } from '../graph/onnx-proto.js';
import { bytesOf, elements, type ValueShape } from '../graph/ops.js';
import { tileGrid } from '../plan/grid.js';
import { scheduleGrid } from '../plan/metrics.js';
import { latentShapeOf, type SampleShape } from '../plan/shapes.js';
import { hostCores } from '../runtime/host-memory.js';
import { splitBands } from '../strategies/shard/bands.js';
import { predictCollectives } from '../strategies/shard/plan.js';
import { exactTilingHalo, exactTiles } from '../strategies/exact-tile/halo.js';
import { decoderGraphOf, decoderWeightBytes, exactHaloOf, tileGraphs, tileInputDims, withPlanTiling, type MemoryPlan } from './model.js';
import { inputDimsOf } from './runs.js';
import { planOf } from './shard.js';
import { inferShapes } from './shapes.js';
import { timeCalibrationOf, type TimeCalibration } from './time-calibration.js';

/** What a plan's predicted seconds are made of, before the calibration's factors (the busiest rank's share). */
export interface TimeTerms {
  /** 10⁹ multiply-accumulates of the convolutions and matmuls the busiest rank runs. */
  gmacs: number;
  /** 10⁹ bytes the other ops of its runs write (normalisation, activations, resampling, copies). */
  gbytes: number;
  /** 10⁹ bytes the convolutions and matmuls of its runs write (their outputs: a cost per output beside the cost per MAC). */
  convGbytes: number;
  /** 10⁹ multiply-accumulates of the convolutions and matmuls whose input and output together exceed the calibration's cache bytes (memory-bound: not divided by threads). */
  spilledGmacs: number;
  /** 10⁹ bytes every op of a row-sharded rank's stage runs writes (sessions without an arena: each a fresh allocation); 0 otherwise. */
  unpooledGbytes: number;
  /** Cores its intra-op threads get: its threads, or its share of the machine's cores where ranks share them (may be under 1). */
  parallelism: number;
  /** Decoder session runs it makes (tiles × temporal chunks × frame steps). */
  runs: number;
  /** Steps of a row-sharded rank (stage runs and collectives); 0 otherwise. */
  stages: number;
  /** 10⁹ bytes a row-sharded rank sends (halo rows, statistics, keys and values). */
  exchangedGbytes: number;
  /** 10⁹ bytes of weights each rank loads, scaled by how many ranks load at once per core. */
  loadedGbytes: number;
}

/** A plan's predicted seconds. */
export interface TimePrediction {
  seconds: number;
  /** The provider whose calibration priced it. */
  provider: string;
  /** False where the provider has no time calibration yet and the CPU's priced it (a ranking, not a forecast). */
  calibrated: boolean;
  terms: TimeTerms;
}

/** Options of the time model. */
export interface TimeModelOptions {
  /** Execution provider (default 'cpu'). */
  provider?: string;
  /** Intra-op threads per rank (a plan's own `threads` wins); default: the cores / the ranks that start, as local groups do. */
  threads?: number;
  /** Cores of this machine (default: this process's, runtime/host-memory.ts). */
  cores?: number;
  /** 'shared': local ranks share this machine's cores (CPU ranks, GPU ranks on one adapter); 'separate': each rank its own device. Default 'shared'. */
  devices?: 'shared' | 'separate';
  batch?: number;
  /** Operand bytes (a node's input and output) past which a convolution is memory-bound; default: the provider's calibration. */
  cacheBytes?: number;
}

/** The seconds of a process's terms under a calibration. */
export function secondsOfTerms(t: TimeTerms, cal: TimeCalibration): number {
  const speedup = t.parallelism >= 1 ? 1 + cal.threadEfficiency * (t.parallelism - 1) : t.parallelism;
  return (
    cal.fixedSeconds +
    (cal.secondsPerGmac * t.gmacs + cal.secondsPerConvGbyte * t.convGbytes + cal.secondsPerGbyte * t.gbytes) / speedup +
    cal.secondsPerSpilledGmac * t.spilledGmacs +
    cal.secondsPerUnpooledGbyte * t.unpooledGbytes +
    cal.secondsPerRun * t.runs +
    cal.secondsPerStage * t.stages +
    cal.secondsPerExchangedGbyte * t.exchangedGbytes +
    cal.secondsPerLoadedGbyte * t.loadedGbytes
  );
}

/** Arithmetic of a graph run: multiply-accumulates, the bytes their ops write, and bytes written by the other ops. */
interface Cost {
  macs: number;
  /** Bytes the convolutions and matmuls write. */
  convBytes: number;
  bytes: number;
}

/** Ops whose output is a view or metadata (no arithmetic, nothing written worth counting). */
const FREE_OPS = new Set(['Constant', 'Shape', 'Reshape', 'Flatten', 'Unsqueeze', 'Identity', 'Range', 'ConstantOfShape']);

/** Bytes of a node's outputs that are computed at run time (folded constants excluded). */
function writtenBytes(node: NodeProto, shapes: ReadonlyMap<string, ValueShape>): number {
  let bytes = 0;
  for (const name of node.output ?? []) {
    const s = shapes.get(name);
    if (s && s.values === undefined) bytes += bytesOf(s);
  }
  return bytes;
}

/** A node's multiply-accumulates and the bytes it writes (convolutions, matmuls), or the bytes it writes (every other op). */
export function nodeCost(node: NodeProto, shapes: ReadonlyMap<string, ValueShape>): Cost {
  const op = node.op_type ?? '';
  const out = shapes.get(node.output?.[0] ?? '');
  if (!out || FREE_OPS.has(op)) return { macs: 0, convBytes: 0, bytes: 0 };
  const input = (i: number) => shapes.get(node.input?.[i] ?? '');
  if (op === 'Conv' || op === 'ConvTranspose') {
    const w = input(1)?.dims ?? [];
    // Conv: each output element reads Cin/group × kernel inputs; ConvTranspose: each input element feeds Cout/group × kernel outputs.
    const perElement = w.slice(1).reduce((a, b) => a * b, 1);
    const n = op === 'Conv' ? elements(out.dims) : elements(input(0)?.dims ?? []);
    return { macs: n * perElement, convBytes: writtenBytes(node, shapes), bytes: 0 };
  }
  if (op === 'MatMul' || op === 'Gemm') {
    const a = input(0)?.dims ?? [];
    const transA = node.attribute?.find((x) => x.name === 'transA')?.i;
    const k = op === 'Gemm' && Number(transA ?? 0) === 1 ? a[0]! : a[a.length - 1]!;
    return { macs: elements(out.dims) * (k ?? 0), convBytes: writtenBytes(node, shapes), bytes: 0 };
  }
  return { macs: 0, convBytes: 0, bytes: writtenBytes(node, shapes) };
}

/** A MAC node's multiply-accumulates and its operand bytes (first input and output): what the cache test reads. */
interface Operands {
  macs: number;
  operandBytes: number;
}

/** The MAC nodes of a graph run at `shapes`, in graph order (one entry per node that does arithmetic). */
function macNodes(model: ModelProto, shapes: ReadonlyMap<string, ValueShape>): Operands[] {
  const out: Operands[] = [];
  for (const node of model.graph?.node ?? []) {
    const c = nodeCost(node, shapes);
    if (c.macs === 0) continue;
    const input = shapes.get(node.input?.[0] ?? '');
    out.push({ macs: c.macs, operandBytes: c.convBytes + (input && input.values === undefined ? bytesOf(input) : 0) });
  }
  return out;
}

const costs = new WeakMap<ModelProto, Map<string, Cost>>();

/** A graph's arithmetic for a latent tile of `dims` (memoised per graph and dims). */
export function graphCost(model: ModelProto, dims: readonly number[]): Cost {
  let known = costs.get(model);
  if (!known) costs.set(model, (known = new Map()));
  const key = dims.join('x');
  const hit = known.get(key);
  if (hit) return hit;
  const shapes = inferShapes(model, inputDimsOf(model, dims));
  const cost = { macs: 0, convBytes: 0, bytes: 0 };
  for (const node of model.graph?.node ?? []) {
    const c = nodeCost(node, shapes);
    cost.macs += c.macs;
    cost.convBytes += c.convBytes;
    cost.bytes += c.bytes;
  }
  known.set(key, cost);
  return cost;
}

const operandLists = new WeakMap<ModelProto, Map<string, Operands[]>>();

/** A graph's MAC nodes for a latent tile of `dims` (memoised per graph and dims). */
function graphOperands(model: ModelProto, dims: readonly number[]): Operands[] {
  let known = operandLists.get(model);
  if (!known) operandLists.set(model, (known = new Map()));
  const key = dims.join('x');
  const hit = known.get(key);
  if (hit) return hit;
  const list = macNodes(model, inferShapes(model, inputDimsOf(model, dims)));
  known.set(key, list);
  return list;
}

/** A tile's cost as a function of its area A (latent units): K + L·A + Q·A², per quantity. */
type Quadratic = [number, number, number];
interface AreaFit {
  macs: Quadratic;
  convBytes: Quadratic;
  bytes: Quadratic;
  /** Each MAC node's MACs and operand bytes over the area (× its graph's runs), for the cache test at any tile. */
  nodes: { macs: Quadratic; operandBytes: Quadratic; runs: number }[];
}

const fits = new Map<string, AreaFit>();

/** A tile's run dims for `h` × `w` latent units with a batch and (video) frames (an encoder's: its image tile). */
function dimsOf(vae: VaeSpec, batch: number, frames: number, h: number, w: number): number[] {
  return tileInputDims(vae, batch, h, w, frames);
}

/** The area fit of one tile decode (every graph it runs, times its runs), from three reference tiles (memoised per architecture, batch and frames). */
function areaFit(vae: VaeSpec, batch: number, frames: number): AreaFit {
  const key = `${vae.family.name}:${vae.part ?? 'decoder'}:${JSON.stringify(vae.config.fields)}:${batch}:${frames}`;
  const known = fits.get(key);
  if (known) return known;
  const m = Math.max(8, vae.family.minWindowLatent);
  const at = (h: number, w: number): Cost =>
    tileGraphs(vae, dimsOf(vae, batch, frames, h, w)).reduce(
      (s, g) => {
        const c = graphCost(g.model, dimsOf(vae, batch, frames, h, w));
        return { macs: s.macs + g.runs * c.macs, convBytes: s.convBytes + g.runs * c.convBytes, bytes: s.bytes + g.runs * c.bytes };
      },
      { macs: 0, convBytes: 0, bytes: 0 },
    );
  /** Every graph's MAC nodes at a tile, with the graph's runs. */
  const nodesAt = (h: number, w: number): { list: Operands[]; runs: number }[] =>
    tileGraphs(vae, dimsOf(vae, batch, frames, h, w)).map((g) => ({
      list: graphOperands(g.model, dimsOf(vae, batch, frames, h, w)),
      runs: g.runs,
    }));
  const a = m * m;
  const [c1, c2, c4] = [at(m, m), at(m, 2 * m), at(2 * m, 2 * m)];
  const [n1, n2, n4] = [nodesAt(m, m), nodesAt(m, 2 * m), nodesAt(2 * m, 2 * m)];
  // c(A) = K + L·A + Q·A² at A, 2A, 4A: c(2A) − c(A) = L·A + 3Q·A², c(4A) − c(2A) = 2L·A + 12Q·A².
  const solve = (x1: number, x2: number, x4: number): Quadratic => {
    const d1 = x2 - x1;
    const d2 = x4 - x2;
    const q = (d2 - 2 * d1) / (6 * a * a);
    const l = (d1 - 3 * q * a * a) / a;
    return [x1 - l * a - q * a * a, l, q];
  };
  // Node i of graph g is the same node at every reference tile where the graphs keep their shape
  // (a family whose graphs change with the tile — chunked attention — leaves the cache test to the
  // graphs it can match, node by node).
  const nodes: AreaFit['nodes'] = [];
  n1.forEach((g, gi) => {
    const [g2, g4] = [n2[gi], n4[gi]];
    if (!g2 || !g4 || g2.list.length !== g.list.length || g4.list.length !== g.list.length) return;
    g.list.forEach((x, i) =>
      nodes.push({
        macs: solve(x.macs, g2.list[i]!.macs, g4.list[i]!.macs),
        operandBytes: solve(x.operandBytes, g2.list[i]!.operandBytes, g4.list[i]!.operandBytes),
        runs: g.runs,
      }),
    );
  });
  const fit = {
    macs: solve(c1.macs, c2.macs, c4.macs),
    convBytes: solve(c1.convBytes, c2.convBytes, c4.convBytes),
    bytes: solve(c1.bytes, c2.bytes, c4.bytes),
    nodes,
  };
  fits.set(key, fit);
  return fit;
}

/** Runs one tile decode makes (frame steps of a frame-step family; 1 otherwise). */
function runsPerTile(vae: VaeSpec, batch: number, frames: number): number {
  const m = Math.max(8, vae.family.minWindowLatent);
  return tileGraphs(vae, dimsOf(vae, batch, frames, m, m)).reduce((s, g) => s + g.runs, 0);
}

/** A fitted cost for a tile of `area` whose attention runs `queries` queries over it (a band: its own rows; its convolutions over `computed`). */
const at = (f: Quadratic, area: number, queries = area, computed = area): number => f[0] + f[1] * computed + f[2] * area * queries;

/** MACs of the MAC nodes whose operands exceed `cacheBytes` at this tile (memory-bound). */
function spilledMacs(fit: AreaFit, cacheBytes: number, area: number, queries = area, computed = area): number {
  let macs = 0;
  for (const n of fit.nodes)
    if (at(n.operandBytes, area, queries, computed) > cacheBytes) macs += n.runs * at(n.macs, area, queries, computed);
  return macs;
}

/**
 * The time-model terms of decoding `sample` with `plan`: the busiest rank's arithmetic, runs,
 * steps and exchange, and the cores its threads get.
 */
export function timeTerms(vae: VaeSpec, plan: MemoryPlan, sample: SampleShape, options: TimeModelOptions = {}): TimeTerms {
  const batch = options.batch ?? 1;
  const cores = Math.max(1, options.cores ?? hostCores());
  const cacheBytes = options.cacheBytes ?? timeCalibrationOf(options.provider ?? 'cpu').calibration.cacheBytes;
  const latent = latentShapeOf(vae.geometry, sample);
  const probe = withPlanTiling(vae, plan);
  const grid = tileGrid(probe, latent);
  const chunkFrames = grid.chunks.map((c) => c.end - c.start);
  const weightGbytes = decoderWeightBytes(vae) / 1e9;
  const share = (active: number): { parallelism: number; load: number } => {
    const threads = plan.threads ?? options.threads ?? Math.max(1, Math.floor(cores / active));
    if (options.devices === 'separate') return { parallelism: threads, load: 1 };
    return { parallelism: threads * active <= cores ? threads : cores / active, load: Math.max(1, active / cores) };
  };

  if (plan.strategy === 'shard') {
    const model = decoderGraphOf(vae);
    const shardPlan = planOf(model, plan.ranks > 1);
    const bands = splitBands(latent.height, plan.ranks, vae.geometry.spatialRatio);
    // An encoder's shard plan counts input rows (its values at 1/2, 1/4, … of the image: the
    // bands sharded-encode.ts cuts are these latent bands × r); a decoder's counts latent rows.
    const unit = vae.part === 'encoder' ? vae.geometry.spatialRatio : 1;
    const planBands = bands.map((b) => ({ ...b, start: b.start * unit, end: b.end * unit }));
    let halo = 0;
    for (const step of shardPlan.steps) if (step.kind === 'stage') halo = Math.max(halo, step.halo.num / step.halo.den / unit);
    const fit = areaFit(vae, batch, latent.frames);
    const area = latent.height * latent.width;
    const sent = predictCollectives(shardPlan, planBands, latent.height * unit, latent.width * unit, batch).map(
      (c) => c.send.bytes + c.allGather.bytes + c.allReduce.bytes + c.broadcast.bytes + c.neighbourExchange.bytes,
    );
    let worst = { gmacs: 0, gbytes: 0, convGbytes: 0, spilledGmacs: 0, exchanged: 0 };
    bands.forEach((b, i) => {
      const rows = b.end - b.start;
      const sides = (b.start > 0 ? 1 : 0) + (b.end < latent.height ? 1 : 0);
      // Convolutions run over the band and its halo rows; attention's queries are the band's, its keys every row.
      const computed = Math.min(latent.height, rows + sides * halo) * latent.width;
      const queries = rows * latent.width;
      const gmacs = at(fit.macs, area, queries, computed) / 1e9;
      if (gmacs > worst.gmacs)
        worst = {
          gmacs,
          gbytes: at(fit.bytes, area, queries, computed) / 1e9,
          convGbytes: at(fit.convBytes, area, queries, computed) / 1e9,
          spilledGmacs: spilledMacs(fit, cacheBytes, area, queries, computed) / 1e9,
          exchanged: (sent[i] ?? 0) / 1e9,
        };
    });
    const { parallelism, load } = share(plan.ranks);
    return {
      gmacs: worst.gmacs,
      gbytes: worst.gbytes,
      convGbytes: worst.convGbytes,
      spilledGmacs: worst.spilledGmacs,
      // Stage sessions run without an arena: every byte their ops write is allocated afresh.
      unpooledGbytes: worst.gbytes + worst.convGbytes,
      parallelism,
      runs: 0,
      stages: shardPlan.steps.length,
      exchangedGbytes: Number.isFinite(worst.exchanged) ? worst.exchanged : 0,
      loadedGbytes: weightGbytes * load,
    };
  }

  // Whole, blended and halo-exact tiles: each tile's read region decoded once per temporal chunk.
  const areas: { area: number; queries: number }[] =
    plan.strategy === 'exact-tile'
      ? exactTiles(grid, exactHaloOf(vae) ?? exactTilingHalo(decoderGraphOf(vae))).map((t) => {
          const a = (t.read.y1 - t.read.y0) * (t.read.x1 - t.read.x0);
          return { area: a, queries: a };
        })
      : grid.tiles.map((t) => {
          const a = (t.y1 - t.y0) * (t.x1 - t.x0);
          return { area: a, queries: a };
        });
  const active = plan.strategy === 'whole' ? 1 : Math.max(1, Math.min(plan.ranks, areas.length));
  const schedule = scheduleGrid(grid, active);
  let worst = { gmacs: 0, gbytes: 0, convGbytes: 0, spilledGmacs: 0, runs: 0 };
  for (const tiles of schedule.ranks) {
    let gmacs = 0;
    let gbytes = 0;
    let convGbytes = 0;
    let spilledGmacs = 0;
    let runs = 0;
    for (const frames of chunkFrames) {
      const fit = areaFit(vae, batch, frames);
      const perTile = runsPerTile(vae, batch, frames);
      for (const i of tiles) {
        const t = areas[i]!;
        gmacs += at(fit.macs, t.area, t.queries) / 1e9;
        gbytes += at(fit.bytes, t.area, t.queries) / 1e9;
        convGbytes += at(fit.convBytes, t.area, t.queries) / 1e9;
        spilledGmacs += spilledMacs(fit, cacheBytes, t.area, t.queries) / 1e9;
        runs += perTile;
      }
    }
    if (gmacs > worst.gmacs) worst = { gmacs, gbytes, convGbytes, spilledGmacs, runs };
  }
  const { parallelism, load } = share(active);
  return { ...worst, unpooledGbytes: 0, parallelism, stages: 0, exchangedGbytes: 0, loadedGbytes: weightGbytes * load };
}

/** Predicted seconds of decoding `sample` with `plan` (the decode alone: the VAE's load on the coordinator not counted, each rank's own load counted). */
export function predictTime(vae: VaeSpec, plan: MemoryPlan, sample: SampleShape, options: TimeModelOptions = {}): TimePrediction {
  const provider = options.provider ?? 'cpu';
  const { calibration, calibrated } = timeCalibrationOf(provider);
  const terms = timeTerms(vae, plan, sample, options);
  return { seconds: secondsOfTerms(terms, calibration), provider, calibrated, terms };
}

/** Seconds as the reports print them: `12.3 s`, `850 ms`. */
export function formatSeconds(seconds: number): string {
  return seconds >= 10 ? `${seconds.toFixed(0)} s` : seconds >= 1 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds * 1000)} ms`;
}
