// Inference sessions: the only place an ONNX model meets onnxruntime-node (the SessionModule of
// session-types.ts; web-session.ts is its page counterpart). createSession takes a model (bytes,
// or a model object whose weights may be external data in a checkpoint file) and explicit
// provider, thread and optimisation settings (every one is passed to ORT; the defaults are the
// measured best on CPU, bench/conv-throughput.md), and returns a session that runs on our
// Tensor type.
//
// External weights are how a decoder's fixed cost stays near its weight bytes: onnxruntime reads
// them from the checkpoint itself, so neither a JS copy of the weights nor model bytes that embed
// them exist (bench/memory.md). onnxruntime resolves external locations relative to one folder
// and refuses paths that leave it, so every external file of a model must share one folder; the
// tensors of any other file are read into the model. Inputs are wrapped without copying (ort.Tensor keeps a
// reference to the Float32Array); each output arrives as a new Float32Array (the node binding
// copies ORT's result into a fresh JS buffer once) and is handed over as it is, unless the
// caller pre-allocates it (onnxruntime then writes into the caller's buffer).
//
// Note: onnxruntime-node runs a session synchronously on the calling thread (inside a
// setImmediate), so a long run blocks that thread's event loop; run ranks in worker threads.

import { availableParallelism } from 'node:os';
import { basename, dirname } from 'node:path';
import ort from 'onnxruntime-node';
import { DistVaeError, invalidArgument } from '../errors.js';
import { decodeModel, encodeModel, type ModelProto, type TensorProto } from '../graph/onnx-proto.js';
import { modelInPrecision } from '../graph/precision.js';
import { externalBytesOf } from '../graph/tensor-proto.js';
import { readExternalBytes } from '../bytes/external-bytes.js';
import type { Tensor } from '../tensor.js';
import { checkFeeds } from './feeds.js';
import { pinAdapter } from './devices.js';
import { probeHalfPrecision } from './half-precision.js';
import { checkPrecision } from './precision-check.js';
import { adapterOf, probeProvider, providerConfig } from './providers.js';
import { providerNameOf, type ProviderRequest, type Session, type SessionOptions } from './session-types.js';

function checkThreads(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > 1024) invalidArgument(field, value, 'an integer in [1, 1024]');
  return value;
}

/** The onnxruntime session options a distvae SessionOptions resolves to (exported for tests). */
export function ortOptions(
  options: SessionOptions,
  config: ProviderRequest,
  externalFolder: string | undefined,
): ort.InferenceSession.SessionOptions {
  const sessionConfig: Record<string, string> = {
    ...options.sessionConfig,
    'intra_op.allow_spinning': options.allowSpinning === false ? '0' : '1',
  };
  if (externalFolder !== undefined) sessionConfig['model_external_initializers_file_folder_path'] = externalFolder;
  return {
    executionProviders: [config],
    intraOpNumThreads: checkThreads('intraOpThreads', options.intraOpThreads ?? availableParallelism()),
    interOpNumThreads: checkThreads('interOpThreads', options.interOpThreads ?? 1),
    graphOptimizationLevel: options.graphOptimization ?? 'all',
    executionMode: options.executionMode ?? 'sequential',
    enableCpuMemArena: options.enableCpuMemArena ?? true,
    enableMemPattern: options.enableMemPattern ?? options.enableCpuMemArena === false,
    logSeverityLevel: 3,
    extra: { session: sessionConfig },
    ...(options.optimizedModelPath === undefined ? {} : { optimizedModelFilePath: options.optimizedModelPath }),
    ...(options.profileFilePrefix === undefined ? {} : { enableProfiling: true, profileFilePrefix: options.profileFilePrefix }),
  };
}

/** Fails, naming what is available, when the options' provider cannot be served here. */
export async function checkProvider(options: SessionOptions = {}): Promise<void> {
  const request = options.provider ?? 'cpu';
  const provider = providerNameOf(request);
  checkPrecision(provider, options.precision ?? 'fp32');
  // A webgpu adapter is chosen through the environment, before Dawn starts here or in the probe.
  const adapter = adapterOf(request);
  if (adapter !== undefined) await pinAdapter(adapter);
  if (provider !== 'cpu') await probeProvider(provider, providerConfig(request));
  if (options.precision === 'fp16') await probeHalfPrecision(providerConfig(request));
}

