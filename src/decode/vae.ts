// Loading a VAE for decoding: from a diffusers folder (config.json +
// diffusion_pytorch_model.safetensors), a single weights file plus a family, or synthetic
// weights. Weights are bound strictly to the decoder's own keys (the family's ignored prefixes
// skipped), the provider is checked, a tile runner is prepared (its sessions are built by the
// first decode), and the result is a `Vae`: the planner's view plus
// `decode` and a replaceable `tiledDecode`. A `VaeSource` is plain data, so a rank in another
// thread, process or machine can load the same VAE.

import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DistVaeError, reason } from '../errors.js';
import { readConfigJson } from '../families/config-file.js';
import { createVae, defaultTiling, resolveFamily, resolveFamilyConfig } from '../families/registry.js';
import type { FamilyRuntime } from '../families/runtime-types.js';
import { runtimeOf } from '../families/runtimes.js';
import type { FamilySpec, RawConfig, ResolvedConfig, TilingState, VaeGeometry, VaeSpec } from '../families/types.js';
import { checkProvider, type SessionOptions } from '../runtime/session.js';
import type { Tensor } from '../tensor.js';
import { readWeights } from '../weights/load.js';
import { syntheticWeights } from '../weights/synthetic.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { bindStoredWeights, partOf, type VaePart } from './bind-source.js';
import { decoderModelOf } from './decoder-model.js';
import { decodeLatents, localTiledDecode, type DecodingVae } from './engine.js';
import { LazyTileRunner } from './lazy-runner.js';
import type { DecodeOptions, TiledDecode, TileRunner } from './types.js';

export const DIFFUSERS_WEIGHTS_FILE = 'diffusion_pytorch_model.safetensors';

/** Where a VAE's architecture and weights come from (serialisable). */
export type VaeSource =
  /** A diffusers folder, or a single weights file (.safetensors / .pth) with `family` (and optionally `config`). */
  | { path: string; family?: string; config?: RawConfig }
  /** Seeded synthetic weights for an architecture config. */
  | { family?: string; config?: RawConfig; weights: 'synthetic'; seed: number };

export interface LoadOptions {
  /** Execution provider (default 'cpu'); a missing one is an error, never a silent fallback. */
  provider?: string;
  deviceId?: number;
  /** Intra-op threads for this VAE's sessions (per rank). */
  threads?: number;
  /** Whether idle intra-op threads spin (default true); off suits cores shared with other work. */
  allowSpinning?: boolean;
}

export class Vae implements DecodingVae {
  tiling: TilingState;
  /** The spatial tiling operation; replace it with a rank group's `tiledDecodeFor(vae, group)`. */
  tiledDecode: TiledDecode;
  private hash: string | null = null;

  constructor(
    readonly family: FamilySpec,
    readonly config: ResolvedConfig,
    readonly runtime: FamilyRuntime,
    readonly runner: TileRunner,
    readonly source: VaeSource,
    readonly loadOptions: LoadOptions,
    private readonly weights: ReadonlyMap<string, Tensor>,
  ) {
    this.tiling = defaultTiling(this);
    this.tiledDecode = localTiledDecode(this, runner);
  }

  get geometry(): VaeGeometry {
    return this.config.geometry;
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
    if (this.hash === null) {
      const h = createHash('sha256');
      h.update(JSON.stringify({ family: this.family.name, className: this.config.className, fields: this.config.fields }));
      for (const name of [...this.weights.keys()].sort()) {
        const t = this.weights.get(name)!;
        h.update(`${name}:${t.dims.join('x')}:`);
        h.update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      }
      this.hash = h.digest('hex');
    }
    return this.hash;
  }

  async dispose(): Promise<void> {
    await this.runner.dispose();
  }
}

function isSynthetic(source: VaeSource): source is Extract<VaeSource, { weights: 'synthetic' }> {
  return (source as { weights?: unknown }).weights === 'synthetic';
}

/** The folder's config.json merged with explicit overrides, or the explicit config alone. */
function sourceConfig(source: VaeSource): RawConfig | undefined {
  if (!isSynthetic(source) && existsSync(source.path) && statSync(source.path).isDirectory()) return { ...readConfigJson(source.path), ...(source.config ?? {}) };
  return source.config;
}

