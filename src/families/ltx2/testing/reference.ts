// An independent float64 reference of diffusers' AutoencoderKLLTX2Video decode (one decoder
// call, no tiling), written from the architecture notes on the float64 operators of
// graph/testing: it reads diffusers' config lists itself (reversing them as the decoder does),
// writes depth-to-space and unpatchify as the index formulas of the notes, and computes the
// timestep embedding in float64. It shares no code with the graph builder.

import * as ref from '../../../graph/testing/reference-ops.js';
import { add, weightLookup, type NumericTensor, type RefTensor } from '../../../graph/testing/reference-ops.js';

/** The decoder fields of an AutoencoderKLLTX2Video config, as diffusers' lists (not reversed). */
export interface Ltx2ReferenceConfig {
  decoderBlockOut: readonly number[];
  /** decoder_layers_per_block: one more entry than blocks; the last is the mid block's. */
  layersPerBlock: readonly number[];
  scaling: readonly boolean[];
  upsampleType: readonly string[];
  residual: readonly boolean[];
  factor: readonly number[];
  patchSize: number;
  patchSizeT: number;
  causal: boolean;
  padding: 'reflect' | 'zeros';
  timestepConditioning: boolean;
  layerNormEpsilon: number;
}

const STRIDES: Record<string, [number, number, number]> = { spatial: [1, 2, 2], temporal: [2, 1, 1], spatiotemporal: [2, 2, 2] };

/** y[b, c, …] = x[b, c, …]·(1 + scale[b, c]) + shift[b, c] with per-(batch, channel) vectors. */
function modulate(x: RefTensor, shift: Float64Array, scale: Float64Array): RefTensor {
  const [b, c] = x.dims as [number, number];
  const inner = x.data.length / (b * c);
  return {
    dims: x.dims,
    data: x.data.map((v, i) => {
      const bc = Math.floor(i / inner);
      return v * (1 + scale[bc]!) + shift[bc]!;
    }),
  };
}

