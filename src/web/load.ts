// Loading a VAE (decoder) or an encoder in a page: a weights file (.safetensors or .pth, told
// apart by content) and optionally a diffusers config.json, each an ArrayBuffer, a File or a
// URL. Weights are read by random access (bytes/byte-source.ts: Blob slices, HTTP Range) and
// bound as the Node loader binds them (sources/bind-half.ts); the sessions run on the page's
// backend (backend.ts) and are built by the first decode.

import { BoundVae } from '../decode/bound-vae.js';
import { decoderModelOf } from '../decode/decoder-model.js';
import { LazyTileRunner } from '../decode/lazy-runner.js';
import { reason, refuse } from '../errors.js';
import { refuseFamilyRequired, resolveFamily, runtimeOf } from '../families/registry.js';
import type { FamilyRuntime, TileRunner } from '../families/runtime-types.js';
import type { FamilySpec, RawConfig, ResolvedConfig } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { BoundEncoder } from '../encode/bound-encoder.js';
import type { EncoderDeclaration } from '../encode/engine.js';
import type { Tensor } from '../tensor.js';
import { readBoundHalf } from '../sources/bind-half.js';
import { refuseSamplingWithout } from '../io/latent-sample.js';
import { blobSource, bytesSource, httpRangeSource, type ByteSource } from '../bytes/byte-source.js';
import { openWeights } from '../sources/weights-file.js';
import { startWebRuntime, type WebRuntime, type WebRuntimeOptions } from './backend.js';
import { isBlob, readBytes, type ByteInput } from './bytes.js';

/** A VAE half in a page: its weights file, and optionally a config.json (bytes, File or URL) or a config object, and a family. */
export interface WebVaeSource {
  weights: ByteInput;
  config?: ByteInput | RawConfig;
  /** Needed for a bare weights file whose config does not name its class (e.g. 'tae'). */
  family?: string;
}

export interface WebLoadOptions extends WebRuntimeOptions {
  signal?: AbortSignal;
}

function isRawConfig(c: WebVaeSource['config']): c is RawConfig {
  return (
    typeof c === 'object' &&
    c !== null &&
    !(c instanceof ArrayBuffer) &&
    !ArrayBuffer.isView(c) &&
    !(c instanceof URL) &&
    typeof (c as { arrayBuffer?: unknown }).arrayBuffer !== 'function'
  );
}

async function readConfig(config: WebVaeSource['config'], signal: AbortSignal | undefined): Promise<RawConfig | undefined> {
  if (config === undefined) return undefined;
  if (isRawConfig(config)) return config;
  const { bytes, name } = await readBytes(config, signal ? { signal, name: 'config.json' } : { name: 'config.json' });
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    return parsed as RawConfig;
  } catch (cause) {
    refuse(
      'CONFIG_INVALID',
      reason(
        'CONFIG_NOT_JSON',
        'config',
        name,
        'a diffusers config.json (a JSON object)',
        `${name} is not a JSON object: ${(cause as Error).message}`,
      ),
      { cause },
    );
  }
}

/**
 * A weights input as random-access bytes: a buffer as is, a Blob / File sliced per read, a URL
 * read by HTTP Range requests — only the header and the half's own tensors are fetched.
 */
async function weightsSource(input: ByteInput): Promise<ByteSource> {
  if (input instanceof ArrayBuffer) return bytesSource(input, 'weights');
  if (ArrayBuffer.isView(input)) return bytesSource(new Uint8Array(input.buffer, input.byteOffset, input.byteLength), 'weights');
  if (isBlob(input)) return blobSource(input as Blob);
  return httpRangeSource(String(input));
}

async function readHalf(source: WebVaeSource, part: 'decoder' | 'encoder', signal: AbortSignal | undefined) {
  const raw = await readConfig(source.config, signal);
  const bytes = await weightsSource(source.weights);
  if (source.family === undefined && raw === undefined) {
    refuseFamilyRequired(
      'a family for a bare weights file',
      `${bytes.name} is a bare weights file: pass a family (e.g. 'tae') or a config.json to say which ${part} it holds`,
    );
  }
  const family = resolveFamily(source.family, raw);
  const runtime = runtimeOf(family);
  const { config, weights } = await readBoundHalf(family, runtime, raw, await openWeights(bytes), { part, source: bytes.name });
  return { family, runtime, config, weights };
}

/** A decoder loaded in a page: the planner's view, its decoder graph, and the runner on the page's backend. */
export class WebVae extends BoundVae<LazyTileRunner> {
  private model: ModelProto | null = null;

  constructor(
    family: FamilySpec,
    config: ResolvedConfig,
    runtime: FamilyRuntime,
    runner: LazyTileRunner,
    readonly web: WebRuntime,
    weights: ReadonlyMap<string, Tensor>,
  ) {
    super(family, config, runtime, runner, weights);
  }

  /** The fused decoder graph (what tensor sizes and halo-exact tiles are computed from). */
  decoderModel(): ModelProto {
    this.model ??= decoderModelOf(this.family, this.runtime, this.config, this.weights);
    return this.model;
  }
}

/** Loads a decoder in a page: `await loadWebVae({ weights: 'taef2_decoder.pth', family: 'tae' })`. */
export async function loadWebVae(source: WebVaeSource, options: WebLoadOptions = {}): Promise<WebVae> {
  const web = await startWebRuntime(options);
  const { family, runtime, config, weights } = await readHalf(source, 'decoder', options.signal);
  const runner = new LazyTileRunner(() => runtime.createTileRunner(config, weights, { provider: web.backend }));
  return new WebVae(family, config, runtime, runner, web, weights);
}

/** An encoder in a page: images (B, C, H, W) in the family's input range to latents, on the page's runtime. */
export class WebEncoder extends BoundEncoder {
  constructor(
    family: FamilySpec,
    config: ResolvedConfig,
    runner: TileRunner,
    readonly web: WebRuntime,
    encoding: EncoderDeclaration = {},
  ) {
    super(family, config, runner, encoding);
  }
}

/**
 * Loads an encoder in a page: `await loadWebEncoder({ weights: file, family: 'tae' })`, or a
 * diffusers VAE's file with its config. Plans are the Node encoder's: `setTiling(encoder, { window,
 * overlap, frames })` (frames: a video family's temporal window / overlap in input frames, null
 * off), `setTiling(encoder, 'off')` for a whole encode. `moments: true` (refused for TAE and DC-AE,
 * which have no distribution) makes `encode` return the moments, which `sampleLatents(moments,
 * seed)` draws from as `encode --sample` does.
 */
export async function loadWebEncoder(source: WebVaeSource, options: WebLoadOptions & { moments?: boolean } = {}): Promise<WebEncoder> {
  const web = await startWebRuntime(options);
  const { family, runtime, config, weights } = await readHalf(source, 'encoder', options.signal);
  if (options.moments === true) refuseSamplingWithout(family, 'moments');
  const runner = await runtime.encoder!.createRunner(
    config,
    weights,
    { provider: web.backend },
    options.moments === true ? { moments: true } : {},
  );
  return new WebEncoder(family, config, runner, web, runtime.encoder!);
}
