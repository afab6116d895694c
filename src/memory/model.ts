// The memory model: the predicted peak resident bytes of every rank and of the coordinator for a
// VAE, a plan (whole; blended tiles; row sharding; halo-exact tiles) and a sample shape. The
// activation peak of each distinct tile shape comes from a liveness scan of the family's own
// decoder graph (liveness.ts), memoised per (architecture, input dims); weights, the runtime's
// fixed cost and its extra copies come from the provider's calibration (calibration.ts); the
// latent, tile and output buffers from the plan's grid. Families that do not expose their decoder
// graph are refused by name (the caller keeps their default plan).

import { decoderModelOf } from '../decode/decoder-model.js';
import { DistVaeError, reason } from '../errors.js';
import { runtimeOf } from '../families/runtimes.js';
import type { FrameTiling, Size2, VaeSpec } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { tileGrid, type TileGrid } from '../plan/grid.js';
import { scheduleGrid } from '../plan/metrics.js';
import { latentShapeOf, type SampleShape } from '../plan/shapes.js';
import { splitBands } from '../strategies/shard/bands.js';
import { exactTilingHalo, exactTiles, type Halo } from '../strategies/exact-tile/halo.js';
import type { Tensor } from '../tensor.js';
import { calibrationOf, type RuntimeCalibration } from './calibration.js';
import { activationPeak, type ActivationPeak } from './liveness.js';

/** The decodes the memory model predicts: whole, blended tiles, row sharding, halo-exact tiles. */
export const MEMORY_STRATEGIES = ['whole', 'tile', 'shard', 'exact-tile'] as const;
/** One of MEMORY_STRATEGIES. */
export type MemoryStrategy = (typeof MEMORY_STRATEGIES)[number];

/** A decode plan as the memory model reads it. */
export interface MemoryPlan {
  strategy: MemoryStrategy;
  /** Local ranks the work is dealt to; 1 with `isolated` false: the coordinator decodes itself. */
  ranks: number;
  /** Tile window and overlap in output pixels (tile, exact-tile). */
  window?: Size2;
  overlap?: Size2;
  /** Temporal tiling (video families); absent: the VAE's current setting. */
  frames?: FrameTiling | null;
  /** The decode runs in rank processes even with one rank (a fallback ladder's attempt), so the coordinator only holds the VAE. */
  isolated?: boolean;
}

/**
 * What a process's predicted peak is made of, before the calibration's factors: predicted =
 * fixedBytes + Σ factor × term + buffers. The calibration mode of bench/memory-model.ts fits the
 * factors to measured peaks from these terms.
 */
export interface MemoryTerms {
  /** Weight bytes, when this process decodes. */
  decodingWeights: number;
  /** Weight bytes, when this process only holds the loaded VAE. */
  holdingWeights: number;
  /** Activation peak of its largest decoder run (graph liveness). */
  activation: number;
  /** The same again when a session runs more than once (tiles, temporal chunks). */
  repeat: number;
  /** A row-sharded rank's share of the whole decode's activation peak. */
  shard: number;
  /** The decoded output, in the process that assembles and writes it. */
  output: number;
  /** Buffers counted as they are (latent, tile outputs a rank returns). */
  buffers: number;
}

/** The predicted peak of one process, with the terms it adds up. */
export interface ProcessPrediction {
  peakBytes: number;
  terms: MemoryTerms;
}

/** The predicted peak of one rank process. */
export interface RankPrediction extends ProcessPrediction {
  rank: number;
}

/** Predicted memory of a plan: per process and in total (the budget covers the total). */
export interface MemoryPrediction {
  /** Coordinator plus every local rank. */
  peakBytes: number;
  coordinatorBytes: number;
  coordinator: ProcessPrediction;
  /** Local rank processes (empty when the coordinator decodes itself). */
  ranks: RankPrediction[];
  /** Largest single tensor any decoder run allocates. */
  maxTensorBytes: number;
  /** Bytes of the decoder weights (float32). */
  weightBytes: number;
  provider: string;
}

