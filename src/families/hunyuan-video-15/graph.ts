// diffusers' HunyuanVideo15Decoder3D as an ONNX graph built from an AutoencoderKLHunyuanVideo15
// config: a causal conv_in plus the latent repeated over channels, the mid block (resnet,
// single-head attention over frames × H × W with a frame-causal mask and 1×1×1-conv projections,
// resnet), up blocks of resnets and channel-packing upsamplers, RMS norm + SiLU, conv_out. Every
// norm is the class's per-voxel RMS norm (F.normalize over channels × √C × gamma: no statistics
// over positions), every 3×3×3 conv HunyuanVideo's causal conv (blocks3d.ts, the same in 1.0).
// One call decodes every frame it is given: 1 + 4(F − 1) output frames for F latent frames.
// Also the decoder's parameter list under the checkpoint's own keys (what building the graph reads).
//
// The norm, resnet and attention pieces are exported for the encoder (encoder-graph.ts).
//
// PyTorch's `repeat_interleave(r, dim=1)` (channel k reads channel ⌊k / r⌋) is a nearest Resize
// by r on the channel axis, as in hunyuan-image/graph.ts: exact (a copy).

import { attr } from '../../graph/attributes.js';
import { GraphBuilder, type Scope, type Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import {
  convWeights,
  GAIN_AFTER_SILU,
  GAIN_RESIDUAL_BRANCH_END,
  Module,
  recordParams,
  WeightTable,
  type ParamSource,
} from '../blocks/blocks.js';
import { conv3d, frameCausalMask, hunyuanCausalConv3d } from '../blocks/blocks3d.js';
import type { ResolvedConfig } from '../types.js';
import { hunyuanVideo15Fields, hunyuanVideo15Levels } from './spec.js';

/** F.normalize's default eps: the L2 norm is clamped from below before the division. */
const NORMALIZE_EPS = 1e-12;

/** Every decoder parameter (decoder.*) with its checkpoint key, shape and synthetic init: what the graph reads. */
export function hunyuanVideo15DecoderParams(config: ResolvedConfig): ParamSpec[] {
  return recordParams((source) => decoderGraph(config, source));
}

/**
 * The decoder graph: input `latent` (batch, Cz, frames, height, width), output `sample`
 * (batch, out_channels, 1 + rt·(frames − 1), height·r, width·r), raw (diffusers applies no clamp),
 * with the bound weights as initializers under their checkpoint keys.
 */
export function buildHunyuanVideo15DecoderGraph(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>): GraphBuilder {
  const table = new WeightTable(weights);
  const g = decoderGraph(config, table);
  table.assertAllTaken(config.className);
  return g;
}

/**
 * HunyuanVideo15RMS_norm (channel-first, no bias): x / max(‖x‖₂ over channels, 1e-12) · √C · gamma,
 * gamma at `<key>.gamma` [C, 1, 1, 1]. Per voxel: it reads no other position.
 */
export function rmsNorm(m: Module, x: Value, channels: number): Value {
  const sc = m.scope;
  const gamma = m.param('gamma', [channels, 1, 1, 1], 'norm-weight');
  const norm = sc.op('ReduceL2', [x, sc.int64Constant([1])], [attr.int('keepdims', 1)]);
  const normalized = sc.div(x, sc.op('Max', [norm, sc.scalar(NORMALIZE_EPS)]));
  return sc.mul(sc.mul(normalized, Math.sqrt(channels)), gamma);
}

/** x repeated `times` times along channels, each channel in place (PyTorch's `repeat_interleave(times, dim=1)`). */
function repeatChannels(sc: Scope, x: Value, times: number): Value {
  return times === 1 ? x : sc.resizeNearest(x, [1, times, 1, 1, 1]);
}

/**
 * HunyuanVideo15ResnetBlock: RMS norm, SiLU, causal conv, twice; the residual through a plain
 * 1×1×1 nn.Conv3d `conv_shortcut` when the width changes.
 */
export function resnet(m: Module, x: Value, cin: number, cout: number): Value {
  const sc = m.scope;
  let h = hunyuanCausalConv3d.apply(m.child('conv1'), sc.silu(rmsNorm(m.child('norm1'), x, cin)), cin, cout, 3, GAIN_AFTER_SILU);
  h = hunyuanCausalConv3d.apply(
    m.child('conv2'),
    sc.silu(rmsNorm(m.child('norm2'), h, cout)),
    cout,
    cout,
    3,
    GAIN_AFTER_SILU * GAIN_RESIDUAL_BRANCH_END,
  );
  return sc.add(cin === cout ? x : conv3d.apply(m.child('conv_shortcut'), x, cin, cout, 1), h);
}

/**
 * HunyuanVideo15AttnBlock: one head of width C over every voxel of the call, tokens in (frame,
 * row, column) order, a token attending to its own and earlier frames; RMS `norm`, 1×1×1 convs
 * `to_q`, `to_k`, `to_v`, `proj_out`, the residual added after. The attention core is the
 * builder's (a sync region: every query reads every earlier key).
 */
export function attention(m: Module, x: Value, c: number): Value {
  const sc = m.scope;
  const t = sc.reshape(rmsNorm(m.child('norm'), x, c), [0, c, -1]);
  const project = (name: string, input: Value, gain?: number): Value => {
    const [weight, bias] = convWeights(m.child(name), c, c, [1, 1, 1], gain);
    return sc.add(sc.matMul(sc.reshape(weight, [c, c]), input), sc.reshape(bias, [c, 1]));
  };
  const q = sc.transpose(sc.mul(project('to_q', t), 1 / Math.sqrt(c)), [0, 2, 1]);
  const out = project(
    'proj_out',
    sc.attention(q, project('to_k', t), project('to_v', t), frameCausalMask(sc, x)),
    GAIN_RESIDUAL_BRANCH_END,
  );
  return sc.add(sc.reshape(out, sc.shape(x)), x);
}

/**
 * The class's `_dcae_upsample_rearrange`: (B, r1·r2·r3·C, F, H, W) → (B, C, F·r1, H·r2, W·r3),
 * the channel axis read as (r1, r2, r3, C), C fastest: out[c, f·r1 + k, h·r2 + a, w·r3 + b] =
 * in[((k·r2 + a)·r3 + b)·C + c, f, h, w].
 */
function packedToSpace(sc: Scope, x: Value, channels: number, factors: readonly [number, number, number]): Value {
  const shape = sc.shape(x);
  const batch = sc.slice(shape, { starts: [0], ends: [1] });
  const fhw = sc.slice(shape, { starts: [2], ends: [5] });
  const grouped = sc.reshape(x, sc.concat([batch, sc.int64Constant([...factors, channels]), fhw], 0));
  const interleaved = sc.transpose(grouped, [0, 4, 5, 1, 6, 2, 7, 3]);
  return sc.reshape(interleaved, sc.concat([batch, sc.int64Constant([channels]), sc.mul(fhw, sc.int64Constant([...factors]))], 0));
}

/** Frames [start, end) of a (B, C, F, H, W) tensor. */
export const frames = (sc: Scope, x: Value, start: number, end = Number.MAX_SAFE_INTEGER): Value =>
  sc.slice(x, { starts: [start], ends: [end], axes: [2] });

/**
 * HunyuanVideo15Upsample (cin → cout): a causal conv to 4·cout channels (8·cout in time), plus the
 * input repeated to match, unpacked to 2× space (and 2× time). In time, frame 0 unpacks in space
 * only and keeps the first cout of its 2·cout channels, its shortcut repeated half as often;
 * later frames unpack to two frames each. The later frames are unpacked from the whole tensor and
 * the first two resulting frames dropped, so no tensor ever has zero frames (a 1-frame call).
 */
function upsample(m: Module, x: Value, cin: number, cout: number, temporal: boolean): Value {
  const sc = m.scope;
  const h = hunyuanCausalConv3d.apply(m.child('conv'), x, cin, (temporal ? 8 : 4) * cout, 3);
  if (!temporal) return packedToSpace(sc, sc.add(h, repeatChannels(sc, x, (4 * cout) / cin)), cout, [1, 2, 2]);
  const firstH = sc.slice(packedToSpace(sc, frames(sc, h, 0, 1), 2 * cout, [1, 2, 2]), { starts: [0], ends: [cout], axes: [1] });
  const firstX = repeatChannels(sc, packedToSpace(sc, frames(sc, x, 0, 1), cin / 4, [1, 2, 2]), (4 * cout) / cin);
  const next = sc.add(
    packedToSpace(sc, h, cout, [2, 2, 2]),
    repeatChannels(sc, packedToSpace(sc, x, cin / 8, [2, 2, 2]), (8 * cout) / cin),
  );
  return sc.concat([sc.add(firstH, firstX), frames(sc, next, 2)], 2);
}

function decoderGraph(config: ResolvedConfig, source: ParamSource): GraphBuilder {
  const f = hunyuanVideo15Fields(config.fields);
  const levels = hunyuanVideo15Levels(f);
  const g = new GraphBuilder(config.className, { docString: `${config.className} decoder built by distvae` });
  const decoder = new Module(g, source).child('decoder');
  const z = config.geometry.latentChannels;
  const top = levels[0]!.cin;
  const latent = g.input('latent', ['batch', z, 'frames', 'height', 'width']);
  let x = g.add(hunyuanCausalConv3d.apply(decoder.child('conv_in'), latent, z, top, 3), repeatChannels(decoder.scope, latent, top / z));
  const mid = decoder.child('mid_block');
  x = resnet(mid.child('resnets.0'), x, top, top);
  x = attention(mid.child('attentions.0'), x, top);
  x = resnet(mid.child('resnets.1'), x, top, top);
  for (const [i, level] of levels.entries()) {
    const block = decoder.child(`up_blocks.${i}`);
    for (let j = 0; j <= f.layersPerBlock; j++) x = resnet(block.child(`resnets.${j}`), x, j === 0 ? level.cin : level.cout, level.cout);
    if (level.upsample) x = upsample(block.child('upsamplers.0'), x, level.cout, level.upsample.to!, level.upsample.temporal);
  }
  const last = levels[levels.length - 1]!.cout;
  const out = config.geometry.outChannels;
  x = decoder.scope.silu(rmsNorm(decoder.child('norm_out'), x, last));
  x = hunyuanCausalConv3d.apply(decoder.child('conv_out'), x, last, out, 3, GAIN_AFTER_SILU);
  g.output('sample', x, ['batch', out, 'out_frames', 'out_height', 'out_width']);
  return g;
}
