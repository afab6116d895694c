// The memory model: the predicted peak resident bytes of every rank and of the coordinator for a
// VAE, a plan (whole; blended tiles; row sharding; halo-exact tiles) and a sample shape. What a
// decoding process holds comes from the family's own graphs: the sessions its tile runner opens
// for each tile and their activation peaks (liveness.ts), kept per session by onnxruntime's
// arena over the runs in order (runs.ts); a row-sharded rank's from a walk through the shard
// plan's steps over its band and halo (shard.ts). Weights, the runtime's fixed cost and the
// copies it adds come from the provider's calibration (calibration.ts); latent, tile and output
// buffers from the plan's grid. Families that describe no decoder graphs are refused by name.
// An encoder's plan (VaeSpec.part 'encoder') is read the same way from its encoder graphs: image
// tiles in (input pixels, the latent grid × r), latents out; the image (or, streamed, the bands
// its tiles read) is the coordinator's input buffer.

import { decoderModelOf } from '../decode/decoder-model.js';
import { modelInPrecision, type Precision } from '../graph/precision.js';
import { DistVaeError, reason } from '../errors.js';
import { familyNamesWhere, runtimeOf } from '../families/registry.js';
import type { FamilyRuntime, TileMemoryRuns } from '../families/runtime-types.js';
import type { FrameTiling, Size2, VaeSpec } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { tileGrid, type TileGrid } from '../plan/grid.js';
import { scheduleGrid, tileWork } from '../plan/metrics.js';
import { scheduleInterleaved } from '../plan/scheduler.js';
import { latentShapeOf, type SampleShape } from '../plan/shapes.js';
import type { Strategy } from '../strategies/index.js';
import { splitBands, splitInputBands } from '../strategies/shard/bands.js';
import { exactTilingHalo, exactTiles, type Halo } from '../strategies/exact-tile/halo.js';
import type { Tensor } from '../tensor.js';
import { calibrationOf, type RuntimeCalibration } from './calibration.js';
import { RANK_ALLOCATOR_DEFAULTS } from '../ranks/local/process/allocator-env.js';
import { MMAP_THRESHOLD_MAX, MMAP_THRESHOLD_START, type MallocThreshold } from './liveness.js';
import {
  conv2dWeightBytes,
  decodingHold,
  heapWeightBytes,
  initializerSizes,
  mappedKernelSizes,
  mappedWeightBytes,
  sessionRuns,
  type SessionRun,
} from './runs.js';
import type { ValueShape } from '../graph/ops.js';
import { inferShapes } from './shapes.js';
import { hostCores } from '../runtime/host-memory.js';
import { planOf, shardRankHold, shardRelayBytes } from './shard.js';

/** The kinds of plan the memory model predicts: the whole decode in one call, or a `useStrategy` strategy. */
export type MemoryStrategy = 'whole' | Strategy;

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
  /**
   * Intra-op threads of each rank, where the plan sets them: the memory policy's whole decode
   * for R ranks of one machine takes R × the threads per rank (docs/design.md §13). Absent: the
   * decode's own `threads` (or the cores / its ranks).
   */
  threads?: number;
}

/**
 * What a process's predicted peak is made of, before the calibration's factors: predicted =
 * fixedBytes + Σ factor × term + buffers. The calibration mode of bench/memory-model.ts fits the
 * factors to measured peaks from these terms.
 */
