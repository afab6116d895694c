// diffusers' AutoencoderDC decoder as an ONNX graph built from its config: conv_in plus the
// latent repeated over channels, then per level (top first) a 2× DCUpBlock2d and ResBlocks or
// EfficientViT blocks (SANA's multi-scale ReLU linear attention, then a GLU MBConv), an RMS
// norm over channels, ReLU and conv_out. Also the decoder's parameter list under the
// checkpoint's own keys (what building the graph reads).
//
// Every norm is an RMSNorm over the channels of one pixel (no statistics over positions), so the
// only nonlocal op is the attention core, recorded as a sync region (Scope.linearAttention): row
// sharding gathers its keys and values; everything else is convolutions with finite halos.
// PyTorch's channel `repeat_interleave` is a nearest Resize on the channel axis (a copy), its
// `pixel_shuffle` DepthToSpace in CRD order, and `F.interpolate(nearest, 2×)` a nearest Resize.

import { GraphBuilder, type Value } from '../../graph/builder.js';
import type { FileBytes } from '../../bytes/file-bytes.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import {
  conv2d,
  convWeights,
  GAIN_AFTER_SILU,
  Module,
  normWeights,
  recordParams,
  WeightTable,
  type ParamSource,
} from '../blocks/blocks.js';
import type { ResolvedConfig } from '../types.js';
import { dcaeFields, type DcaeActivation, type DcaeLevel } from './spec.js';

/** diffusers' epsilon of every RMSNorm of the decoder (get_normalization's default, GLUMBConv's, norm_out's). */
const RMS_EPSILON = 1e-5;

/** SanaMultiscaleLinearAttention's `eps` (added to the key-sum denominator). */
const ATTENTION_EPSILON = 1e-15;

/** GLUMBConv's expand ratio in EfficientViTBlock. */
const GLU_EXPAND = 4;

/** Every decoder parameter (decoder.*) with its checkpoint key, shape and synthetic init: what the graph reads. */
export function dcaeDecoderParams(config: ResolvedConfig): ParamSpec[] {
  return recordParams((source) => decoderGraph(config, source));
}

/**
 * The decoder graph: input `latent` (batch, latent_channels, height, width), output `sample`
 * (batch, in_channels, height·r, width·r), raw (diffusers applies no clamp), with the bound
 * weights as initializers under their checkpoint keys.
 */
export function buildDcaeDecoderGraph(config: ResolvedConfig, weights: ReadonlyMap<string, Tensor>): GraphBuilder {
  const table = new WeightTable(weights);
  const g = decoderGraph(config, table);
  table.assertAllTaken(config.className);
  return g;
}

function activation(m: Module, x: Value, act: DcaeActivation): Value {
  return act === 'relu' ? m.scope.relu(x) : m.scope.silu(x);
}

/** RMSNorm over the channels of each pixel, affine with bias: x / √(mean(x²) + ε) · weight + bias. */
function rmsNorm(m: Module, x: Value, c: number): Value {
  const sc = m.scope;
  const [weight, bias] = normWeights(m, c);
  const normed = sc.div(x, sc.sqrt(sc.add(sc.reduceMean(sc.mul(x, x), [1]), RMS_EPSILON)));
  return sc.add(sc.mul(normed, sc.reshape(weight, [c, 1, 1])), sc.reshape(bias, [c, 1, 1]));
}

/** A convolution without bias (weight [cout, cin/group, k, k]), padded to keep the size. */
function convNoBias(m: Module, x: Value, cin: number, cout: number, kernel: number, group = 1, gain = 1): Value {
  const weight = m.param('weight', [cout, cin / group, kernel, kernel], 'conv', gain);
  return m.scope.conv(x, weight, undefined, { pads: Math.floor(kernel / 2), group });
}

/**
 * A Linear without bias (checkpoint weight [cout, cin]) applied to the channels of each pixel, as
 * a 1×1 conv whose kernel is the same initializer viewed as [cout, cin, 1, 1] (its bytes — in the
 * checkpoint file, when bound from one — are not copied): an initializer kernel is what the
 * locality analysis reads a conv's reach from.
 */
