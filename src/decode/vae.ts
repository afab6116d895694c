// Loading a VAE for decoding: from a diffusers folder (config.json +
// diffusion_pytorch_model.safetensors), a single weights file plus a family, or synthetic
// weights (sources/ reads them). Weights are bound strictly to the decoder's own keys (the
// family's ignored prefixes skipped), the provider is checked, a tile runner is prepared (its
// sessions are built by the first decode), and the result is a `Vae`: the planner's view plus
// `decode` and a replaceable `tiledDecode`.

import { createHash } from 'node:crypto';
import type { FamilyRuntime, TileRunner } from '../families/runtime-types.js';
import type { FamilySpec, ResolvedConfig } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { providerRequest } from '../runtime/providers.js';
import { checkProvider } from '../runtime/session.js';
import type { SessionOptions } from '../runtime/session-types.js';
import { invalidArgument } from '../errors.js';
import { PRECISIONS, type Precision } from '../graph/precision.js';
import { checkPrecision } from '../runtime/precision-check.js';
import { readVaeSource, vaeSourceOf, type VaeSource } from '../sources/vae-source.js';
import type { Tensor } from '../tensor.js';
import { decoderModelOf } from './decoder-model.js';
import { BoundVae } from './bound-vae.js';
import { decodeLatents } from './engine.js';
import { LazyTileRunner } from './lazy-runner.js';
import type { DecodeOptions } from './types.js';

/** How `loadVae` runs a VAE: execution provider and device, threads, spinning. */
export interface LoadOptions {
  /** Execution provider by name (default 'cpu'), checked by `loadVae`; a missing one is an error, never a silent fallback. */
  provider?: string;
  /** Device id for the providers that take one (cuda, tensorrt, dml). */
  deviceId?: number;
  /** Intra-op threads for this VAE's sessions (per rank). */
  threads?: number;
  /** Whether idle intra-op threads spin (default true); off suits cores shared with other work. */
  allowSpinning?: boolean;
  /**
   * The precision the decoder computes in (default 'fp32'). 'fp16' runs it in float16 with
   * GroupNorm statistics, softmax and reductions in float32, on a GPU provider whose adapter has
   * shader-f16 (refused on 'cpu'). A config with `force_upcast` (diffusers' flag for VAEs that
   * overflow in float16, true by default for AutoencoderKL) decodes in float32 anyway, as
   * diffusers does, unless `forceFp16`; `Vae.precision` says which ran and `Vae.precisionNote` why.
   */
  precision?: Precision;
  /** Decode in float16 even where the config asks for float32 (`force_upcast`). */
  forceFp16?: boolean;
}

/** Refuses a precision request that cannot be served whatever the config (before any source is read). */
function checkPrecisionOptions(options: LoadOptions): Precision {
  const asked = options.precision ?? 'fp32';
  if (!PRECISIONS.includes(asked)) invalidArgument('precision', asked, `one of ${PRECISIONS.join(', ')}`);
  if (options.forceFp16 === true && asked !== 'fp16') invalidArgument('forceFp16', true, "only with precision 'fp16'");
  // fp16 on the CPU is refused whatever force_upcast says.
  checkPrecision(options.provider ?? 'cpu', asked);
  return asked;
}

/** The precision a VAE decodes in for `options`, and a note when it is not the one asked for. */
export function resolvePrecision(config: ResolvedConfig, options: LoadOptions): { precision: Precision; note?: string } {
  const asked = checkPrecisionOptions(options);
  if (asked === 'fp16' && config.fields['force_upcast'] === true && options.forceFp16 !== true) {
    return {
      precision: 'fp32',
      note: `the ${config.className} config sets force_upcast, so it decodes in float32 as diffusers does (the VAE may overflow float16); force float16 with --force-fp16 (forceFp16)`,
    };
  }
  return { precision: asked };
}

/**
 * A loaded VAE (made by `loadVae`): the planner's view (family, config, geometry, tiling) plus
 * `decode(latents, options)`, which returns `decode(z).sample` as diffusers does. Tiling is off
 * until `setTiling(vae)`; `useStrategy(vae, strategy, group)` chooses how tiles are decoded.
 * `dispose()` frees its onnxruntime sessions.
 */