export interface MemoryTerms {
  /** Weight bytes of the loaded VAE, when this process decodes (its own load, e.g. a rank's). */
  decodingWeights: number;
  /** Weight bytes of the sessions it opens (each session holds its own weights: Wan's first and next graphs both). */
  sessionWeights: number;
  /** Of the sessions' weights, the 2-D convolutions' (onnxruntime's CPU EP keeps a prepacked copy too; runs.ts conv2dWeightBytes). */
  packedWeights: number;
  /**
   * Of the sessions' weights, those in initializers under the process's mmap threshold (runs.ts
   * heapWeightBytes): what onnxruntime reads and frees while it opens a session stays in glibc's
   * heap for those; larger ones are mmapped and returned (HunyuanImage's 144 MiB kernels).
   */
  heapWeights: number;
  /**
   * Of the sessions' weights, the kernels onnxruntime's CPU EP reads in place from the mapped
   * weights file (convolutions that are not 2-D: 3-D kernels) at or over the process's mmap
   * threshold (runs.ts mappedWeightBytes): resident, file-backed, from the first run on.
   * HunyuanVideo 1.5's published decoder (3.3 GiB of 3-D kernels) in a rank process.
   */
  mappedWeights: number;
  /** Weight bytes, when this process only holds the loaded VAE. */
  holdingWeights: number;
  /** Sum over its sessions of their largest run's activation peak (graph liveness): what each arena keeps. */
  activation: number;
  /**
   * The same for an encoder's sessions (their own factor: an encoder's largest tensors come first,
   * at full resolution, and measure under the decoder's factor — sd-encode-whole-512: +22 %).
   */
  encoderActivation: number;
  /** An encode's image held whole in the assembling process (a JPEG, or a whole encode): decoded, mapped to the input range, copied. */
  inputImage: number;
  /** `activation` with every buffer as onnxruntime's WebGPU provider sizes it (its buckets): a GPU rank's device term (device-memory.ts); not a host term. */
  deviceActivation: number;
  /** The memory pattern's block of the largest shape each session runs at least twice (runs.ts). */
  pattern: number;
  /** Activation peaks of sessions run again within a tile on the history they keep (Wan's frame steps, runs.ts). */
  recurrent: number;
  /** Arena regions added by runs larger than every earlier run of their session (runs.ts). */
  growth: number;
  /** A row-sharded rank's largest step: values kept for later steps plus the step's work (shard.ts). */
  shard: number;
  /** At that step, the bytes glibc's heap has served a stage run so far (tensors under its dynamic mmap threshold, shard.ts). */
  heap: number;
  /** The largest message a coordinator relays between its row-sharded rank processes (shard.ts). */
  relay: number;
  /** The decoded output, in the process that assembles and writes it. */
  output: number;
  /** The largest tensor of its runs: the buffers onnxruntime adds that the graph does not show (layout reorders of the largest convolutions' operands, the output copied out), a few of them at a time. */
  largestTensor: number;
  /** 1 when the process decodes on a rank thread of its own (a second JS realm and module graph). */
  rankThread: number;
  /**
   * A process under glibc's default arenas (the coordinator decoding itself, a rank started with
   * DISTVAE_RANK_ALLOCATOR=inherit) that runs more than one tile with more than one intra-op
   * thread: its activation peak × (threads − 1). Each thread that allocates gets an arena of its
   * own, whose freed chunks stay resident beside the main one's (TAEF2's 512x560 tiles of a
   * 768x2048 latent in the coordinator with 2 threads: 737 MiB against 530 without this term).
   * Rank processes under distvae's allocator settings (one arena) measure no such excess.
   */
  threadArena: number;
  /** Buffers counted as they are (latent, tile outputs a rank returns, a runner's kept state). */
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
  /** Coordinator plus every local rank: the median a decode of this plan measures. */
  peakBytes: number;
  /** The upper bound of the measured peak (peakBytes × the calibration's boundFactor): what a budget is compared with. */
  boundBytes: number;
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
      cal.sessionWeightCopies * t.sessionWeights +
      cal.packedWeightCopies * t.packedWeights +
      cal.heapWeightCopies * t.heapWeights +
      cal.mappedWeightCopies * t.mappedWeights +
      cal.holdingWeightCopies * t.holdingWeights +
      cal.activationFactor * t.activation +
      cal.encoderActivationFactor * t.encoderActivation +
      cal.inputImageCopies * t.inputImage +
      cal.patternFactor * t.pattern +
      cal.recurrentFactor * t.recurrent +
      cal.growthFactor * t.growth +
      cal.shardFactor * t.shard +
      cal.heapFactor * t.heap +
      cal.relayCopies * t.relay +
      cal.outputCopies * t.output +
      cal.largestTensorCopies * t.largestTensor +
      cal.rankThreadBytes * t.rankThread +
      cal.threadArenaFactor * t.threadArena +
      t.buffers,
  );
}

