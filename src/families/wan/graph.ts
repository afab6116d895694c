// The Wan VAE decoder (diffusers' WanDecoder3d behind post_quant_conv; Wan 2.1, Wan 2.2 with
// residual up blocks, and Qwen-Image, whose decoder is Wan 2.1's): its architecture read from a
// resolved config, its ONNX graphs, each decoding one frame (blocks.ts says how a graph threads
// time), and its parameter list under the checkpoint's own keys (what building the graphs reads).
//
// A video frame goes through the decoder in segments cut after each temporal upsampler, one
// frame per call: a temporal upsampler turns one frame into two (after its sequence's first),
// and each of those continues alone through the next segment. So a call holds the activations
// of one frame at one resolution, never the 2^k frames a latent frame becomes at full size, and
// a tile's memory is its causal history (two frames per temporal conv) plus one frame's work.
// A segment graph takes `x` (1, C, H, W) plus, for a `next` frame, `past0:` / `past1:<conv key>`
// of each of its temporal convs; it returns `y` and, unless the step is `only`,
// `present:<conv key>`. An image (one latent frame) runs the segments' `only` graphs. Segments
// also keep each model under protobuf's 2 GiB (the published Wan 2.2 decoder has 2.2 GB of weights).
//
// Why separate graphs for a sequence's first frame rather than an input flag: that frame differs
// in structure, not in values — it never runs the time conv, keeps one frame where later ones
// make two, keeps one DupUp3D frame instead of two, and its causal convs need only the last
// temporal kernel slice (a third of the FLOPs). A flag could only express that with ONNX `If`
// subgraphs holding both versions.

import { GraphBuilder } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import { GAIN_AFTER_SILU, Module, recordParams, WeightTable, type ParamSource } from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';
import {
  causalConv,
  dupUp3d,
  frameDims,
  midBlock,
  pointwiseConv,
  residualBlock,
  rmsNorm,
  StepContext,
  upsampler,
  type Frames,
  type WanStep,
} from './blocks.js';

export const SEGMENT_INPUT = 'x';
export const SEGMENT_OUTPUT = 'y';

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

/** A piece of the decoder in execution order: its graph function, which declares the parameters it reads. */
interface DecoderPart {
  apply(root: Module, x: Frames, steps: StepContext): Frames;
  /** Channels and scale (× the latent's size) of its output. */
  out: { channels: number; scale: number };
  /** Ends in a temporal upsampler: after its sequence's first frame, one frame in makes two out. */
  doublesFrames: boolean;
}

/** WanDecoder3d behind post_quant_conv, as parts: post_quant_conv + conv_in + mid block, each up block, the head. */
function decoderParts(a: WanDecoderArchitecture): DecoderPart[] {
  const z = a.latentChannels;
  const parts: DecoderPart[] = [
    {
      apply(root, x, steps) {
        const decoder = root.child('decoder');
        x = { ...x, value: pointwiseConv(root.child('post_quant_conv'), x.value, z, z) };
        return midBlock(
          decoder.child('mid_block'),
          causalConv(decoder.child('conv_in'), x, z, a.midChannels, [3, 3, 3], steps),
          a.midChannels,
          steps,
        );
      },
      out: { channels: a.midChannels, scale: 1 },
      doublesFrames: false,
    },
  ];
  a.upBlocks.forEach((b, i) => {
    const temporal = b.upsample === 'spatio-temporal';
    parts.push({
      apply: (root, x, steps) => upBlock(root.child(upBlockKey(i)), x, b, a, steps),
      out: { channels: b.upsample === 'none' ? b.outChannels : b.resampleChannels, scale: 2 ** (i + (b.upsample === 'none' ? 0 : 1)) },
      doublesFrames: temporal,
    });
  });
  const last = a.upBlocks[a.upBlocks.length - 1]!.outChannels;
  parts.push({
    apply(root, x, steps) {
      const decoder = root.child('decoder');
      const normed = root.scope.silu(rmsNorm(decoder.child('norm_out'), x.value, last, 'video'));
      return causalConv(decoder.child('conv_out'), { ...x, value: normed }, last, a.convOutChannels, [3, 3, 3], steps, GAIN_AFTER_SILU);
    },
    out: { channels: a.convOutChannels, scale: 2 ** (a.upBlocks.length - 1) },
    doublesFrames: false,
  });
  return parts;
}