/**
 * ONNX bytes for onnxruntime and the folder its external data lies in: external locations become
 * file names in the folder most of the external bytes share; tensors of other folders are read in.
 */
export function sessionModelBytes(model: ModelProto): { bytes: Uint8Array; externalFolder?: string } {
  const initializers = model.graph?.initializer ?? [];
  const bytesPerFolder = new Map<string, number>();
  for (const t of initializers) {
    const file = externalBytesOf(t);
    if (file) bytesPerFolder.set(dirname(file.path), (bytesPerFolder.get(dirname(file.path)) ?? 0) + file.length);
  }
  if (bytesPerFolder.size === 0) return { bytes: encodeModel(model) };
  const folder = [...bytesPerFolder].sort((a, b) => b[1] - a[1])[0]![0];
  const local = (t: TensorProto): TensorProto => {
    const file = externalBytesOf(t);
    if (!file) return t;
    const { external_data: _, data_location: __, ...rest } = t;
    if (dirname(file.path) !== folder) return { ...rest, raw_data: readExternalBytes(file) };
    return {
      ...t,
      external_data: t.external_data!.map((e) => (e.key === 'location' ? { key: 'location', value: basename(file.path) } : e)),
    };
  };
  const graph = { ...model.graph, initializer: initializers.map(local) };
  return { bytes: encodeModel({ ...model, graph }), externalFolder: folder };
}

/**
 * Opens a session on ONNX model bytes or a model object (whose weights may be external data in
 * files). Fails before any work if the provider cannot be served.
 */
export async function createSession(model: Uint8Array | ModelProto, options: SessionOptions = {}): Promise<Session> {
  const config = providerConfig(options.provider ?? 'cpu');
  const provider = providerNameOf(config);
  const precision = options.precision ?? 'fp32';
  checkPrecision(provider, precision);
  const graph = precision === 'fp32' ? model : modelInPrecision(model instanceof Uint8Array ? decodeModel(model) : model, precision);
  const { bytes: modelBytes, externalFolder } =
    graph instanceof Uint8Array ? { bytes: graph, externalFolder: undefined } : sessionModelBytes(graph);
  const settings = ortOptions(options, config, externalFolder);
  await checkProvider(options);
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(modelBytes, settings);
  } catch (cause) {
    throw new DistVaeError('RUNTIME_FAILED', `onnxruntime could not load the model on '${provider}': ${(cause as Error).message}`, {
      cause,
    });
  }
  return wrapSession(session, provider);
}

function fromOrtTensor(name: string, value: ort.OnnxValue): Tensor {
  if (value.type !== 'float32' || !(value.data instanceof Float32Array)) {
    throw new DistVaeError('UNSUPPORTED', `graph output ${name} has type ${value.type}; distvae graphs must output float32`);
  }
  return { dims: [...value.dims], data: value.data };
}

function wrapSession(session: ort.InferenceSession, provider: Session['provider']): Session {
  const inputNames = [...session.inputNames];
  const outputNames = [...session.outputNames];
  return {
    provider,
    inputNames,
    outputNames,
    async run(feeds, outputs) {
      checkFeeds(inputNames, feeds);
      const ortFeeds: Record<string, ort.Tensor> = {};
      for (const name of inputNames) ortFeeds[name] = new ort.Tensor('float32', feeds[name]!.data, feeds[name]!.dims);
      let fetches: Record<string, ort.Tensor | null> | undefined;
      if (outputs) {
        const unknown = Object.keys(outputs).filter((n) => !outputNames.includes(n));
        if (unknown.length > 0) invalidArgument('outputs', unknown, `graph outputs [${outputNames.join(', ')}]`);
        fetches = {};
        for (const name of outputNames)
          fetches[name] = outputs[name] ? new ort.Tensor('float32', outputs[name].data, outputs[name].dims) : null;
      }
      let results: ort.InferenceSession.ReturnType;
      try {
        results = await (fetches ? session.run(ortFeeds, fetches) : session.run(ortFeeds));
      } catch (cause) {
        throw new DistVaeError('RUNTIME_FAILED', `onnxruntime run failed on '${provider}': ${(cause as Error).message}`, { cause });
      }
      const out: Record<string, Tensor> = {};
      for (const name of outputNames) out[name] = outputs?.[name] ?? fromOrtTensor(name, results[name]!);
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