export interface MemoryModelOptions {
  /** Execution provider whose calibration applies (default 'cpu'). */
  provider?: string;
  /**
   * The image is written band by band as its tile rows finish (the CLI's .png and .npy outputs):
   * tiles are then dealt to the ranks round-robin in raster order (strategies/tile), not by the
   * balanced schedule, so each rank's tiles — and its peak — differ. Default false (a decode
   * that returns the whole sample).
   */
  streamed?: boolean;
  /**
   * How rank processes start their allocator: 'default', with distvae's settings
   * (ranks/local/process/allocator-env.ts: a fixed 256 KiB mmap threshold), or 'inherit', glibc's
   * own (DISTVAE_RANK_ALLOCATOR=inherit; the dynamic threshold, up to 32 MiB). Default 'default'.
   */
  rankAllocator?: 'default' | 'inherit';
  /**
   * An encode whose tiles read their input band by band (a PNG or .npy through io/row-source.ts):
   * the coordinator holds the bands of the tiles in flight, not the float image. Default false
   * (the image read whole: JPEG, or a whole encode).
   */
  bands?: boolean;
  /**
   * An encode that returns the latent distribution's moments (`encodeFile`'s `sample`: the encoder
   * built without the mean's slice, FamilyEncoder.moments): its latents out are 2·C channels — the
   * tiles a rank returns and the blended moments the assembling process holds — and the sample
   * drawn from them is one more latent of C. Default false (the mean).
   */
  moments?: boolean;
  /**
   * Intra-op threads of each decoding process where the plan does not set them (its `threads`
   * wins); default: this machine's cores, the CLI's default.
   */
  threads?: number;
}

/** The half of a VAE a plan runs (VaeSpec.part; absent: the decoder). */
function partOf(vae: Pick<VaeSpec, 'part'>): 'decoder' | 'encoder' {
  return vae.part ?? 'decoder';
}

interface ArchitectureMemory {
  runtime: FamilyRuntime;
  /** The half whose graphs these are. */
  part: 'decoder' | 'encoder';
  config: VaeSpec['config'];
  precision: Precision;
  /** Every weight a view of one shared zero buffer (shapes only). */
  weights: Map<string, Tensor>;
  /**
   * The fused decoder graph as its sessions run it (in float16 with its Casts where the precision
   * is fp16): what tensors are sized from.
   */
  model: ModelProto | null;
  /**
   * The fused decoder graph as built, in float32: what the structural analyses read (the shard
   * plan, halos, locality). The fp16 rewrite's Casts split the sync regions those analyses need
   * as contiguous runs, and a rank builds its shard plan from this graph too, rewriting each stage
   * to the precision as its session opens (strategies/shard/rank-program.ts).
   */
  structural: ModelProto | null;
  weightBytes: number;
  /** Session runs per latent tile dims. */
  runs: Map<string, SessionRun[]>;
  /** Whole-graph shapes per latent dims (row sharding). */
  shapes: Map<string, Map<string, ValueShape>>;
  halo?: Halo | null;
}

const architectures = new Map<string, ArchitectureMemory>();

function architectureKey(vae: VaeSpec): string {
  return `${vae.family.name}:${partOf(vae)}:${vae.precision ?? 'fp32'}:${JSON.stringify(vae.config.fields)}`;
}

/** What the memory model reads of an architecture: its graphs with zero weights (shapes only). */
function architectureOf(vae: VaeSpec): ArchitectureMemory {
  const key = architectureKey(vae);
  const known = architectures.get(key);
  if (known) return known;
  const runtime = runtimeOf(vae.family);
  const part = partOf(vae);
  if (!hasMemoryModel(vae)) {
    const r = reason(
      'NO_MEMORY_MODEL',
      'family',
      vae.family.name,
      `a family that describes its ${part} graphs (${familyNamesWhere((x) => describesGraphs(x, part)).join(', ')})`,
      `the memory model reads the ${part}'s graphs, which the ${vae.family.name} family does not describe; its default plan is used`,
    );
    throw new DistVaeError('UNSUPPORTED', r.message, { reasons: [r] });
  }
  const encoder = part === 'encoder' ? runtime.encoder! : null;
  const params = encoder ? encoder.params(vae.config) : runtime.decoderParams(vae.config);
  const precision = vae.precision ?? 'fp32';
  let largest = 0;
  let weightBytes = 0;
  for (const p of params) {
    const n = p.dims.reduce((a, b) => a * b, 1);
    largest = Math.max(largest, n);
    // In float16 the sessions hold each weight folded to float16 (graph/precision.ts).
    weightBytes += (precision === 'fp16' ? 2 : 4) * n;
  }
  const zeros = new Float32Array(largest);
  const weights = new Map<string, Tensor>(
    params.map((p) => [
      p.name,
      {
        dims: [...p.dims],
        data: zeros.subarray(
          0,
          p.dims.reduce((a, b) => a * b, 1),
        ),
      },
    ]),
  );
  // The graphs as the sessions run them: in float16 with their Casts, so tensors are sized by their element type.
  const fused = encoder
    ? (encoder.graph?.(vae.config, weights).toModel() ?? null)
    : runtime.decoderGraph
      ? decoderModelOf(vae.family, runtime, vae.config, weights)
      : null;
  const model = fused && modelInPrecision(fused, precision);
  const entry: ArchitectureMemory = {
    runtime,
    part,
    config: vae.config,
    precision,
    weights,
    model,
    structural: fused,
    weightBytes,
    runs: new Map(),
    shapes: new Map(),
  };
  architectures.set(key, entry);
  return entry;
}

