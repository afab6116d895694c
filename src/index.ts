// distvae's public API: what a program (and the `distvae` CLI, which imports nothing else) may
// use, grouped in the order a decode needs it — name a VAE, plan its tiling, pick a strategy
// and ranks, decode, write the result. Internals (graph building, session plumbing, rank
// protocols) are not exported; classes whose factories validate (Vae, LocalGroup, QueueGroup)
// are exported as types only.

// ---- Errors: one typed error, closed vocabularies of codes --------------------------------
export { DistVaeError, isDistVaeError, isRuntimeFailure, reason, refuse, RUNTIME_FAILURE_CODES, throwIfAborted } from './errors.js';
export type { ErrorCode, Reason, ReasonCode } from './errors.js';

// ---- Tensors ---------------------------------------------------------------------------------
export { elementCount, seededTensor, tensor, type Tensor } from './tensor.js';
export type { DType, FloatDType, StoredTensor } from './weights/dtype.js';

// ---- Sources and families: what a user names -> family, config, weights -----------------------
export { loadVae, type LoadOptions, type Vae } from './decode/vae.js';
export type { BoundVae } from './decode/bound-vae.js';
export { DIFFUSERS_WEIGHTS_FILE, readVaeSource, vaeSpecOfSource, type VaePart, type VaeSource } from './sources/vae-source.js';
export { readConfigJson } from './sources/config-file.js';
export { readWeights } from './sources/weights-file.js';
export { openWeights, readBoundWeights } from './sources/weights-file.js';
export { bytesSource, blobSource, httpRangeSource, type ByteSource } from './bytes/byte-source.js';
export { openFileSource, withFileSource, type FileByteSource } from './bytes/file-source.js';
export { hubCacheDirs, locateVae, parseRepoId, withVariant, type LocateOptions, type VaeLocation } from './sources/locate.js';
export { singleFileConfig, singleFileLayout, singleFileToDiffusers, type SingleFileLayout } from './sources/single-file.js';
export { readTensors, type TensorEntry, type TensorReader } from './weights/reader.js';
export { DISTVAE_VERSION } from './version.js';
export {
  createVae,
  decoderWeightBytes,
  FAMILIES,
  FAMILY_NAMES,
  familyForClassName,
  getFamily,
  resolveFamily,
  type FamilyName,
} from './families/registry.js';
export { TAE_KEY_LAYOUTS, TAE_VARIANTS, type TaeKeyLayout, type TaeVariant } from './families/tae/spec.js';
export type {
  FamilySpec,
  FrameTiling,
  RawConfig,
  ResolvedConfig,
  Size2,
  TilingDefaults,
  TilingState,
  VaeGeometry,
  VaeSpec,
} from './families/types.js';
export { syntheticWeights, type ParamSpec } from './weights/synthetic.js';

// ---- Planning (pure: no I/O, runs in a browser) ----------------------------------------------
export { disableTiling, explainTiling, setTiling, type TilingRequest } from './plan/planner.js';
export {
  applyTilePlan,
  explainTileFramePlan,
  explainTileOverlapPlan,
  explainTileShapePlan,
  installTiling,
  tileFramePlan,
  tileOverlapPlan,
  tileShapePlan,
  type PlanOptions,
  type TileFramePlan,
  type TileOverlapPlan,
  type TilePlan,
  type TileShapePlan,
} from './plan/planner.js';
export { latentShapeOf, sampleShapeOf, sampleShapeReasons, type LatentShape, type SampleShape } from './plan/shapes.js';
export { tileArea, tileGrid, type Span, type Tile, type TileGrid } from './plan/grid.js';
export { gridMetrics, scheduleGrid, tileWork, type GridMetrics } from './plan/metrics.js';
export { scheduleTiles, type Schedule } from './plan/scheduler.js';
export { planReport, type PlanReport, type RankReport } from './plan/report.js';
export { MIN_NARROW_AXIS_LATENT, searchPlans, type SearchCandidate, type SearchResult } from './plan/search.js';
export { BUCKET_POLICIES, chooseBucket, parseBuckets, type BucketChoice, type BucketPolicy, type Box } from './plan/buckets.js';
export { diffusersEquivalent } from './plan/equivalence.js';

// ---- Decoding on this process ----------------------------------------------------------------
export { localTiledDecode } from './decode/engine.js';
export { decodeToBands, decodeToFrames } from './decode/engine.js';
export { checkLatents } from './decode/latents.js';
export type { DecodeOptions, DecodeProgress, RankStats, TiledDecode } from './decode/types.js';
export type { TileRunner } from './families/runtime-types.js';
export { decoderGraphOf } from './decode/decoder-graph.js';

// ---- Strategies: how tiles are decoded, and on which ranks -----------------------------------
export {
  STRATEGIES,
  useStrategy,
  type ShardRankSummary,
  type Strategy,
  type StrategyReport,
  type UseStrategyOptions,
} from './strategies/index.js';
export type { AnalyzableVae, DistributableVae } from './strategies/distributable.js';
export { tiledDecodeFor } from './strategies/tile/tiled-decode.js';
export type { DistributedDecodeStats, DistributedTiledDecode, TiledDecodeForOptions } from './strategies/tile/tiled-decode.js';
export { shardedDecodeFor, type ShardedDecode, type ShardRankStats, type ShardStats } from './strategies/shard/sharded-decode.js';
export { splitBands, type Band } from './strategies/shard/bands.js';
export { predictCollectives, shardPlan, type ShardPlan } from './strategies/shard/plan.js';
export { exactTiledDecode, exactTilingHalo, type Halo } from './strategies/exact-tile/halo.js';
export { exactTiledDecodeFor, type DistributedExactTiledDecode, type ExactTileStats } from './strategies/exact-tile/exact-tiled-decode.js';

