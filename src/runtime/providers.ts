// The execution-provider table: which providers distvae knows how to request, a user's provider
// name and device id checked once into a typed ProviderRequest (`providerRequest`), which ones
// this onnxruntime-node build has, and the ORT configuration for a request. A provider the build
// lacks (or whose runtime library is not installed, or that fails to initialise on this
// machine) is a PROVIDER_UNAVAILABLE error listing what is available — a request is never
// quietly served by the CPU instead.
//
// onnxruntime-node reports its compiled-in providers with listSupportedBackends(); entries
// marked `bundled: false` (CUDA, TensorRT on Linux) also need a provider library that the
// package's install script downloads separately, so their presence is checked on disk.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ort from 'onnxruntime-node';
import { invalidArgument, reason, refuse } from '../errors.js';
import { GraphBuilder } from '../graph/builder.js';
import { nativeOutputShown } from './native-output.js';
import { providerNameOf, type DeviceProviderName, type ProviderName, type ProviderRequest } from './session-types.js';

interface ProviderSpec {
  /** What the provider runs on, for messages. */
  readonly description: string;
  /** Whether a device id selects a device: ORT's node binding passes `deviceId` (cuda, tensorrt, dml); webgpu's is an adapter this process is pinned to (runtime/devices.ts). */
  readonly takesDeviceId: boolean;
}

/** Every known execution provider, what it runs on and whether it takes a device id (DeviceProviderName: the ones that do). */
export const EXECUTION_PROVIDERS = {
  cpu: { description: 'CPU (MLAS kernels)', takesDeviceId: false },
  cuda: { description: 'NVIDIA GPU via CUDA 12', takesDeviceId: true },
  tensorrt: { description: 'NVIDIA GPU via TensorRT', takesDeviceId: true },
  webgpu: { description: 'GPU via WebGPU (Dawn)', takesDeviceId: true },
  dml: { description: 'GPU via DirectML (Windows)', takesDeviceId: true },
  coreml: { description: 'Apple Neural Engine / GPU via CoreML', takesDeviceId: false },
} as const satisfies Readonly<Record<ProviderName, ProviderSpec>>;

/** Whether an execution provider is available here, and why not when it is not. */
export interface ProviderStatus {
  name: string;
  /** Compiled into this build, its library installed where separate, and not failed a probe here. */
  available: boolean;
  /** Why it is not available, when it is not. */
  detail?: string;
}

/** Providers that failed their initialisation probe in this process, with ORT's message. */
const failedProbes = new Map<string, string>();
const probes = new Map<string, Promise<void>>();

function bindingDirectory(): string {
  const packageMain = createRequire(import.meta.url).resolve('onnxruntime-node');
  return join(dirname(packageMain), '..', 'bin', 'napi-v6', process.platform, process.arch);
}

function providerLibraryFile(name: string): string {
  return process.platform === 'win32' ? `onnxruntime_providers_${name}.dll` : `libonnxruntime_providers_${name}.so`;
}

/** Every provider this onnxruntime-node build knows, with whether it can be requested here. */
export function listProviders(): ProviderStatus[] {
  return ort.listSupportedBackends().map(({ name, bundled }) => {
    const failed = failedProbes.get(name);
    if (failed !== undefined) return { name, available: false, detail: failed };
    if (bundled) return { name, available: true };
    const library = join(bindingDirectory(), providerLibraryFile(name));
    if (existsSync(library)) return { name, available: true };
    return {
      name,
      available: false,
      detail: `its library ${library} is not installed (onnxruntime-node's install script fetches it, e.g. with ONNXRUNTIME_NODE_INSTALL=cuda12)`,
    };
  });
}

/**
 * The probe's child: opens a one-node session on the provider and reports only an exit code and
 * onnxruntime's message. It runs in its own process because a provider's native layer writes to
 * the terminal on its own (Dawn's "Couldn't load Vulkan" warning) and may abort the process.
 */
