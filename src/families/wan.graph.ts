// The Wan VAE decoder (diffusers' WanDecoder3d behind post_quant_conv; Wan 2.1, Wan 2.2 with
// residual up blocks, and Qwen-Image, whose decoder is Wan 2.1's) as step graphs: its
// architecture read from a resolved config, its parameter list under the checkpoint's own keys,
// and the ONNX graph of one step of the frame loop (wan-blocks.ts says how a step threads time).
//
// A step graph takes `latent` (1, z, h, w) — one latent frame of one batch element — plus, in a
// `next` step, every `past:<conv key>`; it returns `sample` (frames, out_channels, h·s, w·s), the
// raw decoder output of that frame (1 frame in the sequence's first step, temporalRatio frames
// after), plus every `present:<conv key>` unless the step is the only one.
//
// Why separate graphs for the first step rather than an input flag: the first step differs in
// structure, not in values — it never runs the time convs, keeps one frame where later steps
// make two, keeps one DupUp3D frame instead of two, and its causal convs need only the last
// temporal kernel slice (a third of the FLOPs). A flag could only express that with ONNX `If`
// subgraphs holding both versions.

import { GraphBuilder } from '../graph/builder.js';
import type { Tensor } from '../tensor.js';
import type { ParamSpec } from '../weights/synthetic.js';
import { GAIN_AFTER_SILU, Module, WeightTable } from './blocks.js';
import type { ResolvedConfig } from './types.js';
import {
  causalConv,
  causalConvParams,
  dupUp3d,
  midBlock,
  midBlockParams,
  pointwiseConv,
  residualBlock,
  residualBlockParams,
  rmsNorm,
  rmsNormParams,
  StepContext,
  upsampler,
  upsamplerParams,
  type Frames,
  type WanStep,
} from './wan-blocks.js';

export const LATENT_INPUT = 'latent';
export const SAMPLE_OUTPUT = 'sample';

export type WanUpsample = 'none' | 'spatial' | 'spatio-temporal';

export interface WanUpBlockArchitecture {
  inChannels: number;
  outChannels: number;
  upsample: WanUpsample;
  /** Output channels of the upsampler's resample conv (2.1 halves them, 2.2 keeps them). */
  resampleChannels: number;
}

export interface WanDecoderArchitecture {
  latentChannels: number;
  /** conv_out's channels: the sample's channels times patch_size² (Wan 2.2: 12). */
  convOutChannels: number;
  /** dims[0]: conv_in and the mid block. */
  midChannels: number;
  /** num_res_blocks + 1 residual blocks per up block. */
  resnetsPerBlock: number;
  /** Wan 2.2 (`is_residual`): WanResidualUpBlock with a DupUp3D shortcut, key `upsampler`. */
  residual: boolean;
  upBlocks: WanUpBlockArchitecture[];
}

/** WanDecoder3d's widths and up-block modes (wan.md §2), for AutoencoderKLWan and AutoencoderKLQwenImage configs. */
export function wanDecoderArchitecture(config: ResolvedConfig): WanDecoderArchitecture {
  const f = config.fields;
  const base = (f['decoder_base_dim'] as number | null | undefined) ?? (f['base_dim'] as number);
  const mult = f['dim_mult'] as number[];
  const temporalUp = [...(f['temperal_downsample'] as boolean[])].reverse();
  const residual = (f['is_residual'] as boolean | undefined) ?? false;
  const dims = [mult[mult.length - 1]!, ...[...mult].reverse()].map((m) => base * m);
  const p = config.geometry.patchSize;
  const upBlocks = mult.map((_, i): WanUpBlockArchitecture => {
    const last = i === mult.length - 1;
    const outChannels = dims[i + 1]!;
    return {
      inChannels: i > 0 && !residual ? Math.floor(dims[i]! / 2) : dims[i]!,
      outChannels,
      upsample: last ? 'none' : temporalUp[i] ? 'spatio-temporal' : 'spatial',
      resampleChannels: residual ? outChannels : Math.floor(outChannels / 2),
    };
  });
  return {
    latentChannels: config.geometry.latentChannels,
    convOutChannels: config.geometry.outChannels * p * p,
    midChannels: dims[0]!,
    resnetsPerBlock: (f['num_res_blocks'] as number) + 1,
    residual,
    upBlocks,
  };
}