// ---- Rank groups: threads, processes, a Redis queue ------------------------------------------
export type { RankFailure, RankGroup, TileJobResult } from './ranks/group.js';
export type { CommCounters } from './ranks/program.js';
export { ISOLATIONS, localGroup } from './ranks/local/index.js';
export type { Isolation, LocalGroup, LocalGroupOptions } from './ranks/local/local-group.js';
export { killRankProcesses } from './ranks/local/process/process-host.js';
export { queueGroup } from './ranks/queue/index.js';
export type { QueueGroup, QueueGroupOptions, QueueTraffic } from './ranks/queue/queue-group.js';
export { startQueueWorker, type QueueWorker, type QueueWorkerOptions } from './ranks/queue/queue-worker.js';
export { redacted, redisOptionsOf, type RedisConnection } from './ranks/queue/connection.js';
export { DEFAULT_QUEUE } from './ranks/queue/protocol.js';

// ---- Memory: predicted peaks, budgets, the fallback ladder -----------------------------------
export {
  MEMORY_STRATEGIES,
  predictMemory,
  predictTileRun,
  hasMemoryModel,
  type MemoryPlan,
  type MemoryPrediction,
  type MemoryStrategy,
  type MemoryTerms,
  type ProcessPrediction,
  type RankPrediction,
} from './memory/model.js';
export {
  chooseWithinBudget,
  budgetRefusal,
  describePlan,
  policyPlans,
  type BudgetChoice,
  type ChooseOptions,
  type MemoryBudget,
  type PlanAlternative,
} from './memory/policy.js';
export { applyMemoryPlan, planOfTiling } from './memory/apply.js';
export { availableMemory, defaultMemoryBudget, formatBytes, parseMemorySize, peakRssBytes, DEFAULT_BUDGET_SHARE } from './runtime/memory-budget.js';
export { CALIBRATIONS, calibrationOf, type RuntimeCalibration } from './memory/calibration.js';
export type { LadderAttempt } from './memory/ladder.js';

// ---- Reading and writing files ---------------------------------------------------------------
export { LATENTS_KEY, readLatents } from './io/latents.js';
export { COMFY_LATENT_KEY, latentScalingOf, unscaleLatents } from './io/latents.js';
export { AtomicFile, withAtomicFile, writeFileAtomic } from './bytes/atomic-file.js';
export { encodeNpy, npyHeader, parseNpy, readNpy, writeNpy, type NpyDType, type NpyWriteOptions } from './io/npy.js';
export { decodeImage, READABLE_IMAGE_FORMATS, readImage, sampleToImage, writeSamplePng, type SampleRange } from './io/image.js';
export { DEFAULT_FPS, killVideoEncoders, writeSampleVideo, type VideoOptions } from './io/video.js';
export { encodeSafetensors, parseSafetensors, readSafetensors, writeSafetensors } from './weights/safetensors.js';
export { openPth, parsePth, readPth, type PthContents, type PthReader } from './weights/pth.js';

// ---- Encoding images to latents (tae) --------------------------------------------------------
export { checkImage, cropToMultiple, loadEncoder, type Encoder } from './encode/encoder.js';
export type { BoundEncoder } from './encode/bound-encoder.js';

// ---- Graphs and their locality ---------------------------------------------------------------
export { analyzeLocality, formatScale, type LocalityReport, type StageLocality } from './graph/locality.js';
export { formatRatio } from './graph/ratio.js';
export { dumpModel } from './graph/dump.js';
export { decodeModel, encodeModel, type ModelProto } from './graph/onnx-proto.js';

// ---- Execution providers ---------------------------------------------------------------------
export { EXECUTION_PROVIDERS, listProviders, type ProviderStatus } from './runtime/providers.js';
export type { ProviderName } from './runtime/session-types.js';

// ---- The decode session: latent files to image / sample / video files, as a user asks ---------
export { decodeFiles, type DecodedFile, type DecodeFilesHooks } from './session/decode-files.js';
export { decodeFilesReasons, OUTPUT_FORMATS, type DecodeFilesOptions, type OptionLabels, type OutputFormat } from './session/options.js';
export { installRequestedTiling } from './session/decision.js';
export { alternativeJson, choiceJson, memoryJson } from './session/report.js';
export type { ChoiceReport, DecodeReport, FileProgress, MemoryReport } from './session/report.js';

// ---- Benchmarks (`distvae bench`) ------------------------------------------------------------
export { ARM_NAMES, runBenchCell, type ArmName, type BenchCell, type BenchCellOptions } from './bench/arms.js';
export { benchReport, writeBenchReport, type BenchReport } from './bench/report.js';
export { describeRun, type RunDescription } from './bench/machine.js';