/** WanUpBlock (2.1) or WanResidualUpBlock (2.2): resnets, the upsampler, and for 2.2 the DupUp3D shortcut. */
function upBlock(m: Module, x: Frames, b: WanUpBlockArchitecture, a: WanDecoderArchitecture, steps: StepContext): Frames {
  const input = x;
  for (let j = 0; j < a.resnetsPerBlock; j++)
    x = residualBlock(m.child(`resnets.${j}`), x, j === 0 ? b.inChannels : b.outChannels, b.outChannels, steps);
  if (b.upsample === 'none') return x;
  const temporal = b.upsample === 'spatio-temporal';
  x = upsampler(m.child(upsamplerName(a)), x, b.outChannels, b.resampleChannels, temporal, steps);
  // DupUp3D owns no parameters, and its gather indices grow with the width: a listing skips it.
  if (!a.residual || m.weights.listing) return x;
  const shortcut = dupUp3d(m.scope, input, b.inChannels, b.outChannels, temporal, steps);
  return { ...x, value: m.scope.add(x.value, shortcut.value) };
}

/**
 * Every decoder parameter (post_quant_conv.* and decoder.*) with its checkpoint key, shape and
 * synthetic init: what the segment graphs of a sequence's first frame read (a `first` graph
 * declares the time convs it skips).
 */
export function wanDecoderParams(config: ResolvedConfig): ParamSpec[] {
  return recordParams((source) => {
    for (let segment = 0; segment < wanSegmentCount(config); segment++) wanSegmentGraph(config, source, segment, 'first');
  });
}

/**
 * The decoder cut after every temporal upsampler: each segment takes one frame, so every call
 * holds one frame's activations (two at most, in the upsampler that ends a segment).
 */
function segmentsOf(a: WanDecoderArchitecture): DecoderPart[][] {
  const segments: DecoderPart[][] = [[]];
  for (const part of decoderParts(a)) {
    segments[segments.length - 1]!.push(part);
    if (part.doublesFrames) segments.push([]);
  }
  return segments;
}

/** How many segment graphs a video frame goes through (1 + the number of temporal upsamplers). */
export function wanSegmentCount(config: ResolvedConfig): number {
  return segmentsOf(wanDecoderArchitecture(config)).length;
}

/**
 * The graph of one decoder segment for one frame, with the segment's bound weights as
 * initializers under their checkpoint keys. Input `x` (1, C, h·s, w·s); output `y` (frames, C',
 * h·s', w·s'): for the first segment `x` is a latent frame, for the last `y` is raw decoder output.
 */
export function buildWanGraph(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, segment: number, step: WanStep): GraphBuilder {
  // A segment reads only its own part of the decoder's weights.
  return wanSegmentGraph(config, new WeightTable(weights), segment, step);
}

function wanSegmentGraph(config: ResolvedConfig, source: ParamSource, segment: number, step: WanStep): GraphBuilder {
  const a = wanDecoderArchitecture(config);
  const segments = segmentsOf(a);
  const parts = segments[segment]!;
  const first = segments.flat().indexOf(parts[0]!);
  const input = first === 0 ? { channels: a.latentChannels, scale: 1 } : segments.flat()[first - 1]!.out;
  const name = `${config.className}.segment${segment}.${step}`;
  const g = new GraphBuilder(name, {
    docString: `${config.className} decoder segment ${segment} of ${segments.length} for the ${step} frame of a sequence, built by distvae`,
  });
  const root = new Module(g, source);
  const steps = new StepContext(g, step);
  let x: Frames = { value: g.input(SEGMENT_INPUT, frameDims(1, input.channels, input.scale)), count: 1, scale: input.scale };
  for (const part of parts) x = part.apply(root, x, steps);
  g.output(SEGMENT_OUTPUT, x.value, frameDims(x.count, parts[parts.length - 1]!.out.channels, x.scale));
  return g;
}
