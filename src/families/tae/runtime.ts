// The TAE family's runtime: parameters and sessions for the decoder and the encoder, the config
// a bare checkpoint implies, and the identity post-processing (madebyollin's decoder output is
// used raw and unclamped; images clamp it to [0, 1] — docs/design.md §9).
//
// Reading a checkpoint: the key layout is 'diffusers' when any key starts with
// `decoder.layers.` / `encoder.layers.` (an AutoencoderTiny checkpoint, both halves in one
// file), else 'madebyollin' (bare Sequential indices, one file per half, .pth or .safetensors).
// The latent channels come from the first decoder conv (its input channels) or the last encoder
// conv (its output channels); pool blocks from the presence of `pool.0.weight` keys. The variant
// is then the first published one with that shape in TAE_VARIANTS' order: 4 channels → taesd
// (taesdxl is the same architecture), 16 → taesd3 (likewise taef1), 32 with pools → taef2. The
// twins decode identically, so the choice only labels the config; a config that names
// `variant` takes precedence. A shape no published variant has loads as a custom TAE.

import { reason, refuse } from '../../errors.js';
import type { Shaped } from '../../weights/bind.js';
import { graphRunner } from '../graph-runner.js';
import type { FamilyRuntime } from '../runtime-types.js';
import { TAE_VARIANTS, taeArchitecture, type TaeKeyLayout, type TaeVariant } from './spec.js';
import {
  DECODER_IO,
  ENCODER_IO,
  buildDecoderGraph,
  buildEncoderGraph,
  decoderKey,
  decoderLayers,
  encoderKey,
  encoderLayers,
  layersParams,
} from './graph.js';
import type { RawConfig } from '../types.js';

export type TaeHalf = 'decoder' | 'encoder';

const KEYS_SHOWN = 4;

function keyLayoutOf(weights: ReadonlyMap<string, Shaped>): TaeKeyLayout {
  for (const k of weights.keys()) if (k.startsWith('decoder.layers.') || k.startsWith('encoder.layers.')) return 'diffusers';
  return 'madebyollin';
}

function noSuchHalf(weights: ReadonlyMap<string, Shaped>, half: TaeHalf, layout: TaeKeyLayout, expectedKey: string): never {
  const sample = [...weights.keys()].slice(0, KEYS_SHOWN).join(', ') || 'none';
  const other: TaeHalf = half === 'decoder' ? 'encoder' : 'decoder';
  const looksLikeOther =
    layout === 'madebyollin' && weights.has(`${half === 'decoder' ? encoderKey(layout, 0) : decoderKey(layout, 1)}.weight`);
  const hint = looksLikeOther
    ? ` They look like a TAE ${other} (${half === 'decoder' ? 'encode images with it: distvae encode / loadEncoder' : 'decode latents with it: distvae decode / loadVae'}).`
    : '';
  refuse(
    'WEIGHTS_MISMATCH',
    reason(
      'TAE_HALF_MISSING',
      expectedKey,
      null,
      `a TAE ${half} checkpoint (madebyollin's ${half} file or a diffusers AutoencoderTiny)`,
      `the weights hold no TAE ${half}: ${expectedKey} is missing (keys: ${sample}, …).${hint}`,
    ),
  );
}

/** The config (variant, latent channels, pool blocks, key layout) that a decoder or encoder checkpoint implies. */
export function taeConfigFromWeights(weights: ReadonlyMap<string, Shaped>, half: TaeHalf): RawConfig {
  const layout = keyLayoutOf(weights);
  const prefix = layout === 'diffusers' ? `${half}.layers.` : '';
  const own = [...weights.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
  let latentChannels: number;
  if (half === 'decoder') {
    const firstKey = `${decoderKey(layout, 1)}.weight`;
    const first = weights.get(firstKey);
    if (!first || first.dims.length !== 4) noSuchHalf(weights, half, layout, firstKey);
    latentChannels = first.dims[1]!;
  } else {
    const firstKey = `${encoderKey(layout, 0)}.weight`;
    if (weights.get(firstKey)?.dims.length !== 4) noSuchHalf(weights, half, layout, firstKey);
    const lastIndex = Math.max(...own.map((k) => /^(\d+)\.weight$/.exec(k)).map((m) => (m ? Number(m[1]) : 0)));
    latentChannels = weights.get(`${encoderKey(layout, lastIndex)}.weight`)!.dims[0]!;
  }
  const midblockGn = own.some((k) => /^\d+\.pool\.0\.weight$/.test(k));
  const variant = (Object.keys(TAE_VARIANTS) as TaeVariant[]).find(
    (v) => TAE_VARIANTS[v].latentChannels === latentChannels && TAE_VARIANTS[v].midblockGn === midblockGn,
  );
  return { ...(variant ? { variant } : {}), latent_channels: latentChannels, use_midblock_gn: midblockGn, key_layout: layout };
}

export const taeRuntime: FamilyRuntime = {
  decoderParams: (config) => layersParams(decoderLayers(taeArchitecture(config))),
  decoderGraph: (config, weights) => buildDecoderGraph(taeArchitecture(config), weights),
  // No norms, no attention: convolutions only, so halos alone.
  shardExchanges: ['halo-rows'],
  createTileRunner: (config, weights, session) => graphRunner(buildDecoderGraph(taeArchitecture(config), weights), DECODER_IO, session),
  postprocess: (raw) => raw,
  configFromWeights: (weights) => taeConfigFromWeights(weights, 'decoder'),
  encoder: {
    params: (config) => layersParams(encoderLayers(taeArchitecture(config))),
    // The one graph its runner opens (what the memory and time models read).
    graph: (config, weights) => buildEncoderGraph(taeArchitecture(config), weights),
    io: ENCODER_IO,
    createRunner: (config, weights, session) => graphRunner(buildEncoderGraph(taeArchitecture(config), weights), ENCODER_IO, session),
    configFromWeights: (weights) => taeConfigFromWeights(weights, 'encoder'),
    ignoredKeyPrefixes: ['decoder.'],
  },
};
