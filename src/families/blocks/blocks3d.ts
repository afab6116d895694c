// 3-D decoder pieces for the video families (HunyuanVideo 1.0 and 1.5, LTX-2): convolution
// flavours for blocks.ts' resnet pattern — plain nn.Conv3d, HunyuanVideo's causal conv with
// replicate padding (1.5 has the same), LTX-2's causal / non-causal conv with reflect or zero
// spatial padding — the channel-to-space rearrangements of LTX-2 (the up-sampler's
// depth-to-space and the final unpatchify), and HunyuanVideo's frame-causal attention mask
// (both versions). Every piece reads the frame count and spatial size at run time, so one
// graph serves every tile and temporal chunk.
//
// A causal conv wraps the real nn.Conv3d at `.conv`, so its keys are `<key>.conv.weight|bias`.

import type { Scope, ScoreMask, Value } from '../../graph/builder.js';
import { convWeights, type ConvFlavour } from './blocks.js';

/** nn.Conv3d(cin, cout, k, padding=k//2) with bias: keys `<key>.weight` [cout, cin, k, k, k], `<key>.bias`. */
export const conv3d: ConvFlavour = {
  apply(m, x, cin, cout, kernel, gain = 1) {
    const [weight, bias] = convWeights(m, cin, cout, [kernel, kernel, kernel], gain);
    return m.scope.conv(x, weight, bias, { pads: Math.floor(kernel / 2) });
  },
};

/** Pads of a 5-D (B, C, T, H, W) tensor in ONNX order from per-axis [before, after] of T, H, W. */
function pads5d(t: [number, number], h: [number, number], w: [number, number]): number[] {
  return [0, 0, t[0], h[0], w[0], 0, 0, t[1], h[1], w[1]];
}

/**
 * HunyuanVideoCausalConv3d: replicate-pad k−1 frames in front and k//2 on each spatial side
 * (edge copies, not zeros), then a valid Conv3d at `.conv`.
 */
export const hunyuanCausalConv3d: ConvFlavour = {
  apply(m, x, cin, cout, kernel, gain = 1) {
    const [weight, bias] = convWeights(m.child('conv'), cin, cout, [kernel, kernel, kernel], gain);
    const s = Math.floor(kernel / 2);
    const padded = kernel > 1 ? m.scope.pad(x, pads5d([kernel - 1, 0], [s, s], [s, s]), { mode: 'edge' }) : x;
    return m.scope.conv(padded, weight, bias);
  },
};

export type SpatialPadding = 'reflect' | 'zeros';

/**
 * LTX2VideoCausalConv3d: time padded by copies of the edge frames — causal: k−1 copies of the
 * first frame in front; non-causal: (k−1)/2 of the first in front and of the last behind — then
 * nn.Conv3d at `.conv` with spatial padding k//2 in the given mode.
 */
export function ltx2Conv3d(options: { causal: boolean; spatialPadding: SpatialPadding }): ConvFlavour {
  return {
    apply(m, x, cin, cout, kernel, gain = 1) {
      const [weight, bias] = convWeights(m.child('conv'), cin, cout, [kernel, kernel, kernel], gain);
      const k = kernel;
      const time: [number, number] = options.causal ? [k - 1, 0] : [(k - 1) >> 1, (k - 1) >> 1];
      let h = time[0] + time[1] > 0 ? m.scope.pad(x, pads5d(time, [0, 0], [0, 0]), { mode: 'edge' }) : x;
      const s = Math.floor(k / 2);
      if (options.spatialPadding === 'reflect' && s > 0) {
        h = m.scope.pad(h, pads5d([0, 0], [s, s], [s, s]), { mode: 'reflect' });
        return m.scope.conv(h, weight, bias);
      }
      return m.scope.conv(h, weight, bias, { pads: [0, s, s, 0, s, s] });
    },
  };
}

