// The `distvae/web` entry: the library in a page. Load a VAE from bytes, Files or URLs, plan
// tiles against the WebGPU device's buffer limits (or WASM's), decode whole / tiled /
// halo-exact on WebGPU or WASM with progress per tile and AbortSignal, and draw the result.
// Bundled for browsers, package.json's `browser` map swaps the Node-only modules (onnxruntime-
// node sessions, file access, host memory) for their page counterparts; nothing here imports a
// `node:` module.

export { DistVaeError, isDistVaeError, type Reason } from './errors.js';
export type { Tensor } from './tensor.js';
export type { Size2, RawConfig, VaeSpec } from './families/types.js';
export { planningVae, FAMILY_NAMES } from './families/registry.js';
export {
  explainTileFramePlan,
  explainTileOverlapPlan,
  explainTileShapePlan,
  setTiling,
  tileFramePlan,
  tileOverlapPlan,
  tileShapePlan,
} from './plan/planner.js';
export { latentMean, latentStd, normalStream, sampleLatents } from './io/latent-sample.js';
export { planReport, type PlanReport } from './plan/report.js';
export { parseNpy, encodeNpy } from './io/npy.js';
export { sampleToImage, type SampleRange } from './io/sample-range.js';
export { checkImage, cropToMultiple } from './encode/image-check.js';
export { graphTensorSizes, type GraphTensorSizes, type TensorSize } from './graph/tensor-sizes.js';
export { blobSource, bytesSource, httpRangeSource, type ByteSource } from './bytes/byte-source.js';
export { readBytes, type BlobLike, type ByteInput } from './web/bytes.js';
export { startWebRuntime, type WebBackend, type WebRuntime, type WebRuntimeOptions } from './web/backend.js';
export {
  checkPlanFits,
  describeLimits,
  installWindow,
  largestFittingWindow,
  planTensorBytes,
  tensorLimitBytes,
  type BufferLimits,
  type DecodeMode,
  WEBGPU_DEFAULT_LIMITS,
} from './memory/device-limits.js';
export { loadWebEncoder, loadWebVae, WebVae, type WebEncoder, type WebLoadOptions, type WebVaeSource } from './web/load.js';
export {
  decodeInPage,
  planWebDecode,
  type WebDecodeOptions,
  type WebDecodePlan,
  type WebDecodeResult,
  type WebTileEvent,
} from './web/decode.js';
export { drawSample, inputOfRgba, rgbaOf, toImageData, type Context2DLike } from './web/canvas.js';