/**
 * The planner's view of a source without reading weights, so a request can be checked before
 * loading; null for a bare weights file with no config (its variant is known only from its keys).
 */
export function vaeSpecOfSource(source: VaeSource): VaeSpec | null {
  const config = sourceConfig(source);
  if (!isSynthetic(source) && config === undefined && !(existsSync(source.path) && statSync(source.path).isDirectory())) return null;
  return createVae(source.family, config);
}

export type { VaePart };

/** Reads the architecture and the weights of one half (default: the decoder) a source names (no onnxruntime involved). */
export function readVaeSource(source: VaeSource, part: VaePart = 'decoder'): { family: FamilySpec; config: ResolvedConfig; runtime: FamilyRuntime; weights: Map<string, Tensor> } {
  if (isSynthetic(source)) {
    const family = resolveFamily(source.family, source.config);
    const runtime = runtimeOf(family);
    const half = partOf(family, runtime, part);
    const config = resolveFamilyConfig(family, source.config);
    if (!Number.isSafeInteger(source.seed)) {
      const r = reason('SEED_INVALID', 'seed', source.seed, 'an integer');
      throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
    }
    return { family, config, runtime, weights: syntheticWeights(half.params(config), source.seed) };
  }
  const path = source.path;
  if (!existsSync(path)) {
    const r = reason('FILE_NOT_FOUND', 'vae', path, 'a diffusers folder or a weights file', `VAE not found: ${path}`);
    throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
  }
  const raw = sourceConfig(source);
  let weightsPath = path;
  if (statSync(path).isDirectory()) {
    weightsPath = join(path, DIFFUSERS_WEIGHTS_FILE);
    if (!existsSync(weightsPath)) {
      const r = reason('WEIGHTS_NOT_FOUND', 'vae', weightsPath, `${DIFFUSERS_WEIGHTS_FILE} inside the folder`, `the diffusers folder ${path} has no ${DIFFUSERS_WEIGHTS_FILE}`);
      throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
    }
  } else if (source.family === undefined && raw === undefined) {
    const r = reason('FAMILY_REQUIRED', 'family', undefined, 'a family for a bare weights file', `${path} is a bare weights file: pass a family (--family) to say which decoder it holds`);
    throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
  }
  const family = resolveFamily(source.family, raw);
  const runtime = runtimeOf(family);
  const { config, weights } = bindStoredWeights(family, runtime, raw, readWeights(weightsPath), part, weightsPath);
  return { family, config, runtime, weights };
}

/** A source from a path (with an optional family) or as given. */
export function vaeSourceOf(source: string | VaeSource, family: string | undefined): VaeSource {
  return typeof source === 'string' ? { path: source, ...(family !== undefined ? { family } : {}) } : source;
}

/** The onnxruntime session settings that load options ask for. */
export function sessionOptionsOf(options: LoadOptions): SessionOptions {
  return {
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.deviceId !== undefined ? { deviceId: options.deviceId } : {}),
    ...(options.threads !== undefined ? { intraOpThreads: options.threads } : {}),
    ...(options.allowSpinning !== undefined ? { allowSpinning: options.allowSpinning } : {}),
  };
}

/**
 * Loads a VAE for decoding: `loadVae('path/to/diffusers-folder')`, `loadVae('taef2_decoder.pth',
 * { family: 'tae' })`, or `loadVae({ family, config, weights: 'synthetic', seed })`.
 */
export async function loadVae(source: string | VaeSource, options: LoadOptions & { family?: string } = {}): Promise<Vae> {
  const resolved = vaeSourceOf(source, options.family);
  const { family, config, runtime, weights } = readVaeSource(resolved);
  const sessionOptions = sessionOptionsOf(options);
  // The provider is checked now; the decoder's sessions are built by the first decode.
  await checkProvider(sessionOptions);
  const runner = new LazyTileRunner(() => runtime.createTileRunner(config, weights, sessionOptions));
  const loadOptions: LoadOptions = {
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.deviceId !== undefined ? { deviceId: options.deviceId } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.allowSpinning !== undefined ? { allowSpinning: options.allowSpinning } : {}),
  };
  return new Vae(family, config, runtime, runner, resolved, loadOptions, weights);
}
