// distvae's root API: what the README's user needs, in the order a decode needs it — name a VAE,
// plan its tiling, decode (files, or a tensor), distribute over ranks, stay within a memory
// budget, write the result, encode. Advanced pieces live in subpath entries (`distvae/plan`,
// `distvae/families`, `distvae/sources`, `distvae/io`, `distvae/decode`, `distvae/graph`,
// `distvae/memory`, `distvae/ranks`, `distvae/bench`; src/entries/). src/index.test.ts counts the
// names here: new options go on the session calls, not new exports. Classes whose factories
// validate (Vae, LocalGroup, QueueGroup) are exported as types only.

// ---- Errors: one typed error, closed vocabularies of codes --------------------------------
export { DistVaeError, isDistVaeError, isRuntimeFailure } from './errors.js';
export type { ErrorCode, Reason, ReasonCode } from './errors.js';

// ---- Tensors ---------------------------------------------------------------------------------
export { seededTensor, tensor, type Tensor } from './tensor.js';

// ---- A VAE: loaded to decode, or for planning only -------------------------------------------
export { loadVae, type LoadOptions, type Vae } from './decode/vae.js';
export type { VaeSource } from './sources/vae-source.js';
export { FAMILY_NAMES, planningVae, type FamilyName } from './families/registry.js';
export type { VaeSpec } from './families/types.js';
export { DISTVAE_VERSION } from './version.js';

// ---- Planning: one writer of the tiling state (a request, a plan, or off) ---------------------
export { explainTiling, setTiling, type TilingRequest } from './plan/planner.js';
export type { SampleShape } from './plan/shapes.js';
export { planReport, type PlanReport } from './plan/report.js';
export { searchPlans, type SearchResult } from './plan/search.js';

// ---- Decoding: latent files to image / sample / video files, or a tensor ----------------------
export { decodeFiles, type DecodedFile, type DecodeFilesHooks } from './session/decode-files.js';
export type { DecodeFilesOptions } from './session/options.js';
export type { DecodeReport } from './session/report.js';
export { killChildProcesses } from './session/children.js';
export type { DecodeOptions, DecodeProgress } from './decode/types.js';

// ---- Distributing: one way to pick a strategy, over threads, processes or a Redis queue -------
export { STRATEGIES, useStrategy, type Strategy, type StrategyReport } from './strategies/index.js';
export { localGroup } from './ranks/local/index.js';
export type { LocalGroupOptions } from './ranks/local/local-group.js';
export { queueGroup } from './ranks/queue/index.js';
export type { QueueGroupOptions } from './ranks/queue/queue-group.js';
export { startQueueWorker, type QueueWorkerOptions } from './ranks/queue/queue-worker.js';
export type { RankGroup } from './ranks/group.js';

// ---- Memory budgets: predicted peaks, the best plan that fits --------------------------------
export { chooseWithinBudget, budgetRefusal, type BudgetChoice, type MemoryBudget, type PlanAlternative } from './memory/policy.js';
export { predictMemory, type MemoryPrediction } from './memory/model.js';
export { defaultMemoryBudget, formatBytes, parseMemorySize } from './runtime/memory-budget.js';

// ---- Files ---------------------------------------------------------------------------------
export { readLatents } from './io/latents.js';
export { readNpy, writeNpy } from './io/npy.js';
export { readImage, writeSamplePng, type SampleRange } from './io/image.js';
export { writeSampleVideo } from './io/video.js';

// ---- Encoding images to latents --------------------------------------------------------------
export { cropToMultiple, loadEncoder, type Encoder } from './encode/encoder.js';
export { ENCODE_OUTPUT_EXTENSIONS, encodeFile, type EncodedFile, type EncodeFileOptions } from './session/encode-file.js';

// ---- Execution providers ---------------------------------------------------------------------
export { listProviders } from './runtime/providers.js';
export type { ProviderName } from './runtime/session-types.js';
