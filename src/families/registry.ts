// The family registry: the one list that registers a family (its declaration and its runtime),
// everything derived from it (names, diffusers class names, the runtime of a family, the
// families a message lists), and `planningVae`, which makes a plan-only VAE from a family name and
// an optional config (decoding adds to it elsewhere).

import { didYouMean, reason, refuse } from '../errors.js';
import { weightBytes } from '../weights/synthetic.js';
import { autoencoderKlFamily } from './autoencoder-kl/family.js';
import { DECODE_SETTING_FIELDS } from './config-fields.js';
import { dcaeFamily } from './dc-ae/family.js';
import { flux2Family } from './flux2/family.js';
import { hunyuanImageFamily } from './hunyuan-image/family.js';
import { hunyuanVideoFamily } from './hunyuan-video/family.js';
import { hunyuanVideo15Family } from './hunyuan-video-15/family.js';
import { ltx2Family } from './ltx2/family.js';
import { miniMaxH3Family } from './minimax-h3/family.js';
import { qwenImageFamily } from './qwen-image/family.js';
import type { FamilyRuntime, ShardExchange } from './runtime-types.js';
import { taeFamily } from './tae/family.js';
import type { FamilySpec, RawConfig, ResolvedConfig, TilingState, VaeSpec } from './types.js';
import { wanFamily } from './wan/family.js';

/** Every registered family, in the order help and docs list them: one element per family folder. */
const REGISTERED = [
  autoencoderKlFamily,
  flux2Family,
  taeFamily,
  wanFamily,
  qwenImageFamily,
  hunyuanVideoFamily,
  ltx2Family,
  hunyuanImageFamily,
  dcaeFamily,
  hunyuanVideo15Family,
  miniMaxH3Family,
] as const;

/** The name of a VAE family. */
export type FamilyName = (typeof REGISTERED)[number]['spec']['name'];

/** Every VAE family distvae decodes, in the order help and docs list them. */
export const FAMILIES: readonly FamilySpec[] = REGISTERED.map((f) => f.spec);

/** The names of FAMILIES, as `--family` and `planningVae` take them. */
export const FAMILY_NAMES: readonly FamilyName[] = REGISTERED.map((f) => f.spec.name);

/** The names of the families whose runtime has what `has` asks (messages list them from here, so they cannot go stale). */
export function familyNamesWhere(has: (runtime: FamilyRuntime) => boolean): FamilyName[] {
  return REGISTERED.filter((f) => has(f.runtime)).map((f) => f.spec.name);
}

/**
 * Whether a registered family's decoder can be row-sharded, and why not: read from its runtime
 * (a fused `decoderGraph` and what its ranks exchange, or `graphWithheld` naming what keeps it
 * from one graph), so the docs' families table and the refusals say the same. A family with a
 * graph is sharded only where the locality analysis finds every nonlocal op a sync region;
 * strategies/shard/family-support.test.ts checks each family's answer against that analysis
 * and the refusal on its tiny config.
 */
export function rowShardingOf(
  family: FamilySpec,
): { sharded: true; exchanges: readonly ShardExchange[] } | { sharded: false; why: string } {
  const runtime = runtimeOf(family);
  if (runtime.decoderGraph) return { sharded: true, exchanges: runtime.shardExchanges ?? [] };
  return { sharded: false, why: runtime.graphWithheld ?? 'its runtime exposes no fused decoder graph' };
}

/**
 * Whether a registered family's encoder can be row-sharded, and why not (null: the family has no
 * encoder): sharded where the encoder exposes its fused `graph` and withholds nothing
 * (`FamilyEncoder.graphWithheld` names what keeps the encode from one graph — a frame-stepped
 * encode, a clip loop around the graph, a graph the analysis cannot read yet). The docs'
 * families table shows it; strategies/shard/family-support.test.ts checks it against the shard
 * plan of each family's tiny encoder and the refusal.
 */
export function encoderRowShardingOf(family: FamilySpec): { sharded: true } | { sharded: false; why: string } | null {
  const encoder = runtimeOf(family).encoder;
  if (!encoder) return null;
  if (encoder.graph && encoder.graphWithheld === undefined) return { sharded: true };
  return { sharded: false, why: encoder.graphWithheld ?? 'its encoder exposes no fused graph' };
}

/** The runtime (graph builders, tile runner, post-processing) of a registered family. */
export function runtimeOf(family: FamilySpec): FamilyRuntime {
  const registered = REGISTERED.find((f) => f.spec.name === family.name);
  if (!registered) {
    refuse(
      'UNSUPPORTED',
      reason(
        'NO_DECODER',
        'family',
        family.name,
        `a registered family: ${FAMILY_NAMES.join(', ')}`,
        `${family.name} is not a registered family, so it has no decoder (registered: ${FAMILY_NAMES.join(', ')}); planning works for any family`,
      ),
    );
  }
  return registered.runtime;
}