const upBlockKey = (i: number): string => `decoder.up_blocks.${i}`;
/** Wan 2.1 / Qwen-Image: `upsamplers.0` (a ModuleList); Wan 2.2: `upsampler`. */
const upsamplerName = (a: WanDecoderArchitecture): string => (a.residual ? 'upsampler' : 'upsamplers.0');

/** Every decoder parameter (post_quant_conv.* and decoder.*) with its checkpoint key, shape and synthetic init. */
export function wanDecoderParams(config: ResolvedConfig): ParamSpec[] {
  const a = wanDecoderArchitecture(config);
  const z = a.latentChannels;
  const specs: ParamSpec[] = [
    ...causalConvParams('post_quant_conv', z, z, [1, 1, 1]),
    ...causalConvParams('decoder.conv_in', z, a.midChannels, [3, 3, 3]),
    ...midBlockParams('decoder.mid_block', a.midChannels),
  ];
  a.upBlocks.forEach((b, i) => {
    for (let j = 0; j < a.resnetsPerBlock; j++) specs.push(...residualBlockParams(`${upBlockKey(i)}.resnets.${j}`, j === 0 ? b.inChannels : b.outChannels, b.outChannels));
    if (b.upsample !== 'none') specs.push(...upsamplerParams(`${upBlockKey(i)}.${upsamplerName(a)}`, b.outChannels, b.resampleChannels, b.upsample === 'spatio-temporal'));
  });
  const last = a.upBlocks[a.upBlocks.length - 1]!.outChannels;
  specs.push(...rmsNormParams('decoder.norm_out', last, 'video'));
  specs.push(...causalConvParams('decoder.conv_out', last, a.convOutChannels, [3, 3, 3], GAIN_AFTER_SILU));
  return specs;
}

/** WanUpBlock (2.1) or WanResidualUpBlock (2.2): resnets, the upsampler, and for 2.2 the DupUp3D shortcut. */
function upBlock(m: Module, x: Frames, b: WanUpBlockArchitecture, a: WanDecoderArchitecture, steps: StepContext): Frames {
  const input = x;
  for (let j = 0; j < a.resnetsPerBlock; j++) x = residualBlock(m.child(`resnets.${j}`), x, steps);
  if (b.upsample === 'none') return x;
  const temporal = b.upsample === 'spatio-temporal';
  x = upsampler(m.child(upsamplerName(a)), x, temporal, steps);
  if (!a.residual) return x;
  const shortcut = dupUp3d(m.scope, input, b.inChannels, b.outChannels, temporal, steps);
  return { ...x, value: m.scope.add(x.value, shortcut.value) };
}

/** The graph of one step of the frame loop, with the bound weights as initializers under their checkpoint keys. */
export function buildWanStepGraph(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, step: WanStep): GraphBuilder {
  const a = wanDecoderArchitecture(config);
  const g = new GraphBuilder(`${config.className}.${step}`, { docString: `${config.className} decoder, ${step} step of the frame loop, built by distvae` });
  const table = new WeightTable(weights);
  const root = new Module(g, table);
  const steps = new StepContext(g, step);
  let x: Frames = { value: g.input(LATENT_INPUT, [1, a.latentChannels, 'height', 'width']), count: 1, scale: 1 };
  x = { ...x, value: pointwiseConv(root.child('post_quant_conv'), x.value) };
  const decoder = root.child('decoder');
  x = causalConv(decoder.child('conv_in'), x, steps);
  x = midBlock(decoder.child('mid_block'), x, steps);
  a.upBlocks.forEach((b, i) => (x = upBlock(decoder.child(`up_blocks.${i}`), x, b, a, steps)));
  x = { ...x, value: g.silu(rmsNorm(decoder.child('norm_out'), x.value)) };
  x = causalConv(decoder.child('conv_out'), x, steps);
  g.output(SAMPLE_OUTPUT, x.value, [x.count, a.convOutChannels, `height*${x.scale}`, `width*${x.scale}`]);
  table.assertAllTaken(`${config.className} ${step}-step`);
  return g;
}
