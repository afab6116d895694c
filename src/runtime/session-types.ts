// What a session module offers, whichever onnxruntime runs the graphs: the provider a session
// asks for (with the settings that provider takes), the session options, the session, and the
// module's own shape. package.json's `browser` map swaps session.ts (onnxruntime-node) for
// web-session.ts (onnxruntime-web) in a page, which the compiler cannot follow; both modules
// are checked against SessionModule instead (session-types.test.ts). No onnxruntime import here.

import type { ModelProto } from '../graph/onnx-proto.js';
import type { Precision } from '../graph/precision.js';
import type { Tensor } from '../tensor.js';

/** An execution provider distvae knows how to request on Node (EXECUTION_PROVIDERS describes each). */
export type ProviderName = 'cpu' | 'cuda' | 'tensorrt' | 'webgpu' | 'dml' | 'coreml';

/** The providers a page can ask for ('cpu' there means 'wasm'). */
export type WebProvider = 'webgpu' | 'wasm';

/** The providers whose onnxruntime binding takes a device id. */
export type DeviceProviderName = 'cuda' | 'tensorrt' | 'dml';

/** Settings of the WebGPU provider that both onnxruntime bindings take (onnxruntime-common's WebGpuExecutionProviderOption). */
export interface WebGpuSettings {
  /** Layout of layout-sensitive operators (onnxruntime's default: 'NCHW'). */
  preferredLayout?: 'NCHW' | 'NHWC';
  /** WebGPU validation (onnxruntime's default: 'basic'); 'disabled' may crash a Node process on a WebGPU error. */
  validationMode?: 'disabled' | 'wgpuOnly' | 'basic' | 'full';
  /**
   * How released storage buffers are kept for reuse (onnxruntime's default: 'bucket', size
   * buckets; 'simple' reuses exact sizes only; 'lazyRelease' frees at the end of a run;
   * 'disabled' frees at once). An arm of bench/gpu-arms.ts.
   */
  storageBufferCacheMode?: 'disabled' | 'lazyRelease' | 'simple' | 'bucket';
}

/**
 * The execution provider a session runs on, shaped like onnxruntime's `executionProviders`
 * entries: a bare name asks for the provider's defaults; an object carries the settings that
 * provider takes, so the compiler refuses one it lacks (a device id for 'cpu'). Users' strings
 * become one with `providerRequest` (providers.ts), which refuses an unknown name.
 *
 * @example
 * { provider: 'cpu' }
 * { provider: { name: 'cuda', deviceId: 1 } }
 * { provider: { name: 'webgpu', preferredLayout: 'NHWC' } }
 */
export type ProviderRequest =
  | ProviderName
  | WebProvider
  | { name: DeviceProviderName; deviceId?: number }
  | ({
      name: 'webgpu';
      /**
       * The adapter (an id of runtime/devices.ts' listing) in Node: onnxruntime-node cannot pick one,
       * so the process is pinned to it through the Vulkan device-select layer before its first
       * WebGPU session; never passed to onnxruntime. One adapter per process.
       */
      adapter?: number;
    } & WebGpuSettings);

/** The provider a request names. */
export function providerNameOf(request: ProviderRequest): ProviderName | WebProvider {
  return typeof request === 'string' ? request : request.name;
}

/**
 * Providers whose 2×2-kernel Conv miscomputes on a 2×2 input: onnxruntime-node 1.30's WebGPU with
 * pads [0, 0, 1, 1] is off by units (runtime/webgpu.test.ts keeps it as a todo, which passes the
 * day it is fixed). Graphs run there spell such a convolution another way.
 */
const CONV_2X2_ON_2X2_WRONG: ReadonlySet<string> = new Set(['webgpu']);

/** Whether a session on this provider request miscomputes a 2×2-kernel Conv on a 2×2 input (CONV_2X2_ON_2X2_WRONG). */
export function convMiscomputesOn2x2(request: ProviderRequest | undefined): boolean {
  return request !== undefined && CONV_2X2_ON_2X2_WRONG.has(providerNameOf(request));
}

export type GraphOptimizationLevel = 'disabled' | 'basic' | 'extended' | 'all';

export interface SessionOptions {
  /** Execution provider and its settings; 'cpu' by default. Never silently replaced by another. */
  provider?: ProviderRequest;
  /**
   * The precision the graphs compute in (default 'fp32'). 'fp16' rewrites each model before its
   * session opens (graph/precision.ts: float16 activations and weights, statistics, softmax and
   * reductions in float32, inputs and outputs float32); refused on the CPU provider.
   */
  precision?: Precision;
  /** Threads one operator may use; default: all logical CPUs of this machine. */
  intraOpThreads?: number;
  /** Threads for running independent nodes concurrently (only with executionMode 'parallel'); default 1. */
  interOpThreads?: number;
  /** Default 'all': adds ORT's NCHWc convolution layout (≈10–15 % faster 512-channel convs). */
  graphOptimization?: GraphOptimizationLevel;
  /** Default 'sequential': decoder graphs are chains; 'parallel' measured ~2× slower. */
  executionMode?: 'sequential' | 'parallel';
  /** ORT's arena allocator for CPU tensors; default true (off, every run re-faults fresh pages: 2–4× slower). */
  enableCpuMemArena?: boolean;
  /**
   * ORT's memory pattern; default: off with the arena, on without it. onnxruntime (inference
   * builds) traces a pattern on a shape's first run and from its second run allocates the
   * pattern as one new block, while the arena keeps the first run's regions: a second decode of
   * the same shape then holds both (512² SD: 1442 → 2242 MiB peak). Off, every run reuses the
   * first run's arena regions (1436 / 1436 MiB) at the same CPU cost (bench/memory.md). Without
   * an arena the pattern's block is freed after each run, so it costs nothing there.
   */
  enableMemPattern?: boolean;
  /** Further session config entries for ORT, keys without their `session.` prefix (e.g. 'disable_prepacking'; the binding adds it). */
  sessionConfig?: Readonly<Record<string, string>>;
  /** Whether idle intra-op threads spin waiting for work; default true (ORT's). Turn off when sessions share cores. */
  allowSpinning?: boolean;
  /** Writes the model as optimised by onnxruntime to this path (for inspection). */
  optimizedModelPath?: string;
  /** Enables ORT's per-node profiler; the JSON trace is written as `<prefix>_<timestamp>.json` on endProfiling(). */
  profileFilePrefix?: string;
}

export interface Session {
  /** The provider the session runs on, by name. */
  readonly provider: ProviderName | WebProvider;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  /**
   * Runs the graph; feeds must name exactly the graph inputs. Returns every graph output.
   * `outputs` pre-allocates some of them: onnxruntime-node writes those outputs straight into
   * the given buffers (dims must be the outputs' shapes), so no fresh JS copy is made and a
   * caller can reuse its buffers; the returned tensors then hold the given data.
   */
  run(feeds: Readonly<Record<string, Tensor>>, outputs?: Readonly<Record<string, Tensor>>): Promise<Record<string, Tensor>>;
  /** Ends profiling and writes the trace (only with profileFilePrefix). */
  endProfiling(): void;
  dispose(): Promise<void>;
}

/** What session.ts and web-session.ts both export: what a caller of `runtime/session.js` may use in either place. */
export interface SessionModule {
  /** Opens a session on ONNX model bytes or a model object; fails before any work if the provider cannot be served. */
  createSession(model: Uint8Array | ModelProto, options?: SessionOptions): Promise<Session>;
  /** Fails, naming what is available, when the options' provider cannot be served here. */
  checkProvider(options?: SessionOptions): Promise<void>;
}
