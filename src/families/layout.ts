// How a family module declares its family: the parts that do not depend on the config (how
// diffusers tiles it, its time axis, what a checkpoint carries beside the decoder, the smallest
// window, the output range — a per-channel one checked against the config's output channels),
// the square tiling defaults every family states, and the frame of every config reader (read,
// then refuse with all reasons at once). Declared once here, so that each family writes only
// what differs from the diffusers VAEs it shares the rest with.

import { ConfigReader } from './config-fields.js';
import type { FamilySpec, FrameTiling, RawConfig, ResolvedConfig, SampleRange, TilingDefaults } from './types.js';

/** The config-independent part of a FamilySpec. */
export type FamilyLayout = Pick<
  FamilySpec,
  'diffusersTiling' | 'temporal' | 'ignoredKeyPrefixes' | 'minWindowLatent' | 'sampleRange' | 'latentDistribution'
>;

/**
 * A diffusers VAE whose checkpoints carry the encoder (and quant_conv) beside the decoder, that
 * takes any whole-latent window and writes samples in [-1, 1]; families that differ override a field.
 */
export function diffusersLayout(diffusersTiling: FamilySpec['diffusersTiling'], temporal: FamilySpec['temporal']): FamilyLayout {
  return { diffusersTiling, temporal, ignoredKeyPrefixes: ['encoder.', 'quant_conv.'], minWindowLatent: 1, sampleRange: 'signed' };
}

/** Tiling defaults with a square window and overlap in output pixels, and the frame tiling of families that have one. */
export function squareTiling(window: number, overlap: number, frames: FrameTiling | null = null): TilingDefaults {
  return { window: { height: window, width: window }, overlap: { height: overlap, width: overlap }, frames };
}

/** A per-channel sample range needs one mean and one std per output channel, refused with the config otherwise. */
function checkSampleRange(range: SampleRange, outChannels: number, r: ConfigReader): void {
  if (typeof range !== 'object') return;
  const n = range.mean.length;
  r.check(
    outChannels === n && range.std.length === n,
    'out_channels',
    outChannels,
    `${n} (the family's pixel normalisation has ${n} means and ${range.std.length} standard deviations)`,
    `out_channels = ${outChannels}, but the family's pixel normalisation covers ${n} channels`,
  );
}

/** A family as each module writes it: its names and the reader of its config. */
export interface FamilyDeclaration<Name extends string> {
  name: Name;
  /** One line for humans: which models use it. */
  description: string;
  /** diffusers `_class_name` values that select this family. */
  classNames: readonly string[];
  /** The config to read, from the raw one; by default the raw one (absent: `{}`, the published defaults). */
  given?(raw: RawConfig | undefined): RawConfig;
  /** Reads the fields through `r`, which collects refusals rather than throwing, and says what they resolve to. */
  read(r: ConfigReader, given: RawConfig): Omit<ResolvedConfig, 'fields'>;
}

/**
 * A FamilySpec from its layout and declaration. Its `resolveConfig` reads through a ConfigReader
 * named for the family and throws every reason the read collected at once (CONFIG_INVALID),
 * so a config with several problems is refused once; the fields read come with the result.
 */
export function defineFamily<const Name extends string>(
  layout: FamilyLayout,
  { given = (raw) => raw ?? {}, read, ...names }: FamilyDeclaration<Name>,
): FamilySpec<Name> {
  return {
    ...names,
    ...layout,
    resolveConfig(raw: RawConfig | undefined): ResolvedConfig {
      const config = given(raw);
      const r = new ConfigReader(config, names.name);
      const resolved = read(r, config);
      checkSampleRange(layout.sampleRange, resolved.geometry.outChannels, r);
      r.finish();
      return { ...resolved, fields: r.fields };
    },
  };
}