/** A process's peak from its terms under a calibration. */
export function peakOfTerms(t: MemoryTerms, cal: RuntimeCalibration): number {
  return Math.round(
    cal.fixedBytes +
      cal.decodingWeightCopies * t.decodingWeights +
      cal.holdingWeightCopies * t.holdingWeights +
      cal.activationFactor * t.activation +
      cal.repeatFactor * t.repeat +
      cal.shardFactor * t.shard +
      cal.outputCopies * t.output +
      t.buffers,
  );
}

export interface MemoryModelOptions {
  /** Execution provider whose calibration applies (default 'cpu'). */
  provider?: string;
}

interface ArchitectureMemory {
  model: ModelProto;
  input: string;
  weightBytes: number;
  peaks: Map<string, ActivationPeak>;
  halo?: Halo | null;
}

const architectures = new Map<string, ArchitectureMemory>();

function architectureKey(vae: VaeSpec): string {
  return `${vae.family.name}:${JSON.stringify(vae.config.fields)}`;
}

/** The decoder graph of an architecture with every weight a view of one shared zero buffer (shapes only). */
function architectureOf(vae: VaeSpec): ArchitectureMemory {
  const key = architectureKey(vae);
  const known = architectures.get(key);
  if (known) return known;
  const runtime = runtimeOf(vae.family);
  if (!runtime.decoderGraph) {
    const r = reason('NO_MEMORY_MODEL', 'family', vae.family.name, 'a family that exposes its decoder graph (autoencoder-kl, flux2, tae)', `the memory model reads the decoder graph, which the ${vae.family.name} family does not expose; its default plan is used`);
    throw new DistVaeError('UNSUPPORTED', r.message, { reasons: [r] });
  }
  const params = runtime.decoderParams(vae.config);
  let largest = 0;
  let weightBytes = 0;
  for (const p of params) {
    const n = p.dims.reduce((a, b) => a * b, 1);
    largest = Math.max(largest, n);
    weightBytes += 4 * n;
  }
  const zeros = new Float32Array(largest);
  const weights = new Map<string, Tensor>(params.map((p) => [p.name, { dims: [...p.dims], data: zeros.subarray(0, p.dims.reduce((a, b) => a * b, 1)) }]));
  const model = decoderModelOf(vae.family, runtime, vae.config, weights);
  const entry: ArchitectureMemory = { model, input: model.graph!.input![0]!.name!, weightBytes, peaks: new Map() };
  architectures.set(key, entry);
  return entry;
}

/** Activation peak of one decoder run on a latent tile of these dims (memoised). */
function peakFor(arch: ArchitectureMemory, dims: readonly number[]): ActivationPeak {
  const key = dims.join('x');
  let peak = arch.peaks.get(key);
  if (!peak) {
    peak = activationPeak(arch.model, { [arch.input]: dims });
    arch.peaks.set(key, peak);
  }
  return peak;
}

/** The latent halo that makes tiles exact, or null when the decoder is not local (memoised). */
export function exactHaloOf(vae: VaeSpec): Halo | null {
  const arch = architectureOf(vae);
  if (arch.halo === undefined) {
    try {
      arch.halo = exactTilingHalo(arch.model);
    } catch {
      arch.halo = null;
    }
  }
  return arch.halo;
}

/** Whether the memory model can read this VAE's decoder (it exposes its graph). */
export function hasMemoryModel(vae: VaeSpec): boolean {
  return runtimeOf(vae.family).decoderGraph !== undefined;
}

