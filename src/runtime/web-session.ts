// Inference sessions in a browser: the onnxruntime-web counterpart of session.ts, implementing
// the same SessionModule (session-types.ts). package.json's `browser` map puts this module in
// place of session.ts when distvae is bundled for a page, so every caller (graph runners,
// encoders) runs unchanged and only runtime/ knows which onnxruntime runs the graphs. The
// provider is 'webgpu' (with its settings) or 'wasm' ('cpu' means 'wasm'); the page's runtime
// settings (where the .wasm files are, threads, a GPUDevice of chosen limits) are set once,
// before the first session, by configureWebRuntime.
//
// One onnxruntime-web build serves both providers (ort.webgpu: WebGPU plus the WASM CPU
// kernels, SIMD, threaded when the page is cross-origin isolated), so one .wasm file ships.

import * as ort from 'onnxruntime-web/webgpu';
import { DistVaeError, reason, refuse } from '../errors.js';
import { decodeModel, encodeModel, type ModelProto } from '../graph/onnx-proto.js';
import { modelInPrecision } from '../graph/precision.js';
import { checkPrecision } from './precision-check.js';
import type { Tensor } from '../tensor.js';
import { checkFeeds } from './feeds.js';
import { providerNameOf, type ProviderRequest, type Session, type SessionOptions, type WebProvider } from './session-types.js';

export interface WebRuntimeSettings {
  /** URL of the folder holding onnxruntime-web's `ort-wasm-simd-threaded.asyncify.{mjs,wasm}`. */
  wasmPaths?: string;
  /** WASM threads; default: the page's cores (up to 8) when cross-origin isolated, else 1. */
  threads?: number;
  /** The GPUDevice WebGPU sessions run on (its limits are the ones plans are checked against). */
  device?: unknown;
}

let configured = false;

/** Sets onnxruntime-web's global settings; only before the first session (ORT reads them once). */
export function configureWebRuntime(settings: WebRuntimeSettings): void {
  if (configured)
    throw new DistVaeError(
      'UNSUPPORTED',
      'configureWebRuntime: onnxruntime-web is already initialised (configure it before the first session)',
    );
  if (settings.wasmPaths !== undefined) ort.env.wasm.wasmPaths = settings.wasmPaths;
  const g = globalThis as { crossOriginIsolated?: boolean; navigator?: { hardwareConcurrency?: number } };
  const threads = settings.threads ?? (g.crossOriginIsolated ? Math.min(8, g.navigator?.hardwareConcurrency ?? 1) : 1);
  if (!Number.isSafeInteger(threads) || threads < 1) {
    refuse('INVALID_ARGUMENT', reason('THREADS_INVALID', 'threads', threads, 'an integer >= 1'));
  }
  ort.env.wasm.numThreads = threads;
  if (settings.device !== undefined) (ort.env.webgpu as { device: unknown }).device = settings.device;
  ort.env.logLevel = 'error';
}

/** The threads the WASM provider runs with (after configuration). */
export function wasmThreads(): number {
  return ort.env.wasm.numThreads ?? 1;
}

/** The page provider a request names ('cpu' is 'wasm'); node-only providers are refused. */
function webProvider(request: ProviderRequest | undefined): WebProvider {
  const provider = request === undefined ? 'cpu' : providerNameOf(request);
  if (provider === 'cpu' || provider === 'wasm') return 'wasm';
  if (provider === 'webgpu') return 'webgpu';
  refuse(
    'PROVIDER_UNAVAILABLE',
    reason(
      'PROVIDER_UNAVAILABLE',
      'provider',
      provider,
      'webgpu or wasm (in a browser)',
      `execution provider '${provider}' is not available in a browser: use webgpu or wasm`,
    ),
  );
}

/** Fails, naming what is available, when the provider cannot be served in this page. */
export async function checkProvider(options: SessionOptions = {}): Promise<void> {
  checkPrecision(webProvider(options.provider), options.precision ?? 'fp32');
  if (webProvider(options.provider) !== 'webgpu') return;
  const gpu = (globalThis as { navigator?: { gpu?: { requestAdapter(): Promise<{ features?: ReadonlySet<string> } | null> } } }).navigator
    ?.gpu;
  const adapter = gpu ? await gpu.requestAdapter() : null;
  // A page can read the adapter's features: float16 needs shader-f16.
  if (adapter && options.precision === 'fp16' && adapter.features?.has('shader-f16') !== true) {
    refuse(
      'PROVIDER_UNAVAILABLE',
      reason(
        'PROVIDER_UNAVAILABLE',
        'precision',
        'fp16',
        "'fp32' on this adapter",
        "precision 'fp16' needs a WebGPU adapter with shader-f16, and this page's adapter lacks it",
      ),
    );
  }
  if (!adapter) {
    const r = reason(
      'PROVIDER_UNAVAILABLE',
      'provider',
      'webgpu',
      'wasm (no WebGPU adapter in this page)',
      `execution provider 'webgpu' is not available: ${gpu ? 'navigator.gpu gave no adapter' : 'this page has no navigator.gpu'}; available here: wasm`,
    );
    refuse('PROVIDER_UNAVAILABLE', r);
  }
}

/** Opens a session on ONNX model bytes (or a built model, whose weights a page holds in memory) with onnxruntime-web. */
export async function createSession(model: Uint8Array | ModelProto, options: SessionOptions = {}): Promise<Session> {
  const provider = webProvider(options.provider);
  // The WebGPU provider's settings travel as onnxruntime's own entry; otherwise the name is the entry.
  const config = provider === 'webgpu' && typeof options.provider === 'object' ? options.provider : provider;
  checkPrecision(provider, options.precision ?? 'fp32');
  const precision = options.precision ?? 'fp32';
  const graph = precision === 'fp32' ? model : modelInPrecision(model instanceof Uint8Array ? decodeModel(model) : model, precision);
  const modelBytes = graph instanceof Uint8Array ? graph : encodeModel(graph);
  configured = true;
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(modelBytes, {
      executionProviders: [config],
      graphOptimizationLevel: options.graphOptimization ?? 'all',
      executionMode: 'sequential',
      logSeverityLevel: 3,
    });
  } catch (cause) {
    throw new DistVaeError('RUNTIME_FAILED', `onnxruntime-web could not load the model on '${provider}': ${(cause as Error).message}`, {
      cause,
    });
  }
  const inputNames = [...session.inputNames];
  const outputNames = [...session.outputNames];
  return {
    provider,
    inputNames,
    outputNames,
    async run(feeds) {
      checkFeeds(inputNames, feeds);
      const ortFeeds: Record<string, ort.Tensor> = {};
      for (const name of inputNames) ortFeeds[name] = new ort.Tensor('float32', feeds[name]!.data, feeds[name]!.dims);
      let results: ort.InferenceSession.ReturnType;
      try {
        results = await session.run(ortFeeds);
      } catch (cause) {
        throw new DistVaeError('RUNTIME_FAILED', `onnxruntime-web run failed on '${provider}': ${(cause as Error).message}`, { cause });
      }
      const out: Record<string, Tensor> = {};
      for (const name of outputNames) {
        const value = results[name]!;
        if (value.type !== 'float32')
          throw new DistVaeError('UNSUPPORTED', `graph output ${name} has type ${value.type}; distvae graphs must output float32`);
        out[name] = { dims: [...value.dims], data: (await value.getData()) as Float32Array };
        value.dispose();
      }
      return out;
    },
    endProfiling() {
      session.endProfiling();
    },
    dispose() {
      return session.release();
    },
  };
}
