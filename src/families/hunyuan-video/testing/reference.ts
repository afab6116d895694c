// An independent float64 reference of diffusers' AutoencoderKLHunyuanVideo decode (one call,
// no tiling), written from the architecture notes on the float64 operators of graph/testing:
// replicate-padded causal convs, GroupNorm over all frames, the mid-block attention with its
// frame-causal mask, and the up-sampler as diffusers writes it (frame 0 up-sampled in space,
// the other frames in time and space, concatenated). It shares no code with the graph builder.

import * as ref from '../../../graph/testing/reference-ops.js';
import { add, weightLookup, type NumericTensor, type RefTensor } from '../../../graph/testing/reference-ops.js';

export interface HunyuanVideoReferenceArchitecture {
  /** block_out_channels, narrowest first. */
  blockOut: readonly number[];
  layersPerBlock: number;
  groups: number;
  attention: boolean;
  spatialRatio: number;
}

const EPS = 1e-6;

/** `decoder(post_quant_conv(z))`: z (B, Cz, F, h, w) → (B, Cout, 1 + 4(F − 1), h·r, w·r). */
export function referenceHunyuanVideoDecode(
  arch: HunyuanVideoReferenceArchitecture,
  weights: ReadonlyMap<string, NumericTensor>,
  z: NumericTensor,
): RefTensor {
  const w = weightLookup(weights);
  // F.pad(x, (k//2, k//2, k//2, k//2, k − 1, 0), mode="replicate") then a valid Conv3d.
  const causalConv = (key: string, x: NumericTensor): RefTensor => {
    const k = w(`${key}.conv.weight`).dims[2]!;
    const s = Math.floor(k / 2);
    const padded = ref.pad(x, [0, 0, k - 1, s, s, 0, 0, 0, s, s], 'edge');
    return ref.conv(padded, w(`${key}.conv.weight`), w(`${key}.conv.bias`));
  };
  const norm = (key: string, x: NumericTensor): RefTensor => ref.groupNorm(x, arch.groups, w(`${key}.weight`), w(`${key}.bias`), EPS);
  const resnet = (key: string, x: RefTensor): RefTensor => {
    let h = causalConv(`${key}.conv1`, ref.silu(norm(`${key}.norm1`, x)));
    h = causalConv(`${key}.conv2`, ref.silu(norm(`${key}.norm2`, h)));
    const changes = w(`${key}.norm1.weight`).dims[0] !== w(`${key}.conv1.conv.weight`).dims[0];
    return add(changes ? causalConv(`${key}.conv_shortcut`, x) : x, h);
  };
  const attention = (key: string, x: RefTensor): RefTensor => {
    const [b, c, t, hh, ww] = x.dims as [number, number, number, number, number];
    const n = t * hh * ww;
    // Tokens (B, N, C), token n = (frame·H + y)·W + x: GroupNorm over C/G × N equals GroupNorm of x.
    const tokens = ref.transpose({ dims: [b, c, n], data: norm(`${key}.group_norm`, x).data }, [0, 2, 1]);
    const linear = (name: string, v: RefTensor): RefTensor => ref.linear(v, w(`${key}.${name}.weight`), w(`${key}.${name}.bias`));
    const q = linear('to_q', tokens);
    const k = linear('to_k', tokens);
    const v = linear('to_v', tokens);
    const scores = ref.map(ref.matmul(q, ref.transpose(k, [0, 2, 1])), (s) => s / Math.sqrt(c));
    const frame = (token: number) => Math.floor(token / (hh * ww));
    for (let p = 0; p < b; p++) {
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if (frame(j) > frame(i)) scores.data[(p * n + i) * n + j] = -Infinity;
    }
    const o = linear('to_out.0', ref.matmul(ref.softmax(scores, -1), v));
    return add({ dims: x.dims, data: ref.transpose(o, [0, 2, 1]).data }, x);
  };
  const upsample = (key: string, x: RefTensor, st: number, ss: number): RefTensor => {
    const [b, c, t, hh, ww] = x.dims as [number, number, number, number, number];
    const first = ref.upsampleNearest({ dims: [b, c, hh, ww], data: ref.slice(x, 2, 0, 1).data }, [ss, ss]);
    const firstFrame: RefTensor = { dims: [b, c, 1, hh * ss, ww * ss], data: first.data };
    const frames = t > 1 ? ref.concat([firstFrame, ref.upsampleNearest(ref.slice(x, 2, 1, t), [st, ss, ss])], 2) : firstFrame;
    return causalConv(`${key}.conv`, frames);
  };

  const n = arch.blockOut.length;
  const widths = [...arch.blockOut].reverse();
  let x: RefTensor = ref.conv(z, w('post_quant_conv.weight'), w('post_quant_conv.bias'));
  x = causalConv('decoder.conv_in', x);
  x = resnet('decoder.mid_block.resnets.0', x);
  if (arch.attention) x = attention('decoder.mid_block.attentions.0', x);
  x = resnet('decoder.mid_block.resnets.1', x);
  widths.forEach((_, i) => {
    for (let j = 0; j <= arch.layersPerBlock; j++) x = resnet(`decoder.up_blocks.${i}.resnets.${j}`, x);
    const space = i < Math.log2(arch.spatialRatio);
    const time = i >= n - 1 - 2 && i !== n - 1;
    if (space || time) x = upsample(`decoder.up_blocks.${i}.upsamplers.0`, x, time ? 2 : 1, space ? 2 : 1);
  });
  x = ref.silu(norm('decoder.conv_norm_out', x));
  return causalConv('decoder.conv_out', x);
}
