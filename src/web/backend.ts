// Which backend runs a page's graphs and the buffer limits it imposes. WebGPU when
// `navigator.gpu` yields an adapter (or when asked for by name, refused without one), else
// WASM. For WebGPU the page requests the device itself — with the adapter's largest buffer
// limits, or WebGPU's defaults (256 MiB buffers, 128 MiB bindings) when asked — and hands it
// to onnxruntime-web, so the limits plans are checked against are the ones sessions run under.

import { DistVaeError, reason, refuse } from '../errors.js';
import { configureWebRuntime, wasmThreads } from '../runtime/web-session.js';
import type { WebProvider } from '../runtime/session-types.js';
import type { BufferLimits } from '../memory/device-limits.js';

export type WebBackend = WebProvider;
/** The largest single tensor the WASM backend takes: half a 32-bit WebAssembly memory. */
export const WASM_TENSOR_LIMIT = 2 ** 31;

/** Compute limits onnxruntime's WebGPU kernels use, requested at the adapter's maxima. */
const COMPUTE_LIMITS = [
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
] as const;

interface GpuAdapterLike {
  readonly limits: Record<string, number>;
  readonly info?: { vendor?: string; architecture?: string; description?: string };
  requestDevice(descriptor?: { requiredLimits?: Record<string, number> }): Promise<{ readonly limits: Record<string, number> }>;
}

export interface WebRuntimeOptions {
  /** 'auto' (default): WebGPU when an adapter is available, else WASM. */
  backend?: 'auto' | WebBackend;
  /** Folder URL of onnxruntime-web's `.wasm` / `.mjs` files (default: next to the bundle). */
  wasmPaths?: string;
  /** WASM threads (default: cores up to 8 when cross-origin isolated, else 1). */
  threads?: number;
  /** WebGPU device limits: the adapter's largest buffers (default), or WebGPU's defaults. */
  deviceLimits?: 'adapter' | 'default';
}

/** The backend a page runs on, with the buffer limits of its device. */
export interface WebRuntime {
  readonly backend: WebBackend;
  readonly limits: BufferLimits;
  /** WASM threads (the CPU kernels run there on either backend for some ops). */
  readonly threads: number;
  /** The adapter's own description, for WebGPU. */
  readonly adapter?: string;
}

let started: Promise<WebRuntime> | null = null;

async function requestAdapter(): Promise<GpuAdapterLike | null> {
  const gpu = (globalThis as { navigator?: { gpu?: { requestAdapter(): Promise<GpuAdapterLike | null> } } }).navigator?.gpu;
  if (!gpu) return null;
  try {
    return await gpu.requestAdapter();
  } catch {
    return null;
  }
}

async function start(options: WebRuntimeOptions): Promise<WebRuntime> {
  const asked = options.backend ?? 'auto';
  const adapter = asked === 'wasm' ? null : await requestAdapter();
  const base = {
    ...(options.wasmPaths !== undefined ? { wasmPaths: options.wasmPaths } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
  };
  if (asked === 'webgpu' && !adapter) {
    const r = reason(
      'PROVIDER_UNAVAILABLE',
      'backend',
      'webgpu',
      'wasm (this page has no WebGPU adapter)',
      "backend 'webgpu' is not available: navigator.gpu gave no adapter (WebGPU needs a secure context: https or 127.0.0.1); available here: wasm",
    );
    refuse('PROVIDER_UNAVAILABLE', r);
  }
  if (!adapter) {
    configureWebRuntime(base);
    return {
      backend: 'wasm',
      limits: { maxBufferSize: WASM_TENSOR_LIMIT, maxStorageBufferBindingSize: WASM_TENSOR_LIMIT, source: 'WASM backend (32-bit memory)' },
      threads: wasmThreads(),
    };
  }
  const requiredLimits: Record<string, number> = {};
  for (const name of COMPUTE_LIMITS) if (adapter.limits[name] !== undefined) requiredLimits[name] = adapter.limits[name]!;
  if ((options.deviceLimits ?? 'adapter') === 'adapter') {
    requiredLimits['maxBufferSize'] = adapter.limits['maxBufferSize']!;
    requiredLimits['maxStorageBufferBindingSize'] = adapter.limits['maxStorageBufferBindingSize']!;
  }
  let device: { readonly limits: Record<string, number> };
  try {
    device = await adapter.requestDevice({ requiredLimits });
  } catch (cause) {
    throw new DistVaeError('PROVIDER_UNAVAILABLE', `the WebGPU adapter refused a device: ${(cause as Error).message}`, { cause });
  }
  configureWebRuntime({ ...base, device });
  const info = adapter.info;
  const name = [info?.vendor, info?.architecture, info?.description].filter((x) => x).join(' ') || 'unknown adapter';
  return {
    backend: 'webgpu',
    limits: {
      maxBufferSize: device.limits['maxBufferSize']!,
      maxStorageBufferBindingSize: device.limits['maxStorageBufferBindingSize']!,
      source: `WebGPU device (${name}, ${options.deviceLimits === 'default' ? 'default' : 'adapter'} limits)`,
    },
    threads: wasmThreads(),
    adapter: name,
  };
}

/**
 * Chooses and initialises the page's backend (once per page: onnxruntime-web's settings are
 * global). Later calls return the first result; asking then for another backend is refused.
 */
export function startWebRuntime(options: WebRuntimeOptions = {}): Promise<WebRuntime> {
  if (started === null) {
    started = start(options);
    started.catch(() => {
      started = null;
    });
    return started;
  }
  return started.then((runtime) => {
    if (options.backend !== undefined && options.backend !== 'auto' && options.backend !== runtime.backend) {
      const r = reason(
        'BACKEND_FIXED',
        'backend',
        options.backend,
        runtime.backend,
        `this page already runs on ${runtime.backend}; onnxruntime-web is initialised once per page (reload to change backends)`,
      );
      refuse('INVALID_ARGUMENT', r);
    }
    return runtime;
  });
}