/** LTX2VideoDecoder3d: z (B, Cz, F, h, w), temb (B) or null → (B, Cout, frames, h·r, w·r). */
export function referenceLtx2Decode(
  cfg: Ltx2ReferenceConfig,
  weights: ReadonlyMap<string, NumericTensor>,
  z: NumericTensor,
  temb: readonly number[] | null,
): RefTensor {
  const w = weightLookup(weights);
  const has = (key: string) => weights.has(key);
  const batch = z.dims[0]!;

  const conv = (key: string, x: NumericTensor): RefTensor => {
    const time = cfg.causal ? [2, 0] : [1, 1];
    const padded = ref.pad(x, [0, 0, time[0]!, 0, 0, 0, 0, time[1]!, 0, 0], 'edge');
    if (cfg.padding === 'reflect')
      return ref.conv(ref.pad(padded, [0, 0, 0, 1, 1, 0, 0, 0, 1, 1], 'reflect'), w(`${key}.conv.weight`), w(`${key}.conv.bias`));
    return ref.conv(padded, w(`${key}.conv.weight`), w(`${key}.conv.bias`), { pads: [0, 1, 1, 0, 1, 1] });
  };
  const rms = (x: RefTensor): RefTensor => {
    const [b, c] = x.dims as [number, number];
    const inner = x.data.length / (b * c);
    const out = new Float64Array(x.data.length);
    for (let p = 0; p < b; p++) {
      for (let i = 0; i < inner; i++) {
        let sq = 0;
        for (let ch = 0; ch < c; ch++) sq += x.data[(p * c + ch) * inner + i]! ** 2;
        const scale = 1 / Math.sqrt(sq / c + 1e-8);
        for (let ch = 0; ch < c; ch++) out[(p * c + ch) * inner + i] = x.data[(p * c + ch) * inner + i]! * scale;
      }
    }
    return { dims: x.dims, data: out };
  };
  const linear = (key: string, x: RefTensor): RefTensor => ref.linear(x, w(`${key}.weight`), w(`${key}.bias`));
  const multiplier = cfg.timestepConditioning ? w('decoder.timestep_scale_multiplier').data[0]! : 0;
  // Timesteps(256, flip_sin_to_cos=True, shift 0) then TimestepEmbedding: [cos(t·f), sin(t·f)], f_k = exp(−ln(10000)·k/128).
  const embed = (key: string): RefTensor => {
    const e = new Float64Array(batch * 256);
    for (let b = 0; b < batch; b++) {
      const t = temb![b]! * multiplier;
      for (let k = 0; k < 128; k++) {
        const angle = t * Math.exp((-Math.log(10000) * k) / 128);
        e[b * 256 + k] = Math.cos(angle);
        e[b * 256 + 128 + k] = Math.sin(angle);
      }
    }
    return linear(
      `${key}.timestep_embedder.linear_2`,
      ref.silu(linear(`${key}.timestep_embedder.linear_1`, { dims: [batch, 256], data: e })),
    );
  };
  /** Row `row` of (embedding viewed as (B, rows, C)) + table[row]: one value per (batch, channel). */
  const tableRow = (embedding: RefTensor, table: NumericTensor, rows: number, row: number): Float64Array => {
    const c = table.dims[1]!;
    const out = new Float64Array(batch * c);
    for (let b = 0; b < batch; b++)
      for (let ch = 0; ch < c; ch++) out[b * c + ch] = embedding.data[b * rows * c + row * c + ch]! + table.data[row * c + ch]!;
    return out;
  };
  const resnet = (key: string, x: RefTensor, embedding: RefTensor | null): RefTensor => {
    const table = embedding ? w(`${key}.scale_shift_table`) : null;
    let h = rms(x);
    if (embedding) h = modulate(h, tableRow(embedding, table!, 4, 0), tableRow(embedding, table!, 4, 1));
    h = conv(`${key}.conv1`, ref.silu(h));
    h = rms(h);
    if (embedding) h = modulate(h, tableRow(embedding, table!, 4, 2), tableRow(embedding, table!, 4, 3));
    h = conv(`${key}.conv2`, ref.silu(h));
    let s: RefTensor = x;
    if (has(`${key}.norm3.weight`)) {
      const channelsLast = ref.transpose(x, [0, 2, 3, 4, 1]);
      const normed = ref.transpose(
        ref.layerNorm(channelsLast, w(`${key}.norm3.weight`), w(`${key}.norm3.bias`), cfg.layerNormEpsilon),
        [0, 4, 1, 2, 3],
      );
      s = ref.conv(normed, w(`${key}.conv_shortcut.weight`), w(`${key}.conv_shortcut.bias`));
    }
    return add(h, s);
  };
  const upsampler = (key: string, x: RefTensor, stride: [number, number, number], residual: boolean, factor: number): RefTensor => {
    const frames = (t: RefTensor) => ref.slice(t, 2, stride[0] - 1, t.dims[2]!);
    let y = frames(depthToSpace(conv(`${key}.conv`, x), stride, 'height-first'));
    if (residual) {
      const d = depthToSpace(x, stride, 'height-first');
      const repeats = (stride[0] * stride[1] * stride[2]) / factor;
      y = add(y, frames(ref.concat(new Array<RefTensor>(repeats).fill(d), 1)));
    }
    return y;
  };

  const n = cfg.decoderBlockOut.length;
  const widths = [...cfg.decoderBlockOut].reverse();
  const layers = [...cfg.layersPerBlock].reverse();
  const scaling = [...cfg.scaling].reverse();
  const residual = [...cfg.residual].reverse();
  const factors = [...cfg.factor].reverse();
  let x = conv('decoder.conv_in', z);
  const tc = cfg.timestepConditioning;
  const midEmbedding = tc ? embed('decoder.mid_block.time_embedder') : null;
  for (let j = 0; j < layers[0]!; j++) x = resnet(`decoder.mid_block.resnets.${j}`, x, midEmbedding);
  let channels = widths[0]!;
  for (let i = 0; i < n; i++) {
    const key = `decoder.up_blocks.${i}`;
    const cin = channels / factors[i]!;
    const cout = widths[i]! / factors[i]!;
    if (cin !== cout) x = resnet(`${key}.conv_in`, x, null);
    const embedding = tc ? embed(`${key}.time_embedder`) : null;
    if (scaling[i]) x = upsampler(`${key}.upsamplers.0`, x, STRIDES[cfg.upsampleType[i]!]!, residual[i]!, factors[i]!);
    for (let j = 0; j < layers[i + 1]!; j++) x = resnet(`${key}.resnets.${j}`, x, embedding);
    channels = cout;
  }
  x = rms(x);
  if (tc) {
    const e = embed('decoder.time_embedder');
    const table = w('decoder.scale_shift_table');
    x = modulate(x, tableRow(e, table, 2, 0), tableRow(e, table, 2, 1));
  }
  x = conv('decoder.conv_out', ref.silu(x));
  // The output patch: in diffusers' unpatchify the width offset comes before the height offset.
  return depthToSpace(x, [cfg.patchSizeT, cfg.patchSize, cfg.patchSize], 'width-first');
}

/**
 * Depth to space over (t, h, w) by `[st, sh, sw]`: out[b, c, t·st + a, h·sh + p, w·sw + q] =
 * u[b, c·(st·sh·sw) + a·sh·sw + k, t, h, w], where the sub-pixel index k is p·sw + q for the
 * up-samplers ('height-first') and q·sh + p for the output unpatchify ('width-first').
 */
function depthToSpace(u: RefTensor, [st, sh, sw]: [number, number, number], order: 'height-first' | 'width-first'): RefTensor {
  const [b, cu, t, hh, ww] = u.dims as [number, number, number, number, number];
  const g = st * sh * sw;
  const c = cu / g;
  const out = new Float64Array(u.data.length);
  let i = 0;
  for (let bi = 0; bi < b; bi++)
    for (let ci = 0; ci < c; ci++)
      for (let to = 0; to < t * st; to++)
        for (let ho = 0; ho < hh * sh; ho++)
          for (let wo = 0; wo < ww * sw; wo++) {
            const sub = order === 'height-first' ? (ho % sh) * sw + (wo % sw) : (wo % sw) * sh + (ho % sh);
            const ch = ci * g + (to % st) * sh * sw + sub;
            out[i++] = u.data[(((bi * cu + ch) * t + Math.floor(to / st)) * hh + Math.floor(ho / sh)) * ww + Math.floor(wo / sw)]!;
          }
  return { dims: [b, c, t * st, hh * sh, ww * sw], data: out };
}
