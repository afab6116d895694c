// HunyuanVideo 1.5's original checkpoint layout (Tencent's `vae/diffusion_pytorch_model.safetensors`,
// before diffusers' scripts/convert_hunyuan_video1_5_to_diffusers.py): keys renamed as that
// script renames them — `{decoder,encoder}.mid.block_{1,2}` → `mid_block.resnets.{0,1}`,
// `….mid.attn_1.{q,k,v}` → `attentions.0.to_{q,k,v}`, `decoder.up.{i}.block.{j}` →
// `up_blocks.{i}.resnets.{j}`, `decoder.up.{i}.upsample` → `up_blocks.{i}.upsamplers.0`, and the
// encoder's `encoder.down.{i}.block.{j}` / `.downsample` → `down_blocks.{i}.resnets.{j}` /
// `.downsamplers.0`; the rest
// (conv_in, norm_out, conv_out, every tensor's shape) is unchanged — and the config such a file
// implies, read from its shapes, so a bare original file decodes with `--family hunyuan-video-1.5`.

import type { Shaped } from '../../weights/bind.js';
import type { RawConfig } from '../types.js';

const RENAMES: [RegExp, string][] = [
  [/^(decoder|encoder)\.mid\.block_([12])\./, '$1.mid_block.resnets.$2.'],
  [/^(decoder|encoder)\.mid\.attn_1\.(q|k|v)\./, '$1.mid_block.attentions.0.to_$2.'],
  [/^(decoder|encoder)\.mid\.attn_1\./, '$1.mid_block.attentions.0.'],
  [/^decoder\.up\.(\d+)\.block\.(\d+)\./, 'decoder.up_blocks.$1.resnets.$2.'],
  [/^decoder\.up\.(\d+)\.upsample\./, 'decoder.up_blocks.$1.upsamplers.0.'],
  [/^encoder\.down\.(\d+)\.block\.(\d+)\./, 'encoder.down_blocks.$1.resnets.$2.'],
  [/^encoder\.down\.(\d+)\.downsample\./, 'encoder.down_blocks.$1.downsamplers.0.'],
];

/** The diffusers name of an original-layout key (diffusers' own keys pass unchanged). */
function renamed(key: string): string {
  for (const [pattern, to] of RENAMES) {
    if (!pattern.test(key)) continue;
    // block_1 / block_2 are resnets 0 / 1.
    return key
      .replace(pattern, to)
      .replace(
        /^(decoder|encoder)\.mid_block\.resnets\.([12])\./,
        (_, half: string, n: string) => `${half}.mid_block.resnets.${Number(n) - 1}.`,
      );
  }
  return key;
}

/** Original-layout decoder keys under diffusers' names; a file holding both spellings keeps the original key, which strict binding then reports. */
export function renameOriginalKeys<T>(weights: ReadonlyMap<string, T>): Map<string, T> {
  const out = new Map<string, T>();
  for (const [key, value] of weights) {
    const to = renamed(key);
    out.set(to !== key && weights.has(to) ? key : to, value);
  }
  return out;
}

/**
 * The decoder config the (diffusers-named) tensors imply: latent and output channels from
 * conv_in / conv_out, widths from each up block's first resnet (reversed), layers from the
 * resnets of up block 0, ratios from the upsamplers (each 2× in space; 2× in time too when its
 * conv packs 8 rather than 4 outputs per channel). Empty when the tensors are not this decoder's.
 */
export function hunyuanVideo15ConfigFromWeights(weights: ReadonlyMap<string, Shaped>): RawConfig {
  const dims = (key: string) => weights.get(key)?.dims;
  const convIn = dims('decoder.conv_in.conv.weight');
  const convOut = dims('decoder.conv_out.conv.weight');
  if (!convIn || !convOut || convIn.length !== 5) return {};
  const widths: number[] = [];
  for (let i = 0; dims(`decoder.up_blocks.${i}.resnets.0.conv1.conv.weight`); i++)
    widths.push(dims(`decoder.up_blocks.${i}.resnets.0.conv1.conv.weight`)![0]!);
  if (widths.length === 0) return {};
  let resnets = 0;
  while (dims(`decoder.up_blocks.0.resnets.${resnets}.conv1.conv.weight`)) resnets++;
  let spatial = 1;
  let temporal = 1;
  for (let i = 0; i < widths.length; i++) {
    const up = dims(`decoder.up_blocks.${i}.upsamplers.0.conv.conv.weight`);
    if (!up) continue;
    spatial *= 2;
    const next = widths[i + 1];
    if (next !== undefined && up[0] === 8 * next) temporal *= 2;
  }
  return {
    latent_channels: convIn[1]!,
    out_channels: convOut[0]!,
    block_out_channels: [...widths].reverse(),
    layers_per_block: resnets - 1,
    spatial_compression_ratio: spatial,
    temporal_compression_ratio: temporal,
  };
}
