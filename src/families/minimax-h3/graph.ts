// diffusers' MiniMaxH3VideoViTDecoder3d (after post_quant_conv) as an ONNX graph for one clip shape:
// post_quant_conv (1×1×1), every latent voxel a token (proj_in), the register tokens and one
// all-zero token appended, `layers` pre-norm transformer blocks (RMSNorm; multi-head attention
// with RMS-normalised q and k and a 3-axis rotary embedding over the leading `ropeDim` channels
// of every head; SwiGLU feed-forward; both branches scaled per channel), LayerNorm, proj_out,
// the appended tokens dropped, and every token expanded into an rt × r × r pixel block. Also the
// decoder's parameter list under the checkpoint's own keys (what building the graph reads).
//
// The graph is built for one clip shape (batch 1, T latent frames, h × w): the rotary angles
// depend on every axis's length (positions are normalised to [−1, 1) per axis), so they are
// constants of the shape, computed here in float64 from diffusers' formula. Tiles of one plan
// share one shape, so a runner builds one or two graphs.

import { GraphBuilder, type Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import { GAIN_RESIDUAL_BRANCH_END, linearWeights, Module, recordParams, WeightTable, type ParamSource } from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';
import { miniMaxFields } from './spec.js';

/** A clip's latent shape: frames × height × width (batch 1). */
export interface ClipShape {
  frames: number;
  height: number;
  width: number;
}

/** Every decoder parameter (post_quant_conv.*, decoder.*) with its checkpoint key, shape and synthetic init. */
export function miniMaxDecoderParams(config: ResolvedConfig): ParamSpec[] {
  return recordParams((source) => decoderGraph(config, source, { frames: 1, height: 1, width: 1 }));
}

/**
 * The decoder graph of one clip shape: input `latent` (1, C, T, h, w), output `sample`
 * (1, out_channels, T·rt, h·r, w·r), raw (ImageNet-normalised space, as diffusers returns it).
 */
export function buildMiniMaxDecoderGraph(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>, clip: ClipShape): GraphBuilder {
  const table = new WeightTable(weights);
  const g = decoderGraph(config, table, clip);
  table.assertAllTaken(config.className);
  return g;
}

/**
 * cos and sin of the rotary angles of every token (the voxels in (t, y, x) order, then the
 * register and zero tokens at position 0), [tokens, 1, ropeDim]: for axis a with length n, the
 * position is 2·(i + 0.5)/n − 1, the angle 2π·position·θ^(−6f/ropeDim) for f < ropeDim/6, laid out
 * axis-major and then repeated once (diffusers' `flatten(2, 3).tile(2)`).
 */
export function rotaryTables(ropeDim: number, theta: number, clip: ClipShape, suffix: number): { cos: Tensor; sin: Tensor } {
  const perAxis = ropeDim / 6;
  const inv = Array.from({ length: perAxis }, (_, f) => 1 / theta ** ((6 * f) / ropeDim));
  const voxels = clip.frames * clip.height * clip.width;
  const tokens = voxels + suffix;
  const cos = new Float32Array(tokens * ropeDim).fill(1);
  const sin = new Float32Array(tokens * ropeDim);
  const lengths = [clip.frames, clip.height, clip.width];
  for (let n = 0; n < voxels; n++) {
    const index = [Math.floor(n / (clip.height * clip.width)), Math.floor(n / clip.width) % clip.height, n % clip.width];
    for (let a = 0; a < 3; a++) {
      const position = (2 * (index[a]! + 0.5)) / lengths[a]! - 1;
      for (let f = 0; f < perAxis; f++) {
        const angle = 2 * Math.PI * position * inv[f]!;
        for (const half of [0, ropeDim / 2]) {
          cos[n * ropeDim + half + a * perAxis + f] = Math.cos(angle);
          sin[n * ropeDim + half + a * perAxis + f] = Math.sin(angle);
        }
      }
    }
  }
  return { cos: { dims: [tokens, 1, ropeDim], data: cos }, sin: { dims: [tokens, 1, ropeDim], data: sin } };
}

/** nn.Linear over the last axis: x · Wᵀ + b (`weight` [out, in], `bias` [out]). */
function linear(m: Module, x: Value, inFeatures: number, outFeatures: number, gain = 1): Value {
  const [weight, bias] = linearWeights(m, inFeatures, outFeatures, gain);
  return m.scope.add(m.scope.matMul(x, m.scope.transpose(weight, [1, 0])), bias);
}

/** RMS normalisation over the last axis, x / √(mean(x²) + ε), times `weight` when given (nn.RMSNorm). */
function rmsNorm(m: Module, x: Value, eps: number, weight?: Value): Value {
  const sc = m.scope;
  const rms = sc.sqrt(sc.add(sc.reduceMean(sc.mul(x, x), [-1]), eps));
  const normed = sc.div(x, rms);
  return weight ? sc.mul(normed, weight) : normed;
}

/** Rotates the leading `ropeDim` channels of x (…, tokens, heads, headDim) by half: cat(x₁·cos − x₂·sin, x₂·cos + x₁·sin, rest). */
function rotate(m: Module, x: Value, cos: Value, sin: Value, ropeDim: number, headDim: number): Value {
  const sc = m.scope;
  const half = ropeDim / 2;
  const parts = headDim > ropeDim ? [half, half, headDim - ropeDim] : [half, half];
  const [first, second, rest] = sc.split(x, parts, -1) as [Value, Value, Value | undefined];
  const rotated = sc.concat([sc.sub(sc.scalar(0), second), first], -1);
  const turned = sc.add(sc.mul(sc.concat([first, second], -1), cos), sc.mul(rotated, sin));
  return rest ? sc.concat([turned, rest], -1) : turned;
}

function decoderGraph(config: ResolvedConfig, source: ParamSource, clip: ClipShape): GraphBuilder {
  const f = miniMaxFields(config.fields);
  const { dim, heads, headDim } = f;
  const g = new GraphBuilder(config.className, { docString: `${config.className} decoder built by distvae` });
  const root = new Module(g, source);
  const decoder = root.child('decoder');
  const c = f.latentChannels;
  const voxels = clip.frames * clip.height * clip.width;
  const tokens = voxels + f.registers + 1;
  const latent = g.input('latent', [1, c, clip.frames, clip.height, clip.width]);

  const pq = root.child('post_quant_conv');
  const z = g.conv(latent, pq.param('weight', [c, c, 1, 1, 1], 'conv'), pq.param('bias', [c], 'bias'), { pads: 0 });
  let x = g.reshape(g.transpose(z, [0, 2, 3, 4, 1]), [1, voxels, c]);
  x = linear(decoder.child('proj_in'), x, c, dim);
  const registers = decoder.param('register_tokens', [1, f.registers, dim], 'bias');
  const zero = g.constant({ dims: [1, 1, dim], data: new Float32Array(dim) });
  x = g.concat(f.registers > 0 ? [x, registers, zero] : [x, zero], 1);

  const tables = source.listing
    ? { cos: { dims: [tokens, 1, f.ropeDim], data: new Float32Array(0) }, sin: { dims: [tokens, 1, f.ropeDim], data: new Float32Array(0) } }
    : rotaryTables(f.ropeDim, f.ropeTheta, clip, f.registers + 1);
  const cos = source.listing ? undefined : g.constant(tables.cos);
  const sin = source.listing ? undefined : g.constant(tables.sin);

  const blocks = decoder.child('transformer_blocks');
  for (let i = 0; i < f.layers; i++) {
    const b = blocks.child(`${i}`);
    const attn = b.child('attn');
    // Attention branch: RMSNorm, q/k/v, per-head RMSNorm of q and k, rotary, softmax(q·kᵀ/√d)·v, to_out.
    let h = rmsNorm(b, x, f.eps, b.child('norm1').param('weight', [dim], 'norm-weight'));
    const split = (v: Value) => g.reshape(v, [1, tokens, heads, headDim]);
    let q = rmsNorm(attn, split(linear(attn.child('to_q'), h, dim, dim)), f.eps);
    let k = rmsNorm(attn, split(linear(attn.child('to_k'), h, dim, dim)), f.eps);
    const v = split(linear(attn.child('to_v'), h, dim, dim));
    if (cos && sin) {
      q = rotate(attn, q, cos, sin, f.ropeDim, headDim);
      k = rotate(attn, k, cos, sin, f.ropeDim, headDim);
    }
    const qh = g.transpose(g.mul(q, 1 / Math.sqrt(headDim)), [0, 2, 1, 3]);
    const kt = g.transpose(k, [0, 2, 3, 1]);
    const vh = g.transpose(v, [0, 2, 1, 3]);
    const attended = g.matMul(g.softmax(g.matMul(qh, kt), -1), vh);
    h = g.reshape(g.transpose(attended, [0, 2, 1, 3]), [1, tokens, dim]);
    h = linear(attn.child('to_out.0'), h, dim, dim, GAIN_RESIDUAL_BRANCH_END);
    x = g.add(x, g.mul(h, b.param('scale1', [dim], 'norm-weight')));
    // Feed-forward branch: RMSNorm, SwiGLU (proj → value, gate; value · silu(gate)), Linear.
    h = rmsNorm(b, x, f.eps, b.child('norm2').param('weight', [dim], 'norm-weight'));
    const inner = dim * f.ffnMult;
    const [value, gate] = g.split(linear(b.child('ff.net.0.proj'), h, dim, 2 * inner), [inner, inner], -1) as [Value, Value];
    h = linear(b.child('ff.net.2'), g.mul(value, g.silu(gate)), inner, dim, GAIN_RESIDUAL_BRANCH_END);
    x = g.add(x, g.mul(h, b.param('scale2', [dim], 'norm-weight')));
  }

  const norm = decoder.child('norm_out');
  x = g.layerNorm(x, norm.param('weight', [dim], 'norm-weight'), norm.param('bias', [dim], 'norm-bias'), { epsilon: f.eps });
  const [rt, r, out] = [f.temporalRatio, f.spatialRatio, f.outChannels];
  x = linear(decoder.child('proj_out'), x, dim, out * rt * r * r);
  x = g.slice(x, { starts: [0], ends: [voxels], axes: [1] });
  x = g.reshape(x, [1, clip.frames, clip.height, clip.width, out, rt, r, r]);
  x = g.transpose(x, [0, 4, 1, 5, 2, 6, 3, 7]);
  x = g.reshape(x, [1, out, clip.frames * rt, clip.height * r, clip.width * r]);
  g.output('sample', x, [1, out, clip.frames * rt, clip.height * r, clip.width * r]);
  return g;
}