/** A planner view of `vae` with the plan's tiling installed (the caller's VAE is left as it is). */
export function withPlanTiling(vae: VaeSpec, plan: MemoryPlan): VaeSpec {
  const frames = plan.frames === undefined ? vae.tiling.frames : plan.frames;
  const tiled = plan.strategy === 'tile' || plan.strategy === 'exact-tile';
  const tiling = tiled
    ? { ...vae.tiling, enabled: true, planned: true, window: { ...plan.window! }, overlap: { ...(plan.overlap ?? { height: 0, width: 0 }) }, frames }
    : { ...vae.tiling, enabled: false, frames: plan.strategy === 'whole' && frames ? { ...frames, enabled: false } : frames };
  return { family: vae.family, config: vae.config, geometry: vae.geometry, tiling };
}

function latentDims(vae: VaeSpec, batch: number, h: number, w: number, frames: number): number[] {
  const c = vae.geometry.latentChannels;
  return vae.geometry.fiveDimLatents ? [batch, c, frames, h, w] : [batch, c, h, w];
}

function sampleBytes(vae: VaeSpec, batch: number, sample: Required<SampleShape>): number {
  return 4 * batch * vae.geometry.outChannels * sample.frames * sample.height * sample.width;
}

interface Run {
  dims: number[];
  /** Output bytes of this run (the raw tile). */
  outBytes: number;
}

/**
 * Predicted peak memory of decoding a latent of `sample`'s size (batch `batch`) with `plan`.
 * Throws UNSUPPORTED for a family whose graph the model cannot read.
 */
export function predictMemory(vae: VaeSpec, plan: MemoryPlan, sample: SampleShape, options: MemoryModelOptions & { batch?: number } = {}): MemoryPrediction {
  const cal = calibrationOf(options.provider ?? 'cpu');
  const arch = architectureOf(vae);
  const batch = options.batch ?? 1;
  const latent = latentShapeOf(vae.geometry, sample);
  const probe = withPlanTiling(vae, plan);
  const grid = tileGrid(probe, latent);
  const outFrames = vae.geometry.fiveDimLatents ? (sample.frames ?? 1) : 1;
  const output = sampleBytes(vae, batch, { height: sample.height, width: sample.width, frames: outFrames });
  const latentBytes = 4 * batch * vae.geometry.latentChannels * latent.frames * latent.height * latent.width;
  const chunkFrames = Math.max(...grid.chunks.map((c) => c.end - c.start));
  const runsOf = (g: TileGrid): Run[] => {
    if (plan.strategy === 'exact-tile') {
      // A nonlocal decoder: the locality analysis's own refusal, naming the ops.
      const halo = exactHaloOf(vae) ?? exactTilingHalo(arch.model);
      return exactTiles(g, halo).map((t) => runOf(vae, t.read.y1 - t.read.y0, t.read.x1 - t.read.x0, batch, chunkFrames, output, latent));
    }
    return g.tiles.map((t) => runOf(vae, t.y1 - t.y0, t.x1 - t.x0, batch, chunkFrames, output, latent));
  };
  let maxTensorBytes = 0;
  // One graph scan per distinct tile shape (at most four per plan: full, clipped right, clipped
  // bottom, corner), memoised across plans.
  const activation = (runs: readonly Run[]): number => {
    let worst = 0;
    const seen = new Set<string>();
    for (const run of runs) {
      const key = run.dims.join('x');
      if (seen.has(key)) continue;
      seen.add(key);
      const p = peakFor(arch, run.dims);
      maxTensorBytes = Math.max(maxTensorBytes, p.maxTensorBytes);
      worst = Math.max(worst, p.peakBytes);
    }
    return worst;
  };
  const repeats = grid.chunks.length > 1;
  const none: MemoryTerms = { decodingWeights: 0, holdingWeights: 0, activation: 0, repeat: 0, shard: 0, output: 0, buffers: 0 };
  const decoding = (act: number, runs: number, buffers: number): MemoryTerms => ({ ...none, decodingWeights: arch.weightBytes, activation: act, repeat: runs > 1 || repeats ? act : 0, buffers });
  const holding: MemoryTerms = { ...none, holdingWeights: arch.weightBytes };
  const assembling = (t: MemoryTerms): MemoryTerms => ({ ...t, output: output, buffers: t.buffers + latentBytes });
  const done = (coordinator: MemoryTerms, ranks: { rank: number; terms: MemoryTerms }[]) => finish(coordinator, ranks, maxTensorBytes, arch.weightBytes, cal);

  if (plan.strategy === 'shard') {
    const whole = peakFor(arch, latentDims(vae, batch, latent.height, latent.width, latent.frames));
    maxTensorBytes = whole.maxTensorBytes;
    const bands = splitBands(latent.height, plan.ranks, vae.geometry.spatialRatio);
    const ranks = bands.map((b) => {
      const share = (b.end - b.start) / latent.height;
      return { rank: b.rank, terms: { ...none, decodingWeights: arch.weightBytes, shard: whole.peakBytes * share, buffers: output * share } };
    });
    return done(assembling(holding), ranks);
  }
  const runs = runsOf(grid);
  // The process that decodes also assembles: its buffers are the coordinator's.
  if (plan.ranks <= 1 && !plan.isolated) return done(assembling(decoding(activation(runs), runs.length, 0)), []);
  const schedule = scheduleGrid(grid, Math.max(1, plan.ranks));
  const ranks = schedule.ranks.map((tiles, rank) => {
    if (tiles.length === 0) return { rank, terms: holding };
    const mine = tiles.map((i) => runs[i]!);
    const owned = mine.reduce((s, r) => s + r.outBytes, 0);
    return { rank, terms: decoding(activation(mine), mine.length, Math.max(...mine.map((r) => r.outBytes)) + Math.min(owned, output)) };
  });
  return done(assembling(holding), ranks);
}

