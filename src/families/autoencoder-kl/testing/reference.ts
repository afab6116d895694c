// An independent float64 reference of diffusers' AutoencoderKL / Flux.2 decode, written from
// the architecture notes (the `Decoder` forward pass, key by key) on the float64 operators of
// graph/testing — it shares no code with the graph builder, so the two can check each other.

import * as ref from '../../../graph/testing/reference-ops.js';
import { add, weightLookup, type NumericTensor, type RefTensor } from '../../../graph/testing/reference-ops.js';

export interface KlReferenceArchitecture {
  /** Decoder widths, narrowest first (`decoder_block_out_channels or block_out_channels`). */
  blockOut: readonly number[];
  layersPerBlock: number;
  groups: number;
  attention: boolean;
  postQuantConv: boolean;
}

const EPS = 1e-6;

/** diffusers' `AutoencoderKL._decode` without tiling: z (B, Cz, h, w) → raw sample (B, Cout, h·r, w·r). */
export function referenceKlDecode(arch: KlReferenceArchitecture, weights: ReadonlyMap<string, NumericTensor>, z: NumericTensor): RefTensor {
  const w = weightLookup(weights);
  const conv = (key: string, x: NumericTensor): RefTensor => {
    const k = w(`${key}.weight`).dims[2]!;
    return ref.conv(x, w(`${key}.weight`), w(`${key}.bias`), { pads: (k - 1) / 2 });
  };
  const norm = (key: string, x: NumericTensor): RefTensor => ref.groupNorm(x, arch.groups, w(`${key}.weight`), w(`${key}.bias`), EPS);
  const resnet = (key: string, x: RefTensor): RefTensor => {
    let h = conv(`${key}.conv1`, ref.silu(norm(`${key}.norm1`, x)));
    h = conv(`${key}.conv2`, ref.silu(norm(`${key}.norm2`, h)));
    const needsShortcut = w(`${key}.norm1.weight`).dims[0] !== w(`${key}.conv1.weight`).dims[0];
    const shortcut = needsShortcut ? conv(`${key}.conv_shortcut`, x) : x;
    return add(shortcut, h);
  };
  const attention = (key: string, x: RefTensor): RefTensor => {
    const [b, c, hh, ww] = x.dims as [number, number, number, number];
    const n = hh * ww;
    const normed = norm(`${key}.group_norm`, x);
    const tokens = ref.transpose({ dims: [b, c, n], data: normed.data }, [0, 2, 1]);
    // nn.Linear on tokens (B, N, C): y[b, n, o] = Σ_i t[b, n, i]·W[o, i] + bias[o].
    const linear = (name: string, t: RefTensor): RefTensor => ref.linear(t, w(`${key}.${name}.weight`), w(`${key}.${name}.bias`));
    const o = linear('to_out.0', ref.attention(linear('to_q', tokens), linear('to_k', tokens), linear('to_v', tokens)));
    const back = ref.transpose(o, [0, 2, 1]);
    return add({ dims: x.dims, data: back.data }, x);
  };

  const widths = [...arch.blockOut].reverse();
  let x: RefTensor = ref.toRef(z);
  if (arch.postQuantConv) x = conv('post_quant_conv', x);
  x = conv('decoder.conv_in', x);
  x = resnet('decoder.mid_block.resnets.0', x);
  if (arch.attention) x = attention('decoder.mid_block.attentions.0', x);
  x = resnet('decoder.mid_block.resnets.1', x);
  widths.forEach((_, i) => {
    for (let j = 0; j <= arch.layersPerBlock; j++) x = resnet(`decoder.up_blocks.${i}.resnets.${j}`, x);
    if (i < widths.length - 1) x = conv(`decoder.up_blocks.${i}.upsamplers.0.conv`, ref.upsampleNearest(x, [2, 2]));
  });
  x = ref.silu(norm('decoder.conv_norm_out', x));
  return conv('decoder.conv_out', x);
}
