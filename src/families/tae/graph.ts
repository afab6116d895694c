// The TAE decoder and encoder as ONNX graphs, built from one layer list per half that mirrors
// madebyollin's `nn.Sequential` (taesd.py, commit 5cccb12): a layer's position in the list is
// its module index, hence its checkpoint key. The same list yields the parameter specs (names,
// shapes, synthetic init) and the graph, so the two cannot drift apart.
//
// Decoder: Clamp tanh(x/3)·3, conv(Cz→W), ReLU, then per stage its Blocks, and between stages a
// nearest upsample and a bias-free conv; the last stage ends in conv(W→3) with bias. Encoder:
// conv(3→W), then per stage (after the first) a bias-free stride-2 conv, and its Blocks; then
// conv(W→Cz). Block: [x ← x + pool(x)], ReLU(conv-ReLU-conv-ReLU-conv(x) + x). Output is raw
// (madebyollin's decoder does not clamp; docs/design.md §9).

import { DistVaeError } from '../../errors.js';
import { GraphBuilder, type Scope, type Value } from '../../graph/builder.js';
import type { Tensor } from '../../tensor.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import { TAE_POOL_EPSILON, TAE_POOL_EXPANSION, TAE_POOL_GROUPS, type TaeArchitecture, type TaeKeyLayout } from './spec.js';

export type TaeLayer =
  | { kind: 'clamp' }
  | { kind: 'relu' }
  | { kind: 'upsample'; factor: number }
  /** 3×3 conv, zero padding 1. `gain` scales the synthetic init (√2 before a ReLU). */
  | { kind: 'conv'; key: string; inChannels: number; outChannels: number; stride: 1 | 2; bias: boolean; gain: number }
  | { kind: 'block'; key: string; width: number; pool: boolean };

/** Graph input and output names. */
export const DECODER_IO = { input: 'latents', output: 'sample' } as const;
export const ENCODER_IO = { input: 'image', output: 'latents' } as const;

/** Checkpoint key prefix of the module at madebyollin index `index` (diffusers' DecoderTiny has no Clamp: one less). */
export function decoderKey(layout: TaeKeyLayout, index: number): string {
  return layout === 'madebyollin' ? `${index}` : `decoder.layers.${index - 1}`;
}

export function encoderKey(layout: TaeKeyLayout, index: number): string {
  return layout === 'madebyollin' ? `${index}` : `encoder.layers.${index}`;
}

const RELU_GAIN = Math.SQRT2;
/** Synthetic init of the last conv of a residual branch: keeps sums O(1) through many blocks. */
const RESIDUAL_GAIN = 0.5;

export function decoderLayers(arch: TaeArchitecture): TaeLayer[] {
  const w = arch.decoderWidth;
  const layers: TaeLayer[] = [];
  const key = () => decoderKey(arch.keyLayout, layers.length);
  layers.push({ kind: 'clamp' });
  layers.push({ kind: 'conv', key: key(), inChannels: arch.latentChannels, outChannels: w, stride: 1, bias: true, gain: RELU_GAIN });
  layers.push({ kind: 'relu' });
  arch.decoderBlocks.forEach((blocks, stage) => {
    for (let b = 0; b < blocks; b++) layers.push({ kind: 'block', key: key(), width: w, pool: arch.midblockGn && stage === 0 });
    const last = stage === arch.decoderBlocks.length - 1;
    if (!last) layers.push({ kind: 'upsample', factor: arch.upsampleFactor });
    layers.push({
      kind: 'conv',
      key: key(),
      inChannels: w,
      outChannels: last ? arch.imageChannels.out : w,
      stride: 1,
      bias: last,
      gain: 1,
    });
  });
  return layers;
}

export function encoderLayers(arch: TaeArchitecture): TaeLayer[] {
  const w = arch.encoderWidth;
  const layers: TaeLayer[] = [];
  const key = () => encoderKey(arch.keyLayout, layers.length);
  const lastStage = arch.encoderBlocks.length - 1;
  arch.encoderBlocks.forEach((blocks, stage) => {
    const first = stage === 0;
    layers.push({
      kind: 'conv',
      key: key(),
      inChannels: first ? arch.imageChannels.in : w,
      outChannels: w,
      stride: first ? 1 : 2,
      bias: first,
      gain: 1,
    });
    for (let b = 0; b < blocks; b++) layers.push({ kind: 'block', key: key(), width: w, pool: arch.midblockGn && stage === lastStage });
  });
  layers.push({ kind: 'conv', key: key(), inChannels: w, outChannels: arch.latentChannels, stride: 1, bias: true, gain: 1 });
  return layers;
}

function convParams(key: string, inChannels: number, outChannels: number, kernel: number, bias: boolean, gain: number): ParamSpec[] {
  const specs: ParamSpec[] = [{ name: `${key}.weight`, dims: [outChannels, inChannels, kernel, kernel], init: 'conv', gain }];
  if (bias) specs.push({ name: `${key}.bias`, dims: [outChannels], init: 'bias' });
  return specs;
}

