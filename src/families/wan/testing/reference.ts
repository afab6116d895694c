// An independent float64 reference of diffusers' Wan VAE decode (AutoencoderKLWan 2.1 / 2.2 and
// AutoencoderKLQwenImage), written from the architecture notes (wan.md §2–§5, qwenimage.md) as
// ONE CAUSAL PASS over all frames in diffusers' own (B, C, T, H, W) layout — no frame loop, no
// history tensors, no frames-on-batch layout — on the float64 operators of graph/testing. It
// shares no code with the graph builder, so the two can check each other. The reshapes diffusers
// spells with view/permute (the time-conv interleave, DupUp3D, unpatchify) are transcribed as the
// same view/permute here.

import * as ref from '../../../graph/testing/reference-ops.js';
import { add, weightLookup, type NumericTensor, type RefTensor } from '../../../graph/testing/reference-ops.js';

/** The config fields WanDecoder3d is built from (Qwen-Image: no decoder_base_dim, not residual). */
export interface WanReferenceConfig {
  baseDim: number;
  decoderBaseDim?: number;
  dimMult: readonly number[];
  numResBlocks: number;
  temperalDownsample: readonly boolean[];
  isResidual?: boolean;
}

function view(x: RefTensor, dims: readonly number[]): RefTensor {
  return { dims: [...dims], data: x.data };
}

/** Frame t of (B, C, T, H, W) as (B, C, H, W). */
function frame(x: RefTensor, t: number): RefTensor {
  const [b, c, , h, w] = x.dims as [number, number, number, number, number];
  return view(ref.slice(x, 2, t, t + 1), [b, c, h, w]);
}

/** (B, C, H, W) frames back to (B, C, T, H, W). */
function stack(frames: readonly RefTensor[]): RefTensor {
  const [b, c, h, w] = frames[0]!.dims as [number, number, number, number];
  return ref.concat(
    frames.map((f) => view(f, [b, c, 1, h, w])),
    2,
  );
}

