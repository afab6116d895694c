// The diffusers `LTX2VideoDecoder3d` (AutoencoderKLLTX2Video's decoder) as an ONNX graph built
// from the config: causal or non-causal 3-D convolutions (edge frames repeated in time,
// reflect or zero padding in space), per-voxel RMS norms, resnets with an optional LayerNorm +
// 1×1×1 shortcut, depth-to-space up-samplers with an optional residual branch, timestep
// conditioning when the config asks for it, and the final unpatchify. One call decodes every
// frame it is given, as a chain of stage graphs (one per block) so that no model nears
// protobuf's 2 GiB limit. Also the parameter list under diffusers' keys (what building the
// stages reads).

import { reason, type Reason, refuse } from '../../errors.js';
import { GraphBuilder, type Scope, type Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import {
  GAIN_AFTER_SILU,
  GAIN_RESIDUAL_BRANCH_END,
  linearWeights,
  Module,
  normWeights,
  recordParams,
  WeightTable,
  type ConvFlavour,
  type ParamSource,
} from '../blocks/blocks.js';
import { channelsToSpace3d, conv3d, dropLeadingFrames, ltx2Conv3d, type Factors3, type SpatialPadding } from '../blocks/blocks3d.js';
import type { ResolvedConfig } from '../types.js';

/** PerChannelRMSNorm's epsilon (hard-coded in diffusers). */
const RMS_EPSILON = 1e-8;
/** Width of the sinusoidal timestep projection (diffusers' `Timesteps(256, flip_sin_to_cos=True)`). */
const TIMESTEP_PROJECTION = 256;

const UPSAMPLE_STRIDES: Readonly<Record<string, Factors3>> = { spatial: [1, 2, 2], temporal: [2, 1, 1], spatiotemporal: [2, 2, 2] };

export interface Ltx2Upsampler {
  stride: Factors3;
  residual: boolean;
  /** upsample_factor: the conv makes out·prod(stride) channels from out·factor. */
  factor: number;
}

export interface Ltx2UpBlock {
  /** Channels entering (in_i) and leaving (out_i) the block; a `conv_in` resnet maps one to the other when they differ. */
  cin: number;
  cout: number;
  upsampler: Ltx2Upsampler | null;
  resnets: number;
}

/** The decoder's architecture, read from a resolved AutoencoderKLLTX2Video config. */
export interface Ltx2Architecture {
  latentChannels: number;
  /** Channels of the first conv and the mid block (the widest decoder width). */
  top: number;
  midResnets: number;
  upBlocks: Ltx2UpBlock[];
  /** Channels before unpatchify: out_channels · patch_size² · patch_size_t. */
  convOutChannels: number;
  outChannels: number;
  patchSize: number;
  patchSizeT: number;
  causal: boolean;
  spatialPadding: SpatialPadding;
  timestepConditioning: boolean;
  /** resnet_norm_eps: the LayerNorm of channel-changing resnets. */
  layerNormEpsilon: number;
}

/**
 * Reads the decoder from the config as diffusers builds it (widths, layers, scaling, residual
 * and factor lists reversed; `upsample_type` not), and refuses what the graph cannot reproduce
 * or diffusers cannot run: injected noise (torch.randn, not reproducible), channel counts that
 * do not chain, and conditioned blocks with a `conv_in` resnet (diffusers crashes there).
 */
export function ltx2Architecture(config: ResolvedConfig): Ltx2Architecture {
  const f = config.fields;
  const widths = [...(f['decoder_block_out_channels'] as number[])].reverse();
  const layers = [...(f['decoder_layers_per_block'] as number[])].reverse();
  const scaling = [...(f['decoder_spatio_temporal_scaling'] as boolean[])].reverse();
  const residual = [...(f['upsample_residual'] as boolean[])].reverse();
  const factors = [...(f['upsample_factor'] as number[])].reverse();
  const types = f['upsample_type'] as string[];
  const noise = f['decoder_inject_noise'] as boolean[];
  const conditioned = f['timestep_conditioning'] as boolean;
  const reasons: Reason[] = [];
  const unsupported = (field: string, value: unknown, valid: string, message: string) =>
    reasons.push(reason('DECODER_UNSUPPORTED', field, value, valid, message));
  if (noise.some(Boolean)) {
    unsupported(
      'decoder_inject_noise',
      noise,
      'all false',
      'decoder_inject_noise adds torch.randn noise inside the decoder, which cannot be reproduced outside torch',
    );
  }
  let channels = widths[0]!;
  const upBlocks = widths.map((width, i): Ltx2UpBlock => {
    const cin = Math.floor(channels / factors[i]!);
    const cout = Math.floor(width / factors[i]!);
    const block = `up block ${i} (decoder_block_out_channels reversed)`;
    if (cin !== cout) {
      if (channels !== cin)
        unsupported(
          `decoder_block_out_channels[${widths.length - 1 - i}]`,
          width,
          `channels that chain into ${block}`,
          `${block} receives ${channels} channels but its conv_in resnet expects ${cin}`,
        );
      if (conditioned)
        unsupported(
          'timestep_conditioning',
          true,
          'false when a block changes width',
          `${block} changes width (${cin} → ${cout}) with timestep conditioning, which diffusers cannot run`,
        );
      channels = cout;
    }
    let upsampler: Ltx2Upsampler | null = null;
    if (scaling[i]) {
      const type = types[i] ?? '';
      const stride = UPSAMPLE_STRIDES[type];
      if (!stride) {
        unsupported(
          `upsample_type[${i}]`,
          type,
          'spatial, temporal or spatiotemporal',
          `upsample_type[${i}] = ${JSON.stringify(type)} is unknown`,
        );
      } else {
        const product = stride[0] * stride[1] * stride[2];
        const inChannels = cout * factors[i]!;
        if (channels !== inChannels || inChannels % product !== 0) {
          unsupported(
            `upsample_factor[${widths.length - 1 - i}]`,
            factors[i],
            `a factor for which ${block}'s up-sampler takes ${channels} channels divisible by ${product}`,
            `${block}'s up-sampler expects ${inChannels} channels (a multiple of ${product}) and receives ${channels}`,
          );
        }
        upsampler = { stride, residual: residual[i]!, factor: factors[i]! };
      }
      channels = cout;
    }
    if (channels !== cout)
      unsupported(
        `decoder_block_out_channels[${widths.length - 1 - i}]`,
        width,
        `channels that chain into ${block}`,
        `${block}'s resnets run at ${cout} channels but receive ${channels}`,
      );
    channels = cout;
    return { cin, cout, upsampler, resnets: layers[i + 1]! };
  });
  if (reasons.length > 0) refuse('CONFIG_INVALID', reasons, { prefix: `ltx2 decoder cannot be built` });
  const patchSize = f['patch_size'] as number;
  const patchSizeT = f['patch_size_t'] as number;
  return {
    latentChannels: config.geometry.latentChannels,
    top: widths[0]!,
    midResnets: layers[0]!,
    upBlocks,
    convOutChannels: config.geometry.outChannels * patchSize * patchSize * patchSizeT,
    outChannels: config.geometry.outChannels,
    patchSize,
    patchSizeT,
    causal: f['decoder_causal'] as boolean,
    spatialPadding: f['decoder_spatial_padding_mode'] as SpatialPadding,
    timestepConditioning: conditioned,
    layerNormEpsilon: f['resnet_norm_eps'] as number,
  };
}

function convFlavour(a: Ltx2Architecture): ConvFlavour {
  return ltx2Conv3d({ causal: a.causal, spatialPadding: a.spatialPadding });
}

/** Every decoder parameter (decoder.*) with its checkpoint key, shape and synthetic init: what building the stages reads. */
export function ltx2DecoderParams(config: ResolvedConfig): ParamSpec[] {
  return recordParams((source) => ltx2DecoderStages(config, source));
}

// ---- graph -----------------------------------------------------------------------------------

/** PerChannelRMSNorm: x / sqrt(mean over channels of x² + 1e-8), per voxel, no affine. */
export function rmsNorm(scope: Scope, x: Value): Value {
  return scope.div(x, scope.sqrt(scope.add(scope.reduceMean(scope.mul(x, x), [1]), RMS_EPSILON)));
}

/**
 * diffusers' `get_timestep_embedding(t, 256, flip_sin_to_cos=True, downscale_freq_shift=0)`
 * then TimestepEmbedding (linear_1, SiLU, linear_2: `…timestep_embedder.linear_{1,2}` of a
 * PixArtAlphaCombinedTimestepSizeEmbeddings(dim, 0)): t (B) → (B, dim). The frequencies are
 * computed in float32 as torch does (exponent −ln(10000)·k, divided by 128, then exp).
 */
function timeEmbedding(m: Module, t: Value, dim: number): Value {
  const sc = m.scope;
  const half = TIMESTEP_PROJECTION / 2;
  const lnPeriod = Math.fround(-Math.log(10000));
  const frequencies = Float32Array.from({ length: half }, (_, k) => Math.exp(Math.fround(Math.fround(lnPeriod * k) / half)));
  const angles = sc.mul(sc.unsqueeze(t, [1]), sc.constant({ dims: [half], data: frequencies }));
  const projection = sc.concat([sc.op('Cos', [angles]), sc.op('Sin', [angles])], 1);
  const linear = (name: string, x: Value, inFeatures: number, gain?: number): Value => {
    const [weight, bias] = linearWeights(m.child(`timestep_embedder.${name}`), inFeatures, dim, gain);
    return sc.gemm(x, weight, bias, { transB: true });
  };
  return linear('linear_2', sc.silu(linear('linear_1', projection, TIMESTEP_PROJECTION)), dim, GAIN_AFTER_SILU);
}

/**
 * The rows of `table` (k, C) plus the embedding (B, k·C), each as a (B, C, 1, 1, 1) tensor that
 * broadcasts over a video — diffusers' `temb.unflatten(1, (k, -1)) + scale_shift_table`.
 */
function modulation(m: Module, embedding: Value, rows: number, c: number): Value[] {
  const sc = m.scope;
  const table = sc.reshape(m.param('scale_shift_table', [rows, c], 'bias'), [1, rows, c, 1, 1, 1]);
  const sum = sc.add(sc.reshape(embedding, [0, rows, c, 1, 1, 1]), table);
  return sc.split(sum, new Array<number>(rows).fill(1), 1).map((row) => sc.reshape(row, [0, c, 1, 1, 1]));
}

/** x·(1 + scale) + shift. */
function modulate(scope: Scope, x: Value, shift: Value, scale: Value): Value {
  return scope.add(scope.mul(x, scope.add(scale, 1)), shift);
}

/**
 * LTX2VideoResnetBlock3d (cin → cout): conv1, conv2, and when the width changes a LayerNorm
 * `norm3` + 1×1×1 `conv_shortcut`; `embedding` (B, 4·C) and the `scale_shift_table` [4, cin]
 * when the decoder is timestep-conditioned.
 */
export function resnet(
  m: Module,
  x: Value,
  cin: number,
  cout: number,
  conv: ConvFlavour,
  embedding: Value | null,
  layerNormEpsilon: number,
): Value {
  const sc = m.scope;
  const [shift1, scale1, shift2, scale2] = embedding ? modulation(m, embedding, 4, cin) : [];
  let h = rmsNorm(sc, x);
  if (embedding) h = modulate(sc, h, shift1!, scale1!);
  h = conv.apply(m.child('conv1'), sc.silu(h), cin, cout, 3, GAIN_AFTER_SILU);
  h = rmsNorm(sc, h);
  if (embedding) h = modulate(sc, h, shift2!, scale2!);
  h = conv.apply(m.child('conv2'), sc.silu(h), cout, cout, 3, GAIN_AFTER_SILU * GAIN_RESIDUAL_BRANCH_END);
  let shortcut = x;
  if (cin !== cout) {
    const norm = m.child('norm3');
    const channelsLast = sc.transpose(x, [0, 2, 3, 4, 1]);
    const [weight, bias] = normWeights(norm, cin);
    const normed = sc.layerNorm(channelsLast, weight, bias, { epsilon: layerNormEpsilon });
    shortcut = conv3d.apply(m.child('conv_shortcut'), sc.transpose(normed, [0, 4, 1, 2, 3]), cin, cout, 1);
  }
  return sc.add(h, shortcut);
}

/**
 * LTX2VideoUpsampler3d: conv to out·prod(stride) channels, depth-to-space, drop the first
 * st − 1 frames; with `residual`, plus the input's own depth-to-space with its channels tiled
 * prod(stride)/factor times (torch.repeat: channel m reads channel m mod C).
 */
function upsampler(m: Module, x: Value, cout: number, up: Ltx2Upsampler, conv: ConvFlavour): Value {
  const sc = m.scope;
  const product = up.stride[0] * up.stride[1] * up.stride[2];
  const skip = up.stride[0] - 1;
  const convolved = conv.apply(m.child('conv'), x, cout * up.factor, cout * product, 3);
  const y = dropLeadingFrames(sc, channelsToSpace3d(sc, convolved, cout, up.stride, false), skip);
  if (!up.residual) return y;
  const spread = channelsToSpace3d(sc, x, (cout * up.factor) / product, up.stride, false);
  const tiled = sc.op('Tile', [spread, sc.int64Constant([1, product / up.factor, 1, 1, 1])]);
  return sc.add(y, dropLeadingFrames(sc, tiled, skip));
}

/** Values a stage hands to later ones: the activation after a block and, when conditioned, the time embeddings. */
const activationAfter = (block: string) => `after.${block}`;
const embeddingName = (block: string) => `embedding.${block}`;

/**
 * The decoder as a chain of graphs (run by runtime/staged-session): stage 0 takes `latent`
 * (batch, Cz, frames, height, width) and, for a timestep-conditioned decoder, `timestep`
 * (batch); it runs conv_in and the mid block and computes every block's time embedding. Then one
 * stage per up block; the last also runs the output norm, conv_out and unpatchify, and outputs
 * `sample` (batch, out_channels, frames·…, height·r, width·r), raw (no clamp). Staging keeps each
 * model well under protobuf's 2 GiB (the published decoder has 2.1 GB of float32 weights).
 */
export function buildLtx2DecoderStages(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>): GraphBuilder[] {
  const table = new WeightTable(weights);
  const stages = ltx2DecoderStages(config, table);
  table.assertAllTaken(config.className);
  return stages;
}

function ltx2DecoderStages(config: ResolvedConfig, source: ParamSource): GraphBuilder[] {
  const a = ltx2Architecture(config);
  const conv = convFlavour(a);
  const stages: GraphBuilder[] = [];
  const stage = (part: string): { g: GraphBuilder; decoder: Module } => {
    const g = new GraphBuilder(`${config.className} ${part}`, { docString: `${config.className} decoder (${part}) built by distvae` });
    stages.push(g);
    return { g, decoder: new Module(g, source).child('decoder') };
  };
  const video = (channels: number) => ['batch', channels, 'frames', 'height', 'width'];

  const last = a.upBlocks[a.upBlocks.length - 1]?.cout ?? a.top;
  const first = stage('conv_in, mid_block');
  let g = first.g;
  let x: Value = g.input('latent', video(a.latentChannels));
  let midEmbedding: Value | null = null;
  if (a.timestepConditioning) {
    const t = g.mul(g.input('timestep', ['batch']), first.decoder.param('timestep_scale_multiplier', [], 'norm-weight'));
    midEmbedding = timeEmbedding(first.decoder.child('mid_block').child('time_embedder'), t, 4 * a.top);
    a.upBlocks.forEach((block, i) =>
      g.output(
        embeddingName(`up_blocks.${i}`),
        timeEmbedding(first.decoder.child(`up_blocks.${i}`).child('time_embedder'), t, 4 * block.cin),
        ['batch', 4 * block.cin],
      ),
    );
    g.output(embeddingName('out'), timeEmbedding(first.decoder.child('time_embedder'), t, 2 * last), ['batch', 2 * last]);
  }
  x = conv.apply(first.decoder.child('conv_in'), x, a.latentChannels, a.top, 3);
  const mid = first.decoder.child('mid_block');
  for (let j = 0; j < a.midResnets; j++) x = resnet(mid.child(`resnets.${j}`), x, a.top, a.top, conv, midEmbedding, a.layerNormEpsilon);

  let decoder = first.decoder;
  let channels = a.top;
  let previous = 'mid_block';
  a.upBlocks.forEach((block, i) => {
    g.output(activationAfter(previous), x, video(channels));
    ({ g, decoder } = stage(`up_blocks.${i}`));
    x = g.input(activationAfter(previous), video(channels));
    previous = `up_blocks.${i}`;
    const up = decoder.child(`up_blocks.${i}`);
    if (block.cin !== block.cout) x = resnet(up.child('conv_in'), x, block.cin, block.cout, conv, null, a.layerNormEpsilon);
    const embedding = a.timestepConditioning ? g.input(embeddingName(`up_blocks.${i}`), ['batch', 4 * block.cin]) : null;
    if (block.upsampler) x = upsampler(up.child('upsamplers.0'), x, block.cout, block.upsampler, conv);
    for (let j = 0; j < block.resnets; j++)
      x = resnet(up.child(`resnets.${j}`), x, block.cout, block.cout, conv, embedding, a.layerNormEpsilon);
    channels = block.cout;
  });

  x = rmsNorm(g, x);
  if (a.timestepConditioning) {
    const [shift, scale] = modulation(decoder, g.input(embeddingName('out'), ['batch', 2 * channels]), 2, channels);
    x = modulate(g, x, shift!, scale!);
  }
  x = conv.apply(decoder.child('conv_out'), g.silu(x), channels, a.convOutChannels, 3, GAIN_AFTER_SILU);
  x = channelsToSpace3d(g, x, a.outChannels, [a.patchSizeT, a.patchSize, a.patchSize], true);
  g.output('sample', x, ['batch', a.outChannels, 'out_frames', 'out_height', 'out_width']);
  return stages;
}