function layerParams(layer: TaeLayer): ParamSpec[] {
  switch (layer.kind) {
    case 'conv':
      return convParams(layer.key, layer.inChannels, layer.outChannels, 3, layer.bias, layer.gain);
    case 'block': {
      const { key, width: w } = layer;
      const specs: ParamSpec[] = [];
      if (layer.pool) {
        const wide = TAE_POOL_EXPANSION * w;
        specs.push(
          ...convParams(`${key}.pool.0`, w, wide, 1, false, 1),
          { name: `${key}.pool.1.weight`, dims: [wide], init: 'norm-weight' },
          { name: `${key}.pool.1.bias`, dims: [wide], init: 'norm-bias' },
          ...convParams(`${key}.pool.3`, wide, w, 1, false, RESIDUAL_GAIN),
        );
      }
      specs.push(
        ...convParams(`${key}.conv.0`, w, w, 3, true, RELU_GAIN),
        ...convParams(`${key}.conv.2`, w, w, 3, true, RELU_GAIN),
        ...convParams(`${key}.conv.4`, w, w, 3, true, RESIDUAL_GAIN),
      );
      return specs;
    }
    default:
      return [];
  }
}

export function layersParams(layers: readonly TaeLayer[]): ParamSpec[] {
  return layers.flatMap(layerParams);
}

/** Adds initializers to a scope from the bound weights, by checkpoint key. */
class Params {
  constructor(private readonly weights: ReadonlyMap<string, Tensor>) {}

  get(scope: Scope, name: string): Value {
    const key = scope.path ? `${scope.path}.${name}` : name;
    const t = this.weights.get(key);
    if (!t) throw new DistVaeError('WEIGHTS_MISMATCH', `the TAE graph needs ${key}, which the bound weights lack`);
    return scope.param(name, t);
  }
}

function conv3x3(g: Scope, p: Params, x: Value, key: string, bias: boolean, stride: 1 | 2 = 1): Value {
  const s = g.scope(key);
  return s.conv(x, p.get(s, 'weight'), bias ? p.get(s, 'bias') : undefined, { pads: 1, strides: stride });
}

function block(g: Scope, p: Params, x: Value, layer: Extract<TaeLayer, { kind: 'block' }>): Value {
  const s = g.scope(layer.key);
  if (layer.pool) {
    const pool = s.scope('pool');
    const p0 = pool.scope('0');
    const p1 = pool.scope('1');
    const p3 = pool.scope('3');
    let h = p0.conv(x, p.get(p0, 'weight'), undefined);
    h = p1.relu(p1.groupNorm(h, p.get(p1, 'weight'), p.get(p1, 'bias'), { groups: TAE_POOL_GROUPS, epsilon: TAE_POOL_EPSILON }));
    h = p3.conv(h, p.get(p3, 'weight'), undefined);
    x = pool.add(x, h);
  }
  let h = s.relu(conv3x3(s, p, x, 'conv.0', true));
  h = s.relu(conv3x3(s, p, h, 'conv.2', true));
  h = conv3x3(s, p, h, 'conv.4', true);
  return s.relu(s.add(h, x));
}

function applyLayers(g: Scope, p: Params, x: Value, layers: readonly TaeLayer[]): Value {
  for (const layer of layers) {
    switch (layer.kind) {
      case 'clamp':
        x = g.mul(g.tanh(g.div(x, 3)), 3);
        break;
      case 'relu':
        x = g.relu(x);
        break;
      case 'upsample':
        x = g.resizeNearest(x, [1, 1, layer.factor, layer.factor]);
        break;
      case 'conv':
        x = conv3x3(g, p, x, layer.key, layer.bias, layer.stride);
        break;
      case 'block':
        x = block(g, p, x, layer);
        break;
    }
  }
  return x;
}

/** Decoder graph: input `latents` (B, Cz, h, w) → output `sample` (B, 3, r·h, r·w), raw. */
export function buildDecoderGraph(arch: TaeArchitecture, weights: ReadonlyMap<string, Tensor>): GraphBuilder {
  const g = new GraphBuilder('tae_decoder', { docString: `madebyollin TAE decoder (${arch.variant ?? 'custom'})` });
  const z = g.input(DECODER_IO.input, ['batch', arch.latentChannels, 'height', 'width']);
  g.output(DECODER_IO.output, applyLayers(g, new Params(weights), z, decoderLayers(arch)), [
    'batch',
    arch.imageChannels.out,
    'out_height',
    'out_width',
  ]);
  return g;
}

/** Encoder graph: input `image` (B, 3, H, W) in [0, 1] → output `latents` (B, Cz, ⌈H/r⌉, ⌈W/r⌉). */
export function buildEncoderGraph(arch: TaeArchitecture, weights: ReadonlyMap<string, Tensor>): GraphBuilder {
  const g = new GraphBuilder('tae_encoder', { docString: `madebyollin TAE encoder (${arch.variant ?? 'custom'})` });
  const image = g.input(ENCODER_IO.input, ['batch', arch.imageChannels.in, 'height', 'width']);
  g.output(ENCODER_IO.output, applyLayers(g, new Params(weights), image, encoderLayers(arch)), [
    'batch',
    arch.latentChannels,
    'latent_height',
    'latent_width',
  ]);
  return g;
}