/** diffusers' `_decode` without tiling and before unpatchify / clamp: z (B, z, F, h, w) → raw (B, C, 1 + (F−1)·rt, H, W). */
export function referenceWanDecode(config: WanReferenceConfig, weights: ReadonlyMap<string, NumericTensor>, z: NumericTensor): RefTensor {
  const w = weightLookup(weights);

  /**
   * WanCausalConv3d: zero pad (kernel − 1) frames in front (2·padding[0]), kernel//2 in space,
   * then a valid 3-D conv, written as its definition: output frame t sums, over the temporal
   * taps k, the 2-D conv of input frame t − (kt − 1) + k with W[:, :, k].
   */
  const causalConv = (key: string, x: RefTensor): RefTensor => {
    const weight = w(`${key}.weight`);
    const [o, c, kt, kh, kw] = weight.dims as [number, number, number, number, number];
    const bias = w(`${key}.bias`);
    const taps = Array.from({ length: kt }, (_, k) => view(ref.slice(weight, 2, k, k + 1), [o, c, kh, kw]));
    const frames: RefTensor[] = [];
    for (let t = 0; t < x.dims[2]!; t++) {
      let acc: RefTensor | null = null;
      for (let k = 0; k < kt; k++) {
        const source = t - (kt - 1) + k;
        if (source < 0) continue;
        const y = ref.conv(frame(x, source), taps[k]!, undefined, { pads: (kh - 1) / 2 });
        acc = acc ? add(acc, y) : y;
      }
      frames.push({ dims: acc!.dims, data: acc!.data.map((v, i) => v + bias.data[Math.floor(i / (acc!.dims[2]! * acc!.dims[3]!)) % o]!) });
    }
    return stack(frames);
  };
  /** nn.Conv2d applied to every frame. */
  const conv2dPerFrame = (key: string, x: RefTensor, pads: number): RefTensor =>
    stack(Array.from({ length: x.dims[2]! }, (_, t) => ref.conv(frame(x, t), w(`${key}.weight`), w(`${key}.bias`), { pads })));
  /** WanRMS_norm (channel first): F.normalize over C (eps 1e-12 on the norm), · √C · gamma. */
  const rms = (key: string, x: RefTensor): RefTensor => {
    const gamma = w(`${key}.gamma`);
    const c = x.dims[1]!;
    const inner = x.data.length / (x.dims[0]! * c);
    const out = new Float64Array(x.data.length);
    for (let b = 0; b < x.dims[0]!; b++) {
      for (let i = 0; i < inner; i++) {
        let sum = 0;
        for (let ch = 0; ch < c; ch++) sum += x.data[(b * c + ch) * inner + i]! ** 2;
        const norm = Math.max(Math.sqrt(sum), 1e-12);
        for (let ch = 0; ch < c; ch++)
          out[(b * c + ch) * inner + i] = (x.data[(b * c + ch) * inner + i]! / norm) * Math.sqrt(c) * gamma.data[ch]!;
      }
    }
    return { dims: x.dims, data: out };
  };
  const residual = (key: string, x: RefTensor): RefTensor => {
    const shortcut = weights.has(`${key}.conv_shortcut.weight`) ? causalConv(`${key}.conv_shortcut`, x) : x;
    let h = causalConv(`${key}.conv1`, ref.silu(rms(`${key}.norm1`, x)));
    h = causalConv(`${key}.conv2`, ref.silu(rms(`${key}.norm2`, h)));
    return add(h, shortcut);
  };
  /** WanAttentionBlock: per frame, q/k/v = channel blocks of to_qkv over the frame's H·W tokens, softmax(q·kᵀ/√C)·v, proj, + x. */
  const attention = (key: string, x: RefTensor): RefTensor => {
    const [b, c, , h, ww] = x.dims as [number, number, number, number, number];
    const n = h * ww;
    const frames: RefTensor[] = [];
    for (let t = 0; t < x.dims[2]!; t++) {
      const f = frame(x, t);
      const g = rms(`${key}.norm`, f);
      const qkv = ref.conv(g, w(`${key}.to_qkv.weight`), w(`${key}.to_qkv.bias`)); // (B, 3C, H, W)
      const tokens = ref.transpose(view(qkv, [b, 3 * c, n]), [0, 2, 1]); // (B, N, 3C)
      const part = (i: number): RefTensor => ref.slice(tokens, 2, i * c, (i + 1) * c);
      const o = ref.attention(part(0), part(1), part(2)); // (B, N, C)
      const back = view(ref.transpose(o, [0, 2, 1]), [b, c, h, ww]);
      frames.push(add(ref.conv(back, w(`${key}.proj.weight`), w(`${key}.proj.bias`)), f));
    }
    return stack(frames);
  };
  /** upsample3d's temporal part: frame 0 kept; frames 1.. through time_conv (zero pad 2), 2C channels interleaved into 2 frames each. */
  const timeUpsample = (key: string, x: RefTensor): RefTensor => {
    const [b, c, t, h, ww] = x.dims as [number, number, number, number, number];
    if (t === 1) return x;
    const y = causalConv(`${key}.time_conv`, ref.slice(x, 2, 1, t)); // (B, 2C, T−1, H, W)
    // x.reshape(b, 2, c, t, h, w); stack((x[:, 0], x[:, 1]), 3); reshape(b, c, 2t, h, w)
    const interleaved = view(ref.transpose(view(y, [b, 2, c, t - 1, h, ww]), [0, 2, 3, 1, 4, 5]), [b, c, 2 * (t - 1), h, ww]);
    return ref.concat([ref.slice(x, 2, 0, 1), interleaved], 2);
  };
  /** WanResample in an upsample mode: temporal part (3d), then per frame nearest 2× and resample.1. */
  const upsample = (key: string, x: RefTensor, temporal: boolean): RefTensor => {
    if (temporal) x = timeUpsample(key, x);
    return conv2dPerFrame(`${key}.resample.1`, ref.upsampleNearest(x, [1, 2, 2]), 1);
  };
  /** DupUp3D, transcribed: repeat_interleave, view (b, out, ft, fs, fs, t, h, w), permute (0,1,5,2,6,3,7,4), view, drop ft−1 frames. */
  const dupUp = (x: RefTensor, cout: number, ft: number): RefTensor => {
    const [b, cin, t, h, ww] = x.dims as [number, number, number, number, number];
    const fs = 2;
    const repeats = (cout * ft * fs * fs) / cin;
    const repeated = new Float64Array(x.data.length * repeats);
    const plane = t * h * ww;
    for (let i = 0; i < b * cin * repeats; i++) {
      const src = Math.floor(i / (cin * repeats)) * cin + Math.floor((i % (cin * repeats)) / repeats);
      repeated.set(x.data.subarray(src * plane, (src + 1) * plane), i * plane);
    }
    const moved = ref.transpose({ dims: [b, cout, ft, fs, fs, t, h, ww], data: repeated }, [0, 1, 5, 2, 6, 3, 7, 4]);
    return ref.slice(view(moved, [b, cout, t * ft, h * fs, ww * fs]), 2, ft - 1, t * ft);
  };

  const dim = config.decoderBaseDim ?? config.baseDim;
  const mult = config.dimMult;
  const dims = [mult[mult.length - 1]!, ...[...mult].reverse()].map((m) => dim * m);
  const temporalUp = [...config.temperalDownsample].reverse();
  const isResidual = config.isResidual ?? false;

  let x = causalConv('post_quant_conv', ref.toRef(z));
  x = causalConv('decoder.conv_in', x);
  x = residual('decoder.mid_block.resnets.0', x);
  x = attention('decoder.mid_block.attentions.0', x);
  x = residual('decoder.mid_block.resnets.1', x);
  for (let i = 0; i < mult.length; i++) {
    const key = `decoder.up_blocks.${i}`;
    const upFlag = i !== mult.length - 1;
    const temporal = upFlag && temporalUp[i]!;
    const input = x;
    for (let j = 0; j <= config.numResBlocks; j++) x = residual(`${key}.resnets.${j}`, x);
    if (!upFlag) continue;
    if (isResidual) {
      x = upsample(`${key}.upsampler`, x, temporal);
      x = add(x, dupUp(input, dims[i + 1]!, temporal ? 2 : 1));
    } else {
      x = upsample(`${key}.upsamplers.0`, x, temporal);
    }
  }
  return causalConv('decoder.conv_out', ref.silu(rms('decoder.norm_out', x)));
}

/** diffusers' `unpatchify`, transcribed: view (b, c, p, p, f, h, w), permute (0, 1, 4, 5, 3, 6, 2), view (b, c, f, h·p, w·p). */
export function referenceUnpatchify(x: NumericTensor, p: number): RefTensor {
  const [b, cp, f, h, w] = x.dims as [number, number, number, number, number];
  const c = cp / (p * p);
  const moved = ref.transpose({ dims: [b, c, p, p, f, h, w], data: Float64Array.from(x.data) }, [0, 1, 4, 5, 3, 6, 2]);
  return { dims: [b, c, f, h * p, w * p], data: moved.data };
}

/** torch.clamp(x, −1, 1). */
export function referenceClamp(x: NumericTensor): RefTensor {
  return { dims: [...x.dims], data: Float64Array.from(x.data, (v) => Math.min(1, Math.max(-1, v))) };
}
