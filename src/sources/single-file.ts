// Single-file VAE checkpoints in the original layouts, read as diffusers models: the ldm layout
// (a VAE file from ComfyUI's models/vae, SD/SDXL full checkpoints with keys under
// `first_stage_model.` and every other key ignored, FLUX.1's ae.safetensors) as AutoencoderKL,
// keys renamed as diffusers' convert_ldm_vae_checkpoint renames them, the encoder's too (proved
// by testing/goldens/ldm-vae-keys.json); and Flux.2's ae.safetensors — the same names with the
// quant convs inside `encoder.` / `decoder.` and batch-norm statistics `bn.*` — as
// AutoencoderKLFlux2, as diffusers' scripts/convert_flux2_to_diffusers.py renames them (proved by
// testing/goldens/flux2-vae-keys.json). Attention 1×1 convs are viewed as linear weights and the
// architecture is read from the tensor shapes. TAE files are recognised by their keys too (their
// variant then comes from the shapes, see tae/runtime.ts). Only the header is needed.

import type { RawConfig } from '../families/types.js';
import type { TensorEntry } from '../weights/reader.js';

const PREFIXES = ['first_stage_model.', ''];
const PROBE = 'decoder.up.0.block.0.conv1.weight';
const ATTENTION = { norm: 'group_norm', q: 'to_q', k: 'to_k', v: 'to_v', proj_out: 'to_out.0' } as const;

/**
 * Whether the keys are a TAE checkpoint's (madebyollin's `taesd_decoder.pth` / `taef1` files:
 * every key a layer index, `3.conv.0.weight`; or diffusers' AutoencoderTiny `decoder.layers.`).
 */
export function looksLikeTae(keys: Iterable<string>): boolean {
  let any = false;
  for (const k of keys) {
    if (k.startsWith('decoder.layers.') || k.startsWith('encoder.layers.')) return true;
    if (!/^\d+\./.test(k)) return false;
    any = true;
  }
  return any;
}

/** An original single-file layout: which one, the key prefix it sits under, and the family it loads as. */
export interface SingleFileLayout {
  /** `ldm`: SD / SDXL / FLUX.1 (AutoencoderKL); `flux2`: Flux.2's ae (AutoencoderKLFlux2). */
  kind: 'ldm' | 'flux2';
  /** `first_stage_model.` in a full checkpoint, else empty. */
  prefix: string;
  family: 'autoencoder-kl' | 'flux2';
}

/**
 * The original layout the keys are in, or null when they are not one (diffusers' own keys, TAE,
 * others). Flux.2 keeps the ldm names; its post-quant conv inside `decoder.` (or its `bn.`
 * statistics) tells it apart from an ldm AutoencoderKL, whose quant convs sit at the top.
 */
export function singleFileLayout(entries: ReadonlyMap<string, unknown>): SingleFileLayout | null {
  const prefix = PREFIXES.find((p) => entries.has(`${p}${PROBE}`));
  if (prefix === undefined) return null;
  const flux2 = entries.has(`${prefix}decoder.post_quant_conv.weight`) || entries.has(`${prefix}bn.running_mean`);
  return flux2 ? { kind: 'flux2', prefix, family: 'flux2' } : { kind: 'ldm', prefix, family: 'autoencoder-kl' };
}

/**
 * The entries under diffusers' names (each keeps its stored name; attention weights squeezed to
 * 2-D): the decoder and its post-quant conv; for ldm also the encoder and its quant conv (read
 * only when an encoder is asked for); for Flux.2 also its post-quant conv and `bn.` statistics.
 */