export class Vae extends BoundVae {
  private hash: string | null = null;
  /** The precision the decoder computes in: the one asked for, unless the config's force_upcast kept float32. */
  readonly precision: Precision;
  /** Why `precision` is not the one asked for (force_upcast), to show the user as a warning. */
  readonly precisionNote: string | undefined;

  constructor(
    family: FamilySpec,
    config: ResolvedConfig,
    runtime: FamilyRuntime,
    runner: TileRunner,
    readonly source: VaeSource,
    readonly loadOptions: LoadOptions,
    weights: ReadonlyMap<string, Tensor>,
    /** Frees what holds the weights' bytes (readVaeSource's scratch file), after the sessions. */
    private readonly release: () => void = () => undefined,
  ) {
    super(family, config, runtime, runner, weights);
    const { precision, note } = resolvePrecision(config, loadOptions);
    this.precision = precision;
    this.precisionNote = note;
  }

  /** `decode(z).sample` as diffusers returns it, including the family's post-processing. */
  decode(latents: Tensor, options: DecodeOptions = {}): Promise<Tensor> {
    return decodeLatents(this, latents, options);
  }

  /** The fused decoder graph with the bound weights (sync regions in its metadata); refused for families without one. */
  decoderModel(): ModelProto {
    return decoderModelOf(this.family, this.runtime, this.config, this.weights);
  }

  /** SHA-256 of the resolved config and the bound decoder weights: names a VAE across machines. */
  contentHash(): string {
    this.hash ??= contentHashOf(this.family, this.config, this.weights);
    return this.hash;
  }

  override async dispose(): Promise<void> {
    await super.dispose();
    this.release();
  }
}

/** SHA-256 of a resolved config and bound weights (a decoder's or an encoder's): what ranks check they loaded. */
export function contentHashOf(family: FamilySpec, config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>): string {
  const h = createHash('sha256');
  h.update(JSON.stringify({ family: family.name, className: config.className, fields: config.fields }));
  for (const name of [...weights.keys()].sort()) {
    const t = weights.get(name)!;
    h.update(`${name}:${t.dims.join('x')}:`);
    h.update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return h.digest('hex');
}

/** The load options worth passing on to a rank (the rest are the loader's own). */
export function rankLoadOptions(options: LoadOptions): LoadOptions {
  return {
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.deviceId !== undefined ? { deviceId: options.deviceId } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.allowSpinning !== undefined ? { allowSpinning: options.allowSpinning } : {}),
    ...(options.precision !== undefined ? { precision: options.precision } : {}),
    ...(options.forceFp16 !== undefined ? { forceFp16: options.forceFp16 } : {}),
  };
}

/** The onnxruntime session settings that load options ask for: the provider name and device id checked into a typed request. */
export function sessionOptionsOf(options: LoadOptions, precision: Precision = options.precision ?? 'fp32'): SessionOptions {
  return {
    provider: providerRequest(options.provider ?? 'cpu', options.deviceId),
    ...(precision !== 'fp32' ? { precision } : {}),
    ...(options.threads !== undefined ? { intraOpThreads: options.threads } : {}),
    ...(options.allowSpinning !== undefined ? { allowSpinning: options.allowSpinning } : {}),
  };
}

/**
 * Loads a VAE for decoding: `loadVae('path/to/diffusers-folder')`, `loadVae('taef2_decoder.pth',
 * { family: 'tae' })`, or `loadVae({ family, config, weights: 'synthetic', seed })`.
 *
 * A .safetensors checkpoint is read lazily: loading reads its header, and onnxruntime reads the
 * float32 weights straight from the file when the first decode builds the sessions (no JS copy
 * of them is kept), so the file must stay in place, unchanged, while the VAE is in use.
 */
export async function loadVae(source: string | VaeSource, options: LoadOptions & { family?: string } = {}): Promise<Vae> {
  checkPrecisionOptions(options);
  const resolved = vaeSourceOf(source, options.family);
  const { family, config, runtime, weights, release } = await readVaeSource(resolved);
  const { precision } = resolvePrecision(config, options);
  const sessionOptions = sessionOptionsOf(options, precision);
  // The provider (and its float16 support) is checked now; the decoder's sessions are built by the first decode.
  await checkProvider(sessionOptions);
  const runner = new LazyTileRunner(() => runtime.createTileRunner(config, weights, sessionOptions));
  return new Vae(family, config, runtime, runner, resolved, rankLoadOptions(options), weights, release);
}