/** The float32 fused decoder graph the structural analyses read (see `structural`); UNSUPPORTED where the family exposes none. */
function graphOf(arch: ArchitectureMemory, vae: VaeSpec): ModelProto {
  if (arch.structural) return arch.structural;
  const withheld = runtimeOf(vae.family).graphWithheld;
  const r = reason(
    'NO_DECODER_GRAPH',
    'family',
    vae.family.name,
    `a family that exposes its decoder graph (${familyNamesWhere((r) => r.decoderGraph !== undefined).join(', ')})`,
    `the ${vae.family.name} family does not expose its fused decoder graph${withheld ? ` (${withheld})` : ''}: row sharding and halo-exact tiles need it`,
  );
  throw new DistVaeError('UNSUPPORTED', r.message, { reasons: [r] });
}

/** The runs the family describes for one tile of its half (its `memoryRuns`), if it describes them. */
function describedRuns(arch: ArchitectureMemory, dims: readonly number[]): TileMemoryRuns | undefined {
  const own = arch.part === 'encoder' ? arch.runtime.encoder!.memoryRuns : arch.runtime.memoryRuns;
  return own?.(arch.config, arch.weights, dims);
}

/** The session runs of one tile decode (or encode) on its tile dims (latent, or an encoder's image: `tileInputDims`) (memoised). */
function runsFor(arch: ArchitectureMemory, dims: readonly number[]): SessionRun[] {
  const key = dims.join('x');
  let runs = arch.runs.get(key);
  if (!runs) {
    const own = describedRuns(arch, dims);
    const description = own
      ? { ...own, sessions: own.sessions.map((s) => ({ ...s, model: modelInPrecision(s.model, arch.precision) })) }
      : { sessions: [{ key: arch.part, model: arch.model!, runs: 1 }] };
    runs = sessionRuns(description, dims);
    arch.runs.set(key, runs);
  }
  return runs;
}

/** The latent halo that makes tiles exact, or null when the decoder is not local (memoised). */
export function exactHaloOf(vae: VaeSpec): Halo | null {
  const arch = architectureOf(vae);
  if (arch.halo === undefined) {
    try {
      arch.halo = arch.structural ? exactTilingHalo(arch.structural) : null;
    } catch {
      arch.halo = null;
    }
  }
  return arch.halo;
}

/**
 * The fused decoder graph the model sizes tensors from for this VAE, in its precision (zero
 * weights: shapes only), or null where its family describes none.
 */
export function analysisModelOf(vae: VaeSpec): ModelProto | null {
  return architectureOf(vae).model;
}

/**
 * Whether row sharding can run this VAE's half: its fused graph exists and the shard plan builds
 * on it (every nonlocal op a sync region the staged runner merges: GroupNorm, attention).
 * Memoised with the plan (shard.ts planOf).
 */
export function shardable(vae: VaeSpec): boolean {
  if (!hasMemoryModel(vae)) return false;
  const arch = architectureOf(vae);
  if (!arch.structural) return false;
  try {
    planOf(arch.structural);
    return true;
  } catch {
    return false;
  }
}

/** Whether the memory model can read this VAE's half (its family describes that half's graphs). */
export function hasMemoryModel(vae: VaeSpec): boolean {
  return describesGraphs(runtimeOf(vae.family), partOf(vae));
}

/** The memory model reads a half's fused graph or the graphs its runner opens. */
function describesGraphs(runtime: FamilyRuntime, part: 'decoder' | 'encoder'): boolean {
  if (part === 'encoder') return runtime.encoder?.graph !== undefined || runtime.encoder?.memoryRuns !== undefined;
  return runtime.decoderGraph !== undefined || runtime.memoryRuns !== undefined;
}