const PROBE_SCRIPT = `
const ort = (await import(process.env.DISTVAE_PROBE_ORT)).default;
const model = Buffer.from(process.env.DISTVAE_PROBE_MODEL, 'base64');
try {
  const extra = { session: JSON.parse(process.env.DISTVAE_PROBE_SESSION || '{}') };
  const session = await ort.InferenceSession.create(model, { executionProviders: [JSON.parse(process.env.DISTVAE_PROBE_EP)], logSeverityLevel: 4, extra });
  if (process.env.DISTVAE_PROBE_EXPECT) {
    const { y } = await session.run({ x: new ort.Tensor('float32', Float32Array.of(1.5), [1]) });
    if (y.data[0] !== Number(process.env.DISTVAE_PROBE_EXPECT)) throw new Error('the probe graph computed ' + y.data[0] + ' for ' + process.env.DISTVAE_PROBE_EXPECT);
  }
  await session.release();
  process.exit(0);
} catch (e) {
  process.stdout.write(String(e && e.message || e));
  process.exit(1);
}`;

/** How long a provider's probe may take (driver start-up included). */
const PROBE_TIMEOUT_MS = 60_000;

/** What a probe opens besides the default one-node model: its own graph (input x [1], output y), session config, and y for x = 1.5. */
export interface ProbeGraph {
  model: Uint8Array;
  sessionConfig?: Readonly<Record<string, string>>;
  expect?: number;
}

/** What a probe process said: null when the session opened, else why not; and its stderr (the drivers' lines). */
export interface ProbeResult {
  failure: string | null;
  stderr: string;
}

/**
 * Opens `graph` (default: one Identity node) on `config` in a child process with `env` laid over
 * this process's environment (an undefined value removes a variable; runtime/devices.ts lists
 * adapters through it), and reports how it went.
 */
export function runProbeProcess(
  config: ProviderRequest,
  env: Readonly<Record<string, string | undefined>> = {},
  graph?: ProbeGraph,
): Promise<ProbeResult> {
  const g = new GraphBuilder('provider_probe');
  g.output('y', g.identity(g.input('x', [1])), [1]);
  const childEnv = {
    ...process.env,
    ...env,
    DISTVAE_PROBE_ORT: pathToFileURL(createRequire(import.meta.url).resolve('onnxruntime-node')).href,
    DISTVAE_PROBE_MODEL: Buffer.from(graph?.model ?? g.toModelBytes()).toString('base64'),
    DISTVAE_PROBE_EP: JSON.stringify(ortProviderEntry(config)),
    DISTVAE_PROBE_SESSION: JSON.stringify(graph?.sessionConfig ?? {}),
    DISTVAE_PROBE_EXPECT: graph?.expect === undefined ? '' : String(graph.expect),
  };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', PROBE_SCRIPT],
      { env: childEnv, timeout: PROBE_TIMEOUT_MS, windowsHide: true },
      (error, stdout, stderr) => {
        if (!error) return resolve({ failure: null, stderr });
        const said =
          stdout.trim().split('\n')[0] ||
          stderr
            .trim()
            .split('\n')
            .filter((l) => !/^\s+at /.test(l))[0] ||
          '';
        resolve({
          failure: error.killed
            ? `no answer within ${PROBE_TIMEOUT_MS / 1000} s`
            : said || `the probe process ended with ${error.signal ?? `code ${String(error.code)}`}`,
          stderr,
        });
      },
    );
  });
}

/** Opens `graph` (default: one Identity node) on `config` in a child process; null when it worked, else what failed. */
export async function probeInChild(config: ProviderRequest, graph?: ProbeGraph): Promise<string | null> {
  const { failure, stderr } = await runProbeProcess(config, {}, graph);
  // The provider's own lines stay in the probe unless they are asked for (runtime/native-output.ts).
  if (nativeOutputShown() && stderr) process.stderr.write(stderr);
  return failure;
}

/**
 * Confirms a non-CPU provider initialises on this machine (a WebGPU build without an adapter,
 * a CUDA build without a GPU) by opening a one-node session in a child process, once per
 * provider and device; the provider's own terminal output stays in that child.
 */
export function probeProvider(name: string, config: ProviderRequest): Promise<void> {
  const key = JSON.stringify(config);
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = probeInChild(config).then((failure) => {
      if (failure === null) return;
      const detail = `it failed to initialise on this machine (${failure})`;
      failedProbes.set(name, detail);
      providerUnavailable(name, detail);
    });
    probes.set(key, probe);
  }
  return probe;
}