/** Bytes of one copy of the decoder's float32 weights for a VAE's config (no weights read). */
export function decoderWeightBytes(vae: VaeSpec): number {
  return weightBytes(runtimeOf(vae.family).decoderParams(vae.config));
}

/** The family named `name`; UNKNOWN_FAMILY naming the known ones otherwise. */
export function getFamily(name: string): FamilySpec {
  const family = FAMILIES.find((f) => f.name === name);
  if (!family) {
    refuse(
      'UNKNOWN_FAMILY',
      reason(
        'UNKNOWN_FAMILY',
        'family',
        name,
        `one of ${FAMILY_NAMES.join(', ')}`,
        `unknown family ${JSON.stringify(name)}${didYouMean(name, FAMILY_NAMES)}: expected one of ${FAMILY_NAMES.join(', ')}`,
      ),
    );
  }
  return family;
}

/** The family a diffusers `_class_name` names, or null when none does. */
export function familyForClassName(className: string): FamilySpec | null {
  return FAMILIES.find((f) => f.classNames.includes(className)) ?? null;
}

/**
 * Picks the family from an explicit name and/or a config's `_class_name` (docs/design.md §9): either
 * suffices; both must agree.
 */
export function resolveFamily(explicit: string | undefined, config: RawConfig | undefined): FamilySpec {
  const className = typeof config?.['_class_name'] === 'string' ? (config['_class_name'] as string) : undefined;
  const fromConfig = className === undefined ? null : familyForClassName(className);
  if (className !== undefined && fromConfig === null && explicit === undefined) {
    const known = FAMILIES.flatMap((f) => f.classNames).join(', ');
    refuse(
      'UNKNOWN_FAMILY',
      reason(
        'UNKNOWN_CLASS_NAME',
        '_class_name',
        className,
        `one of ${known}`,
        `config _class_name ${JSON.stringify(className)} names no known family (known: ${known}); pass --family to choose one`,
      ),
    );
  }
  if (explicit === undefined) {
    if (fromConfig) return fromConfig;
    refuseFamilyRequired(
      `one of ${FAMILY_NAMES.join(', ')}`,
      `no family given and no config _class_name to infer it from: pass --family (one of ${FAMILY_NAMES.join(', ')})`,
    );
  }
  const family = getFamily(explicit);
  if (fromConfig && fromConfig !== family) {
    refuse(
      'INVALID_ARGUMENT',
      reason(
        'FAMILY_CONFLICT',
        'family',
        explicit,
        fromConfig.name,
        `--family ${explicit} conflicts with the config's _class_name ${className} (family ${fromConfig.name})`,
      ),
    );
  }
  return family;
}

/**
 * Refuses a decode whose family cannot be told: none was given and nothing names one (`valid`
 * says what would do, `message` what was given instead). One refusal for every source of weights.
 */
export function refuseFamilyRequired(valid: string, message: string): never {
  refuse('INVALID_ARGUMENT', reason('FAMILY_REQUIRED', 'family', undefined, valid, message));
}

/**
 * `family.resolveConfig(raw)`, refusing decode settings (e.g. `decode_timestep`) the family did
 * not read: they would otherwise be ignored silently.
 */
export function resolveFamilyConfig(family: FamilySpec, raw: RawConfig | undefined): ResolvedConfig {
  const config = family.resolveConfig(raw);
  const unused = DECODE_SETTING_FIELDS.filter((key) => raw?.[key] !== undefined && !(key in config.fields));
  if (unused.length > 0) {
    const reasons = unused.map((key) =>
      reason(
        'DECODE_SETTING_UNUSED',
        key,
        raw![key],
        'absent for this decoder',
        `${key} = ${JSON.stringify(raw![key])} was given, but this ${family.name} decoder does not take it (only a decoder with timestep conditioning takes a decode timestep)`,
      ),
    );
    refuse('CONFIG_INVALID', reasons);
  }
  return config;
}

/** Tiling as the class starts (off in most, diffusers' default; on where the class enables it), with the family's default window and overlap ready. */
export function defaultTiling(vae: Pick<VaeSpec, 'config'>): TilingState {
  const t = vae.config.tiling;
  return { enabled: t.enabled ?? false, window: { ...t.window }, overlap: { ...t.overlap }, frames: t.frames ? { ...t.frames } : null };
}

/**
 * A VAE for planning only: its family, resolved config and tiling state, no weights — enough for
 * `setTiling`, `planReport`, `searchPlans` and the memory model. To decode, `loadVae`.
 */
export function planningVae(family: FamilyName | string | undefined, config?: RawConfig): VaeSpec {
  const spec = resolveFamily(family, config);
  const resolved = resolveFamilyConfig(spec, config);
  return { family: spec, config: resolved, geometry: resolved.geometry, tiling: defaultTiling({ config: resolved }) };
}