/** A planner view of `vae` with the plan's tiling installed (the caller's VAE is left as it is). */
export function withPlanTiling(vae: VaeSpec, plan: MemoryPlan): VaeSpec {
  const frames = plan.frames === undefined ? vae.tiling.frames : plan.frames;
  const tiled = plan.strategy === 'tile' || plan.strategy === 'exact-tile';
  const tiling = tiled
    ? {
        ...vae.tiling,
        enabled: true,
        planned: true,
        window: { ...plan.window! },
        overlap: { ...(plan.overlap ?? { height: 0, width: 0 }) },
        frames,
      }
    : { ...vae.tiling, enabled: false, frames: plan.strategy === 'whole' && frames ? { ...frames, enabled: false } : frames };
  return { family: vae.family, config: vae.config, geometry: vae.geometry, tiling, ...(vae.part ? { part: vae.part } : {}) };
}

/**
 * The dims one session run of a tile of h × w latent units takes: the latent tile (a decoder),
 * or the image tile of h·r × w·r input pixels (an encoder).
 */
export function tileInputDims(vae: Pick<VaeSpec, 'geometry' | 'part'>, batch: number, h: number, w: number, frames: number): number[] {
  const g = vae.geometry;
  if (partOf(vae) === 'encoder') return [batch, g.outChannels, h * g.spatialRatio, w * g.spatialRatio];
  const c = g.latentChannels;
  return g.fiveDimLatents ? [batch, c, frames, h, w] : [batch, c, h, w];
}

function sampleBytes(vae: VaeSpec, batch: number, sample: Required<SampleShape>): number {
  return 4 * batch * vae.geometry.outChannels * sample.frames * sample.height * sample.width;
}

interface Run {
  dims: number[];
  /** Output bytes of this run's cropped share (the tile's part of the output). */
  outBytes: number;
}

const NO_TERMS: MemoryTerms = {
  decodingWeights: 0,
  sessionWeights: 0,
  packedWeights: 0,
  heapWeights: 0,
  mappedWeights: 0,
  holdingWeights: 0,
  activation: 0,
  encoderActivation: 0,
  inputImage: 0,
  deviceActivation: 0,
  pattern: 0,
  recurrent: 0,
  growth: 0,
  shard: 0,
  heap: 0,
  relay: 0,
  output: 0,
  largestTensor: 0,
  rankThread: 0,
  threadArena: 0,
  buffers: 0,
};

/**
 * Predicted peak memory of decoding a latent of `sample`'s size (batch `batch`) with `plan`.
 * Throws UNSUPPORTED for a family whose graphs the model cannot read.
 */