export function availableProviderNames(): string[] {
  return listProviders()
    .filter((p) => p.available)
    .map((p) => p.name);
}

/** Throws PROVIDER_UNAVAILABLE naming the request, the reason and what is available. */
function providerUnavailable(name: string, detail: string, cause?: unknown): never {
  const available = availableProviderNames();
  const valid = `one of: ${available.join(', ')}`;
  const message = `execution provider '${name}' is not available: ${detail}; available here: ${available.join(', ')}`;
  refuse('PROVIDER_UNAVAILABLE', reason('PROVIDER_UNAVAILABLE', 'provider', name, valid, message), { cause });
}

function isProviderName(name: string): name is ProviderName {
  return Object.hasOwn(EXECUTION_PROVIDERS, name);
}

function takesDeviceId(name: ProviderName): name is DeviceProviderName | 'webgpu' {
  return EXECUTION_PROVIDERS[name].takesDeviceId;
}

/** The `executionProviders` entry onnxruntime-node takes for a request: without the webgpu adapter, which it does not know. */
export function ortProviderEntry(request: ProviderRequest): ProviderRequest {
  if (typeof request === 'string' || request.name !== 'webgpu' || request.adapter === undefined) return request;
  const { adapter: _adapter, ...entry } = request;
  return entry;
}

/** The webgpu adapter a request names, if any. */
export function adapterOf(request: ProviderRequest): number | undefined {
  return typeof request !== 'string' && request.name === 'webgpu' ? request.adapter : undefined;
}

/** PROVIDER_UNAVAILABLE for a name distvae does not know how to request on Node. */
function unknownProvider(name: string): never {
  providerUnavailable(name, `distvae knows ${Object.keys(EXECUTION_PROVIDERS).join(', ')}`);
}

function checkDeviceId(deviceId: number): void {
  if (!Number.isSafeInteger(deviceId) || deviceId < 0) invalidArgument('deviceId', deviceId, 'a non-negative integer');
}

/**
 * A user's provider name and device id (`--provider` / `--device`, `LoadOptions`) as the typed
 * request sessions take, checked once here: PROVIDER_UNAVAILABLE for a name distvae does not
 * know (listing what is available here); INVALID_ARGUMENT for a device id the provider does not
 * take, or one that is not a non-negative integer. Whether this machine can serve the provider
 * is checked when a session asks for it (`providerConfig`).
 */
export function providerRequest(name: string, deviceId?: number): ProviderRequest {
  if (!isProviderName(name)) unknownProvider(name);
  if (deviceId === undefined) return name;
  if (!takesDeviceId(name)) {
    const takers = Object.entries(EXECUTION_PROVIDERS)
      .filter(([, s]) => s.takesDeviceId)
      .map(([n]) => n);
    invalidArgument('deviceId', deviceId, `no device id for provider '${name}' (only ${takers.join(', ')} take one)`);
  }
  checkDeviceId(deviceId);
  return name === 'webgpu' ? { name, adapter: deviceId } : { name, deviceId };
}

/**
 * The onnxruntime `executionProviders` entry for a request — the request itself, whose shape is
 * onnxruntime's, less a webgpu adapter (`ortProviderEntry`) — after checking this build and machine can serve it (PROVIDER_UNAVAILABLE
 * otherwise, naming what is available).
 */
export function providerConfig(request: ProviderRequest): ProviderRequest {
  const name = providerNameOf(request);
  if (!isProviderName(name)) unknownProvider(name);
  const status = listProviders().find((p) => p.name === name);
  if (status === undefined)
    providerUnavailable(name, `this onnxruntime-node build (${process.platform}/${process.arch}) does not include it`);
  if (!status.available) providerUnavailable(name, status.detail ?? 'not installed');
  if (typeof request !== 'string' && 'deviceId' in request && request.deviceId !== undefined) checkDeviceId(request.deviceId);
  const adapter = adapterOf(request);
  if (adapter !== undefined) checkDeviceId(adapter);
  return ortProviderEntry(request);
}