export function singleFileToDiffusers(entries: ReadonlyMap<string, TensorEntry>, layout: SingleFileLayout): Map<string, TensorEntry> {
  const prefix = layout.prefix;
  const levels = new Set<number>();
  for (const key of entries.keys()) {
    const m = new RegExp(`^${prefix.replace('.', '\\.')}decoder\\.up\\.(\\d+)\\.`).exec(key);
    if (m) levels.add(Number(m[1]));
  }
  const top = levels.size - 1;
  // Flux.2's encoder keeps its quant conv inside `encoder.`: only the ldm encoder is mapped here.
  const halves = layout.kind === 'ldm' ? /^(decoder\.|encoder\.|post_quant_conv\.|quant_conv\.)/ : /^(decoder\.|post_quant_conv\.)/;
  const out = new Map<string, TensorEntry>();
  for (const [key, entry] of entries) {
    if (!key.startsWith(prefix)) continue;
    let k = key.slice(prefix.length);
    if (layout.kind === 'flux2') {
      if (k.startsWith('bn.running_')) {
        out.set(k, { name: entry.name, dtype: entry.dtype, dims: entry.dims });
        continue;
      }
      if (k.startsWith('post_quant_conv.')) continue; // not where Flux.2 keeps it
      k = k.replace(/^decoder\.post_quant_conv\./, 'post_quant_conv.');
    }
    if (!halves.test(k)) continue;
    let name = k
      // ldm numbers the decoder's levels from the top, diffusers from the bottom; the encoder's run the same way in both.
      .replace(/^decoder\.up\.(\d+)\.block\.(\d+)\./, (_, i: string, j: string) => `decoder.up_blocks.${top - Number(i)}.resnets.${j}.`)
      .replace(/^decoder\.up\.(\d+)\.upsample\./, (_, i: string) => `decoder.up_blocks.${top - Number(i)}.upsamplers.0.`)
      .replace(/^encoder\.down\.(\d+)\.block\.(\d+)\./, 'encoder.down_blocks.$1.resnets.$2.')
      .replace(/^encoder\.down\.(\d+)\.downsample\./, 'encoder.down_blocks.$1.downsamplers.0.')
      .replace(/^(decoder|encoder)\.mid\.block_([12])\./, (_, half: string, i: string) => `${half}.mid_block.resnets.${Number(i) - 1}.`)
      .replace(/^(decoder|encoder)\.norm_out\./, '$1.conv_norm_out.')
      .replace('.nin_shortcut.', '.conv_shortcut.');
    let dims = entry.dims;
    const attention = /^(decoder|encoder)\.mid\.attn_1\.(norm|q|k|v|proj_out)\.(weight|bias)$/.exec(k);
    if (attention) {
      name = `${attention[1]}.mid_block.attentions.0.${ATTENTION[attention[2] as keyof typeof ATTENTION]}.${attention[3]}`;
      // A 1×1 convolution's weight is the linear weight diffusers holds.
      if (attention[2] !== 'norm' && attention[3] === 'weight' && dims.length === 4 && dims[2] === 1 && dims[3] === 1)
        dims = dims.slice(0, 2);
    }
    out.set(name, { name: entry.name, dtype: entry.dtype, dims });
  }
  return out;
}

/**
 * The config the shapes imply: latent channels, one block width per level, layers per block and
 * the quant convs; for Flux.2 also the latent packing (`bn` holds latent_channels · p² statistics).
 * GroupNorm's group count is not in the shapes: 32, as every published ldm and Flux.2 VAE uses (a
 * config overrides it). A 4-channel ldm VAE gets SD's scaling_factor; a 16-channel one gets none,
 * since SD3's and FLUX.1's VAEs have the same shapes and different factors.
 */
export function singleFileConfig(entries: ReadonlyMap<string, { readonly dims: readonly number[] }>, layout: SingleFileLayout): RawConfig {
  const prefix = layout.prefix;
  const dims = (k: string) => entries.get(`${prefix}${k}`)?.dims;
  const latentChannels = dims('decoder.conv_in.weight')?.[1] ?? 4;
  const blockOut: number[] = [];
  for (let i = 0; dims(`decoder.up.${i}.block.0.conv2.weight`); i++) blockOut.push(dims(`decoder.up.${i}.block.0.conv2.weight`)![0]!);
  let blocks = 0;
  while (dims(`decoder.up.0.block.${blocks}.conv1.weight`)) blocks++;
  if (layout.kind === 'flux2') {
    const statistics = dims('bn.running_mean')?.[0];
    const patch = statistics !== undefined ? Math.round(Math.sqrt(statistics / latentChannels)) : undefined;
    return {
      _class_name: 'AutoencoderKLFlux2',
      latent_channels: latentChannels,
      block_out_channels: blockOut,
      layers_per_block: blocks - 1,
      norm_num_groups: 32,
      use_quant_conv: entries.has(`${prefix}encoder.quant_conv.weight`),
      use_post_quant_conv: entries.has(`${prefix}decoder.post_quant_conv.weight`),
      // A statistics count that is not latent_channels · p² is left to the config reader's default.
      ...(patch !== undefined && patch * patch * latentChannels === statistics ? { patch_size: [patch, patch] } : {}),
    };
  }
  return {
    _class_name: 'AutoencoderKL',
    latent_channels: latentChannels,
    block_out_channels: blockOut,
    layers_per_block: blocks - 1,
    norm_num_groups: 32,
    use_quant_conv: entries.has(`${prefix}quant_conv.weight`),
    use_post_quant_conv: entries.has(`${prefix}post_quant_conv.weight`),
    ...(latentChannels === 4 ? { scaling_factor: 0.18215 } : {}),
  };
}