export function predictMemory(
  vae: VaeSpec,
  plan: MemoryPlan,
  sample: SampleShape,
  options: MemoryModelOptions & { batch?: number } = {},
): MemoryPrediction {
  const cal = calibrationOf(options.provider ?? 'cpu');
  const arch = architectureOf(vae);
  const batch = options.batch ?? 1;
  const latent = latentShapeOf(vae.geometry, sample);
  const probe = withPlanTiling(vae, plan);
  const encoding = partOf(vae) === 'encoder';
  // An encode's grid: the same tiles, blended on the latent it writes (plan/grid.ts `encode`).
  const grid = tileGrid(probe, latent, encoding ? { encode: true, spatialOnly: true } : {});
  const outFrames = vae.geometry.fiveDimLatents ? (sample.frames ?? 1) : 1;
  const imageBytes = sampleBytes(vae, batch, { height: sample.height, width: sample.width, frames: outFrames });
  const latentBytes = 4 * batch * vae.geometry.latentChannels * latent.frames * latent.height * latent.width;
  // A decode reads the latent and writes the sample; an encode reads the image and writes latents
  // (the moments, 2·C channels, when it samples; the sample drawn from them is one latent more).
  const moments = encoding && options.moments === true;
  const output = encoding ? (moments ? 2 : 1) * latentBytes : imageBytes;
  const drawn = moments ? latentBytes : 0;
  const r = vae.geometry.spatialRatio;
  // An encode's image tile, the input a rank receives for each (the largest).
  // (Reduced, not spread: a grid may hold hundreds of thousands of tiles.)
  const inputTileBytes = encoding
    ? grid.tiles.reduce((m, t) => Math.max(m, 4 * batch * vae.geometry.outChannels * (t.y1 - t.y0) * r * (t.x1 - t.x0) * r), 0)
    : 0;
  // What the assembling process holds of the input: a decode's latent; an encode's image, or, read
  // band by band for tiles, the rows of one tile row in the source and one copy handed on
  // (encode/tile-bands.ts).
  const bandRows = grid.tiles.reduce((m, t) => Math.max(m, (t.y1 - t.y0) * r), 0);
  // Blended tiles only: halo-exact tiles and row sharding cut their reads from the image read whole.
  const streamedInput = encoding && options.bands === true && grid.tiled && plan.strategy === 'tile';
  const input = !encoding
    ? latentBytes
    : streamedInput
      ? Math.min(imageBytes, 2 * 4 * batch * vae.geometry.outChannels * bandRows * sample.width)
      : 0;
  // An encode's image read whole (a JPEG, a whole encode): its own term (the decode and its copies).
  const inputImage = encoding && !streamedInput ? imageBytes : 0;
  // Temporal chunks run one after another through the same sessions, each on every tile.
  const chunkFrames = grid.chunks.map((c) => c.end - c.start);
  const tileRuns = (g: TileGrid): Run[] => {
    if (plan.strategy === 'exact-tile') {
      // A nonlocal decoder: the locality analysis's own refusal, naming the ops.
      const halo = exactHaloOf(vae) ?? exactTilingHalo(graphOf(arch, vae));
      return exactTiles(g, halo).map((t) =>
        runOf(
          vae,
          t.read.y1 - t.read.y0,
          t.read.x1 - t.read.x0,
          batch,
          chunkFrames[0]!,
          output,
          latent,
          t.core.y1 - t.core.y0,
          t.core.x1 - t.core.x0,
        ),
      );
    }
    return g.tiles.map((t) => runOf(vae, t.y1 - t.y0, t.x1 - t.x0, batch, chunkFrames[0]!, output, latent));
  };
  let maxTensorBytes = 0;
  /** A decoding process's terms for its tiles in the order it runs them (every temporal chunk). */
  // A process decoding here (the coordinator) runs under glibc's dynamic mmap threshold; rank
  // processes under the one their environment fixes (allocator-env.ts) unless inherited.
  const rankThreshold: MallocThreshold =
    options.rankAllocator === 'inherit'
      ? { bytes: MMAP_THRESHOLD_START }
      : { bytes: Number(RANK_ALLOCATOR_DEFAULTS['MALLOC_MMAP_THRESHOLD_']), fixed: true };
  const weightLimit = (t: MallocThreshold) => (t.fixed ? t.bytes : MMAP_THRESHOLD_MAX);
  const threads = plan.threads ?? options.threads ?? hostCores();
  const decoding = (runs: readonly Run[], buffers: number, threshold: MallocThreshold = rankThreshold): MemoryTerms => {
    const sequence = chunkFrames.flatMap((frames) => runs.map((r) => runsFor(arch, framesOf(vae, r.dims, frames))));
    // glibc's default arenas (the threshold not fixed): one per allocating thread (MemoryTerms.threadArena).
    // Not for an encode: its tiles in the coordinator with 2 threads measured no such excess (SD
    // encoder 512² in 256-px tiles: 484 MiB against 522 predicted without the term, 644 with it;
    // 1024² in 512-px tiles: 880 against 892 and 1379; bench/results/encode-sd.md).
    const arenas = !encoding && !threshold.fixed && sequence.length > 1 ? Math.max(0, threads - 1) : 0;
    const hold = decodingHold(sequence, { mmapThreshold: weightLimit(threshold) });
    maxTensorBytes = Math.max(maxTensorBytes, hold.maxTensorBytes);
    // A temporally chunked decode also holds one chunk's raw output while it assembles.
    const chunkOutput = chunkFrames.length > 1 ? hold.outputBytes : 0;
    return {
      ...NO_TERMS,
      decodingWeights: arch.weightBytes,
      sessionWeights: hold.weightBytes,
      packedWeights: hold.packedWeightBytes,
      heapWeights: hold.heapWeightBytes,
      mappedWeights: hold.mappedWeightBytes,
      activation: encoding ? 0 : hold.activation,
      encoderActivation: encoding ? hold.activation : 0,
      deviceActivation: hold.deviceActivation,
      pattern: hold.pattern,
      recurrent: hold.recurrent,
      growth: hold.growth,
      largestTensor: hold.maxTensorBytes,
      threadArena: arenas * hold.activation,
      buffers: buffers + hold.kept + chunkOutput,
    };
  };
  // Halo-exact tiles of an encode on ranks: the coordinator cuts every tile's read (core + halo)
  // from the image when it deals the work, before any rank returns (exact-tiled-decode.ts
  // runExactTiles), so it holds all those image slices at once.
  const exactSlices =
    encoding && plan.strategy === 'exact-tile' && plan.ranks > 1
      ? exactTiles(grid, exactHaloOf(vae) ?? exactTilingHalo(graphOf(arch, vae))).reduce(
          (s, t) => s + 4 * batch * vae.geometry.outChannels * (t.read.y1 - t.read.y0) * r * (t.read.x1 - t.read.x0) * r,
          0,
        )
      : 0;
  const holding: MemoryTerms = { ...NO_TERMS, holdingWeights: arch.weightBytes };
  const assembling = (t: MemoryTerms): MemoryTerms => ({ ...t, output, inputImage, buffers: t.buffers + input + drawn });
  const done = (coordinator: MemoryTerms, ranks: { rank: number; terms: MemoryTerms }[]) =>
    finish(coordinator, ranks, maxTensorBytes, arch.weightBytes, cal);

  if (plan.strategy === 'shard') {
    // The float32 graph, as a rank plans it: its steps, and the band values held between them
    // (a stage's inputs and outputs stay float32); each stage's own work in the precision (shard.ts).
    const model = graphOf(arch, vae);
    const dims = tileInputDims(vae, batch, latent.height, latent.width, latent.frames);
    const key = dims.join('x');
    let whole = arch.shapes.get(key);
    if (!whole) {
      whole = inferShapes(model, { [model.graph!.input![0]!.name!]: dims });
      arch.shapes.set(key, whole);
    }
    // The graph's input rows: an encoder's plan is in input rows (its values at 1/2, 1/4, … of
    // the image), its bands whole latent rows of them (sharded-encode.ts); a decoder's in latent rows.
    const rows = encoding ? latent.height * r : latent.height;
    const cols = encoding ? latent.width * r : latent.width;
    const bands = encoding ? splitInputBands(rows, plan.ranks, r) : splitBands(rows, plan.ranks, r);
    const ranks = bands.map((b) => {
      const share = (b.end - b.start) / rows;
      const hold = shardRankHold(model, whole, b, rows, {
        heapWeight: cal.shardFactor > 0 ? cal.heapFactor / cal.shardFactor : 0,
        start: rankThreshold,
        precision: arch.precision,
      });
      maxTensorBytes = Math.max(maxTensorBytes, hold.maxTensorBytes);
      return {
        rank: b.rank,
        terms: {
          ...NO_TERMS,
          decodingWeights: arch.weightBytes,
          sessionWeights: arch.weightBytes,
          // Weights as the sessions hold them: the precision's graph (a float16 kernel behind its Cast is not prepacked).
          packedWeights: conv2dWeightBytes(arch.model!),
          heapWeights: heapWeightBytes(initializerSizes(arch.model!), weightLimit(rankThreshold)),
          mappedWeights: mappedWeightBytes(mappedKernelSizes(arch.model!), weightLimit(rankThreshold)),
          shard: hold.peakBytes,
          heap: hold.heapBytes,
          largestTensor: hold.maxTensorBytes,
          buffers: output * share,
        },
      };
    });
    const relay = plan.ranks > 1 ? shardRelayBytes(model, bands, rows, cols, batch) : 0;
    return done({ ...assembling(holding), relay }, ranks);
  }
  const runs = tileRuns(grid);
  // Decoding in this process: on a rank thread, next to the coordinator's own loaded VAE, and
  // assembling here.
  // An encode runs in the coordinator's own thread on the encoder it loaded (encodeFile).
  if (encoding && plan.ranks <= 1 && !plan.isolated) return done(assembling(decoding(runs, 0, { bytes: MMAP_THRESHOLD_START })), []);
  if (plan.ranks <= 1 && !plan.isolated)
    return done(assembling({ ...decoding(runs, 0, { bytes: MMAP_THRESHOLD_START }), holdingWeights: arch.weightBytes, rankThread: 1 }), []);
  const schedule =
    options.streamed && !encoding && !vae.geometry.fiveDimLatents
      ? scheduleInterleaved(tileWork(grid), Math.max(1, plan.ranks))
      : scheduleGrid(grid, Math.max(1, plan.ranks));
  const ranks = schedule.ranks.map((tiles, rank) => {
    if (tiles.length === 0) return { rank, terms: holding };
    const mine = [...tiles].sort((a, b) => a - b).map((i) => runs[i]!);
    const owned = mine.reduce((s, r) => s + r.outBytes, 0);
    return { rank, terms: decoding(mine, Math.min(owned, output) + inputTileBytes) };
  });
  return done(assembling({ ...holding, buffers: exactSlices }), ranks);
}