/** Factors of a channel-to-space rearrangement along (T, H, W). */
export type Factors3 = readonly [number, number, number];

/**
 * Moves channel groups to space: (B, C·ft·fh·fw, T, H, W) → (B, C, T·ft, H·fh, W·fw) by viewing
 * the channels as (C, ft, fa, fb) and interleaving. `widthFirst` false (the up-sampler):
 * out[c, t·ft + k, h·fh + a, w·fw + b] = in[((c·ft + k)·fh + a)·fw + b, t, h, w] — torch's
 * permute (0, 1, 5, 2, 6, 3, 7, 4). `widthFirst` true (LTX-2's unpatchify, permute
 * (0, 1, 5, 2, 6, 4, 7, 3)): the first spatial digit is the width offset,
 * out[c, t·ft + k, h·fh + a, w·fw + b] = in[((c·ft + k)·fw + b)·fh + a, t, h, w].
 */
export function channelsToSpace3d(scope: Scope, x: Value, channels: number, factors: Factors3, widthFirst: boolean): Value {
  const [ft, fh, fw] = factors;
  const shape = scope.shape(x);
  const batch = scope.slice(shape, { starts: [0], ends: [1] });
  const thw = scope.slice(shape, { starts: [2], ends: [5] });
  const digits = widthFirst ? [ft, fw, fh] : [ft, fh, fw];
  const grouped = scope.reshape(x, scope.concat([batch, scope.int64Constant([channels, ...digits]), thw], 0));
  // grouped: (B, C, ft, d1, d2, T, H, W); target order (B, C, T, ft, H, fh, W, fw).
  const perm = widthFirst ? [0, 1, 5, 2, 6, 4, 7, 3] : [0, 1, 5, 2, 6, 3, 7, 4];
  const interleaved = scope.transpose(grouped, perm);
  const outThw = scope.mul(thw, scope.int64Constant([ft, fh, fw]));
  return scope.reshape(interleaved, scope.concat([batch, scope.int64Constant([channels]), outThw], 0));
}

/** Drops the first `count` frames of a (B, C, T, H, W) tensor. */
export function dropLeadingFrames(scope: Scope, x: Value, count: number): Value {
  return count === 0 ? x : scope.slice(x, { starts: [count], ends: [Number.MAX_SAFE_INTEGER], axes: [2] });
}

/** An int64 scalar (0-d) holding the product of the given entries of a shape vector. */
function shapeProduct(scope: Scope, shape: Value, axes: readonly number[]): Value {
  const parts = axes.map((a) => scope.slice(shape, { starts: [a], ends: [a + 1] }));
  const product = parts.slice(1).reduce((acc, p) => scope.mul(acc, p), parts[0]!);
  return scope.reshape(product, []);
}

/**
 * diffusers' `prepare_causal_attention_mask` (HunyuanVideo 1.0 and 1.5) applied to the
 * scores: tokens are ordered (frame, row, column) and a query token may attend to key tokens of the same or earlier
 * frames; scores of later-frame keys become −∞. `x` is the attention's (B, C, F, H, W) input.
 */
export function frameCausalMask(scope: Scope, x: Value): ScoreMask {
  const mask = (scores: Value): Value => {
    const shape = scope.shape(x);
    const perFrame = shapeProduct(scope, shape, [3, 4]);
    const tokens = shapeProduct(scope, shape, [2, 3, 4]);
    const index = scope.op('Range', [scope.reshape(scope.int64Constant([0]), []), tokens, scope.reshape(scope.int64Constant([1]), [])]);
    const frame = scope.div(index, perFrame);
    const future = scope.op('Greater', [scope.unsqueeze(frame, [0]), scope.unsqueeze(frame, [1])]);
    return scope.op('Where', [future, scope.scalar(-Infinity), scores]);
  };
  // Declared, so row sharding can run the core per query frame instead of reading x's shape.
  return Object.assign(mask, { kind: 'frame-causal' as const });
}