function linearConv(m: Module, x: Value, cin: number, cout: number): Value {
  const t: Tensor & { readonly file?: FileBytes } = m.weights.take(m.spec('weight', [cout, cin], 'linear'));
  const dims = [cout, cin, 1, 1];
  const kernel = t.file
    ? {
        dims,
        file: t.file,
        get data() {
          return t.data;
        },
      }
    : { dims, data: t.data };
  return m.scope.conv(x, m.scope.param('weight', kernel), undefined);
}

/** x repeated `times` times along channels, each channel in place (PyTorch's `repeat_interleave(times, dim=1)`). */
function repeatChannels(m: Module, x: Value, times: number): Value {
  return times === 1 ? x : m.scope.resizeNearest(x, [1, times, 1, 1]);
}

/**
 * DCUpBlock2d (cin → cout, 2×, with its shortcut): nearest 2× then a 3×3 conv (`interpolate`), or
 * a 3×3 conv to 4·cout then pixel_shuffle; plus the input repeated 4·cout / cin times over
 * channels and pixel-shuffled.
 */
function upBlock(m: Module, x: Value, cin: number, cout: number, interpolate: boolean): Value {
  const sc = m.scope;
  const conv = m.child('conv');
  const main = interpolate
    ? conv2d.apply(conv, sc.resizeNearest(x, [1, 1, 2, 2]), cin, cout, 3)
    : sc.depthToSpace(conv2d.apply(conv, x, cin, 4 * cout, 3), 2, 'CRD');
  return sc.add(main, sc.depthToSpace(repeatChannels(m, x, (4 * cout) / cin), 2, 'CRD'));
}

/** ResBlock: x + RMS(conv2(act(conv1(x)))), conv2 without bias. */
function resBlock(m: Module, x: Value, c: number, act: DcaeActivation): Value {
  const h = activation(m, conv2d.apply(m.child('conv1'), x, c, c, 3), act);
  const out = convNoBias(m.child('conv2'), h, c, c, 3, 1, GAIN_AFTER_SILU);
  return m.scope.add(rmsNorm(m.child('norm'), out, c), x);
}

/**
 * SanaMultiscaleLinearAttention with its residual: q, k, v by Linears (1×1 convs, no bias), each
 * extra scale a depthwise k×k conv and a grouped 1×1 conv of the concatenated q‖k‖v; the
 * channels regrouped as diffusers reshapes them — G = heads·(1 + scales) groups of 3·d
 * consecutive channels, each split into its q, k and v — ReLU on q and k, the linear attention
 * core per group, to_out (a Linear), RMSNorm, plus x.
 */
function linearAttention(m: Module, x: Value, c: number, headDim: number, scales: readonly number[]): Value {
  const sc = m.scope;
  const heads = Math.floor(c / headDim);
  const inner = heads * headDim;
  const qkv = sc.concat(
    ['to_q', 'to_k', 'to_v'].map((name) => linearConv(m.child(name), x, c, inner)),
    1,
  );
  const multi = [qkv];
  scales.forEach((k, s) => {
    const block = m.child(`to_qkv_multiscale.${s}`);
    const local = convNoBias(block.child('proj_in'), qkv, 3 * inner, 3 * inner, k, 3 * inner);
    multi.push(convNoBias(block.child('proj_out'), local, 3 * inner, 3 * inner, 1, 3 * heads));
  });
  const groups = heads * (1 + scales.length);
  const all = multi.length === 1 ? qkv : sc.concat(multi, 1);
  // diffusers' reshape (B, G, 3d, N) then chunk(3): group g's q, k, v are channels g·3d + [0, d), [d, 2d), [2d, 3d).
  const parts = sc.split(sc.reshape(all, [0, groups * 3 * headDim, -1]), new Array<number>(3 * groups).fill(headDim), 1);
  const gather = (which: number) =>
    sc.concat(
      parts.filter((_, i) => i % 3 === which),
      1,
    );
  const q = sc.transpose(sc.relu(gather(0)), [0, 2, 1]);
  const core = sc.linearAttention(q, sc.relu(gather(1)), gather(2), { heads: groups, headDim, epsilon: ATTENTION_EPSILON });
  const out = sc.matMul(m.child('to_out').param('weight', [c, groups * headDim], 'linear'), core);
  return sc.add(rmsNorm(m.child('norm_out'), sc.reshape(out, sc.shape(x)), c), x);
}