/** A tile's latent dims with a temporal chunk's frames. */
function framesOf(vae: VaeSpec, dims: readonly number[], frames: number): number[] {
  return vae.geometry.fiveDimLatents ? [dims[0]!, dims[1]!, frames, dims[3]!, dims[4]!] : [...dims];
}

function runOf(
  vae: VaeSpec,
  h: number,
  w: number,
  batch: number,
  frames: number,
  output: number,
  latent: { height: number; width: number },
  coreH = h,
  coreW = w,
): Run {
  return { dims: tileInputDims(vae, batch, h, w, frames), outBytes: (output * (coreH * coreW)) / (latent.height * latent.width) };
}

function finish(
  coordinator: MemoryTerms,
  ranks: { rank: number; terms: MemoryTerms }[],
  maxTensorBytes: number,
  weightBytes: number,
  cal: RuntimeCalibration,
): MemoryPrediction {
  const c = { peakBytes: peakOfTerms(coordinator, cal), terms: coordinator };
  const r = ranks.map((x) => ({ rank: x.rank, peakBytes: peakOfTerms(x.terms, cal), terms: x.terms }));
  const peakBytes = c.peakBytes + r.reduce((s, x) => s + x.peakBytes, 0);
  return {
    peakBytes,
    boundBytes: Math.ceil(peakBytes * cal.boundFactor),
    coordinatorBytes: c.peakBytes,
    coordinator: c,
    ranks: r,
    maxTensorBytes,
    weightBytes,
    provider: cal.provider,
  };
}