function runOf(vae: VaeSpec, h: number, w: number, batch: number, frames: number, output: number, latent: { height: number; width: number }): Run {
  return { dims: latentDims(vae, batch, h, w, frames), outBytes: (output * (h * w)) / (latent.height * latent.width) };
}

function finish(coordinator: MemoryTerms, ranks: { rank: number; terms: MemoryTerms }[], maxTensorBytes: number, weightBytes: number, cal: RuntimeCalibration): MemoryPrediction {
  const c = { peakBytes: peakOfTerms(coordinator, cal), terms: coordinator };
  const r = ranks.map((x) => ({ rank: x.rank, peakBytes: peakOfTerms(x.terms, cal), terms: x.terms }));
  return { peakBytes: c.peakBytes + r.reduce((s, x) => s + x.peakBytes, 0), coordinatorBytes: c.peakBytes, coordinator: c, ranks: r, maxTensorBytes, weightBytes, provider: cal.provider };
}

/**
 * Predicted peak of one process that decodes these latent tiles in turn (a queue worker's run):
 * the runtime, the weights, the largest tile's activation peak (again when it runs more than once)
 * and one decoded tile.
 */
export function predictTileRun(vae: VaeSpec, tiles: readonly (readonly number[])[], options: MemoryModelOptions = {}): ProcessPrediction {
  const cal = calibrationOf(options.provider ?? 'cpu');
  const arch = architectureOf(vae);
  const idle: MemoryTerms = { decodingWeights: arch.weightBytes, holdingWeights: 0, activation: 0, repeat: 0, shard: 0, output: 0, buffers: 0 };
  if (tiles.length === 0) return { peakBytes: peakOfTerms(idle, cal), terms: idle };
  const dims = tiles[0]!.map((_, i) => Math.max(...tiles.map((t) => t[i]!)));
  const peak = peakFor(arch, dims);
  const terms: MemoryTerms = { decodingWeights: arch.weightBytes, holdingWeights: 0, activation: peak.peakBytes, repeat: tiles.length > 1 ? peak.peakBytes : 0, shard: 0, output: 0, buffers: peak.outputBytes };
  return { peakBytes: peakOfTerms(terms, cal), terms };
}