/** GLUMBConv with its residual: 1×1 conv to 2·4c, SiLU, depthwise 3×3, h · SiLU(gate), 1×1 conv back (no bias), RMSNorm, plus x. */
function gluMbConv(m: Module, x: Value, c: number): Value {
  const sc = m.scope;
  const hidden = GLU_EXPAND * c;
  const inverted = sc.silu(conv2d.apply(m.child('conv_inverted'), x, c, 2 * hidden, 1));
  const [dw, db] = convWeights(m.child('conv_depth'), 1, 2 * hidden, [3, 3], GAIN_AFTER_SILU);
  const depth = sc.conv(inverted, dw, db, { pads: 1, group: 2 * hidden });
  const [h, gate] = sc.split(depth, [hidden, hidden], 1) as [Value, Value];
  const point = convNoBias(m.child('conv_point'), sc.mul(h, sc.silu(gate)), hidden, c, 1, 1, GAIN_AFTER_SILU);
  return sc.add(rmsNorm(m.child('norm'), point, c), x);
}

/**
 * One block of a level, the decoder's or the encoder's (`get_block`): a ResBlock, or an
 * EfficientViTBlock (the multi-scale linear attention, then GLUMBConv at `conv_out`).
 */
export function dcaeBlock(m: Module, x: Value, l: Pick<DcaeLevel, 'block' | 'channels' | 'act' | 'scales'>, headDim: number): Value {
  return l.block === 'ResBlock'
    ? resBlock(m, x, l.channels, l.act)
    : gluMbConv(m.child('conv_out'), linearAttention(m.child('attn'), x, l.channels, headDim, l.scales), l.channels);
}

function level(m: Module, x: Value, l: DcaeLevel, headDim: number, interpolate: boolean): Value {
  let first = 0;
  if (l.deeper !== null) x = upBlock(m.child(`${first++}`), x, l.deeper, l.channels, interpolate);
  for (let j = 0; j < l.layers; j++) x = dcaeBlock(m.child(`${first + j}`), x, l, headDim);
  return x;
}

function decoderGraph(config: ResolvedConfig, source: ParamSource): GraphBuilder {
  const f = dcaeFields(config.fields);
  const g = new GraphBuilder(config.className, { docString: `${config.className} decoder built by distvae` });
  const decoder = new Module(g, source).child('decoder');
  const z = config.geometry.latentChannels;
  const top = f.levels[f.levels.length - 1]!.channels;
  const latent = g.input('latent', ['batch', z, 'height', 'width']);
  let x = conv2d.apply(decoder.child('conv_in'), latent, z, top, 3);
  if (f.inShortcut) x = g.add(x, repeatChannels(decoder, latent, top / z));
  const ups = decoder.child('up_blocks');
  for (const l of [...f.levels].reverse()) x = level(ups.child(`${l.index}`), x, l, f.headDim, f.interpolate);
  const c0 = f.levels[0]!.channels;
  const out = config.geometry.outChannels;
  x = activation(decoder, rmsNorm(decoder.child('norm_out'), x, c0), f.convAct);
  x = conv2d.apply(decoder.child('conv_out'), x, c0, out, 3, f.convAct === 'relu' ? 1.41 : GAIN_AFTER_SILU);
  g.output('sample', x, ['batch', out, 'out_height', 'out_width']);
  return g;
}