/**
 * Predicted peak of one process that decodes these latent tiles in turn (a queue worker's run):
 * the runtime, the weights of its sessions, their arenas over the tiles in order and one decoded tile.
 */
export function predictTileRun(vae: VaeSpec, tiles: readonly (readonly number[])[], options: MemoryModelOptions = {}): ProcessPrediction {
  const cal = calibrationOf(options.provider ?? 'cpu');
  const arch = architectureOf(vae);
  if (tiles.length === 0) {
    const idle: MemoryTerms = { ...NO_TERMS, decodingWeights: arch.weightBytes };
    return { peakBytes: peakOfTerms(idle, cal), terms: idle };
  }
  const hold = decodingHold(tiles.map((t) => runsFor(arch, t)));
  const terms: MemoryTerms = {
    ...NO_TERMS,
    decodingWeights: arch.weightBytes,
    sessionWeights: hold.weightBytes,
    packedWeights: hold.packedWeightBytes,
    heapWeights: hold.heapWeightBytes,
    mappedWeights: hold.mappedWeightBytes,
    activation: hold.activation,
    deviceActivation: hold.deviceActivation,
    pattern: hold.pattern,
    recurrent: hold.recurrent,
    growth: hold.growth,
    largestTensor: hold.maxTensorBytes,
    buffers: hold.outputBytes + hold.kept,
  };
  return { peakBytes: peakOfTerms(terms, cal), terms };
}

/**
 * The graphs one tile decode on latent tile dims runs, with how often each runs (the family's
 * `memoryRuns`, else one run of its fused decoder): what the time model counts arithmetic over.
 */
export function tileGraphs(vae: VaeSpec, dims: readonly number[]): { model: ModelProto; runs: number }[] {
  const arch = architectureOf(vae);
  const description = describedRuns(arch, dims) ?? {
    // The precision's graph: its arithmetic and the bytes it writes are the sessions'.
    sessions: [{ key: arch.part, model: arch.model ?? graphOf(arch, vae), runs: 1 }],
  };
  return description.sessions.map((s) => ({ model: s.model, runs: s.runs }));
}

/** The float32 fused decoder graph of a VAE (row sharding's and the locality analysis' view); UNSUPPORTED for a family that exposes none. */
export function decoderGraphOf(vae: VaeSpec): ModelProto {
  return graphOf(architectureOf(vae), vae);
}

/** Bytes of a VAE's decoder weights (float32), from its parameter list. */
export function decoderWeightBytes(vae: VaeSpec): number {
  return architectureOf(vae).weightBytes;
}
