// Single-file AutoencoderKL checkpoints in the original (ldm) layout — a VAE file from ComfyUI's
// models/vae, SD/SDXL full checkpoints (keys under `first_stage_model.`, every other key
// ignored), FLUX.1's ae.safetensors — read as diffusers' AutoencoderKL: keys renamed as
// diffusers' convert_ldm_vae_checkpoint renames them (proved against it by
// testing/goldens/ldm-vae-keys.json), attention 1×1 convs viewed as linear weights, and the
// architecture read from the tensor shapes. TAE files are recognised by their keys too (their
// variant then comes from the shapes, see tae.runtime.ts). Only the header is needed.

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

/** The key prefix of an ldm-layout AutoencoderKL (`first_stage_model.` or none), or null when the keys are not one. */
export function ldmVaePrefix(entries: ReadonlyMap<string, unknown>): string | null {
  return PREFIXES.find((p) => entries.has(`${p}${PROBE}`)) ?? null;
}

/** The decoder's entries under diffusers' names (each keeps its stored name; attention weights squeezed to 2-D). */
export function ldmToDiffusers(entries: ReadonlyMap<string, TensorEntry>, prefix: string): Map<string, TensorEntry> {
  const levels = new Set<number>();
  for (const key of entries.keys()) {
    const m = new RegExp(`^${prefix.replace('.', '\\.')}decoder\\.up\\.(\\d+)\\.`).exec(key);
    if (m) levels.add(Number(m[1]));
  }
  const top = levels.size - 1;
  const out = new Map<string, TensorEntry>();
  for (const [key, entry] of entries) {
    if (!key.startsWith(prefix)) continue;
    const k = key.slice(prefix.length);
    if (!k.startsWith('decoder.') && !k.startsWith('post_quant_conv.')) continue;
    let name = k
      .replace(/^decoder\.up\.(\d+)\.block\.(\d+)\./, (_, i: string, j: string) => `decoder.up_blocks.${top - Number(i)}.resnets.${j}.`)
      .replace(/^decoder\.up\.(\d+)\.upsample\./, (_, i: string) => `decoder.up_blocks.${top - Number(i)}.upsamplers.0.`)
      .replace(/^decoder\.mid\.block_([12])\./, (_, i: string) => `decoder.mid_block.resnets.${Number(i) - 1}.`)
      .replace(/^decoder\.norm_out\./, 'decoder.conv_norm_out.')
      .replace('.nin_shortcut.', '.conv_shortcut.');
    let dims = entry.dims;
    const attention = /^decoder\.mid\.attn_1\.(norm|q|k|v|proj_out)\.(weight|bias)$/.exec(k);
    if (attention) {
      name = `decoder.mid_block.attentions.0.${ATTENTION[attention[1] as keyof typeof ATTENTION]}.${attention[2]}`;
      // A 1×1 convolution's weight is the linear weight diffusers holds.
      if (attention[1] !== 'norm' && attention[2] === 'weight' && dims.length === 4 && dims[2] === 1 && dims[3] === 1) dims = dims.slice(0, 2);
    }
    out.set(name, { name: entry.name, dtype: entry.dtype, dims });
  }
  return out;
}

/**
 * The AutoencoderKL config the shapes imply: latent channels, one block width per level, layers
 * per block and the quant convs. GroupNorm's group count is not in the shapes: 32, as every
 * published ldm VAE uses (a config overrides it). A 4-channel VAE gets SD's scaling_factor.
 */
export function ldmVaeConfig(entries: ReadonlyMap<string, { readonly dims: readonly number[] }>, prefix: string): RawConfig {
  const dims = (k: string) => entries.get(`${prefix}${k}`)?.dims;
  const latentChannels = dims('decoder.conv_in.weight')?.[1] ?? 4;
  const blockOut: number[] = [];
  for (let i = 0; dims(`decoder.up.${i}.block.0.conv2.weight`); i++) blockOut.push(dims(`decoder.up.${i}.block.0.conv2.weight`)![0]!);
  let blocks = 0;
  while (dims(`decoder.up.0.block.${blocks}.conv1.weight`)) blocks++;
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
