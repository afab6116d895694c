// The runtimes of the Wan-derived families: the step graphs run by a frame-stepping tile runner,
// and diffusers' post-processing of the assembled raw output — Wan: unpatchify (2.2) then clamp
// to [−1, 1], whole or tiled alike; Qwen-Image: clamp only when the spatial tiling loop did not
// run (its `tiled_decode` returns without clamping).

import type { Tensor } from '../../tensor.js';
import { bindWeights } from '../../weights/bind.js';
import type { FamilyEncoder, FamilyRuntime } from '../runtime-types.js';
import { buildWanEncoderGraph, wanEncoderParams, WAN_ENCODE_CHUNK } from './encoder-graph.js';
import { ChunkEncoderRunner } from './encoder-runner.js';
import { buildWanGraph, wanDecoderParams, wanSegmentCount } from './graph.js';
import { PRESENT_PREFIX, type WanStep } from './blocks.js';
import { FrameStepRunner } from './runner.js';

/**
 * diffusers' `unpatchify`: (B, c·p², F, H, W) → (B, c, F, H·p, W·p) with
 * out[b, c, f, h·p + dy, w·p + dx] = in[b, c·p² + dx·p + dy, f, h, w] (the width offset is the
 * slower channel digit).
 */
export function unpatchify(raw: Tensor, p: number): Tensor {
  if (p === 1) return raw;
  const [batch, patched, frames, height, width] = raw.dims as [number, number, number, number, number];
  const channels = patched / (p * p);
  const outH = height * p;
  const outW = width * p;
  const data = new Float32Array(raw.data.length);
  for (let b = 0; b < batch; b++) {
    for (let c = 0; c < channels; c++) {
      for (let dx = 0; dx < p; dx++) {
        for (let dy = 0; dy < p; dy++) {
          for (let f = 0; f < frames; f++) {
            const from = ((b * patched + c * p * p + dx * p + dy) * frames + f) * height * width;
            const to = ((b * channels + c) * frames + f) * outH * outW;
            for (let h = 0; h < height; h++) {
              const row = to + (h * p + dy) * outW + dx;
              const src = from + h * width;
              for (let w = 0; w < width; w++) data[row + w * p] = raw.data[src + w]!;
            }
          }
        }
      }
    }
  }
  return { dims: [batch, channels, frames, outH, outW], data };
}

/** torch.clamp(x, −1, 1), in place (the raw buffer is the engine's own assembled output). */
export function clampSigned(t: Tensor): Tensor {
  const d = t.data;
  for (let i = 0; i < d.length; i++) {
    const v = d[i]!;
    if (v > 1) d[i] = 1;
    else if (v < -1) d[i] = -1;
  }
  return t;
}

const createTileRunner: FamilyRuntime['createTileRunner'] = async (config, weights, session) => {
  const bound = bindWeights(wanDecoderParams(config), weights, { source: 'the weights given to the decoder' });
  return new FrameStepRunner(
    (segment, step) => buildWanGraph(config, bound, segment, step).toModel(),
    wanSegmentCount(config),
    session,
    config.geometry.temporalRatio,
  );
};

/**
 * The frame-step runner's sessions for a tile (B, C, F, h, w): per segment its `first` and `next`
 * graphs (`only` for one frame), each run once per frame that reaches the segment (a temporal
 * upsampler doubles every frame after a sequence's first), and two history frames per temporal
 * conv kept across runs (runner.ts).
 */
const memoryRuns: FamilyRuntime['memoryRuns'] = (config, weights, dims) => {
  const [batch, , frames] = dims as [number, number, number];
  const bound = bindWeights(wanDecoderParams(config), weights, { source: 'the weights given to the decoder' });
  const sessions: { key: string; model: ReturnType<ReturnType<typeof buildWanGraph>['toModel']>; runs: number }[] = [];
  let reaching = frames;
  for (let segment = 0; segment < wanSegmentCount(config); segment++) {
    const steps: [WanStep, number][] =
      frames === 1
        ? [['only', 1]]
        : [
            ['first', 1],
            ['next', reaching - 1],
          ];
    for (const [step, runs] of steps)
      sessions.push({ key: `segment${segment}.${step}`, model: buildWanGraph(config, bound, segment, step).toModel(), runs: batch * runs });
    reaching = 1 + (reaching - 1) * 2;
  }
  return { sessions, kept: { prefix: PRESENT_PREFIX, copies: 2 } };
};

/**
 * The Wan encoder (Wan 2.1 / 2.2; Qwen-Image's is Wan 2.1's): diffusers' `_encode` frame loop
 * (the first frame, then chunks of 4 through the causal cache) in one runner call; diffusers
 * counts Wan 2.2's tiles in patchified pixels (docs/design.md §3 'Video encodes').
 */
export const wanEncoder: FamilyEncoder = {
  params: wanEncoderParams,
  graphWithheld:
    'its encoder runs frame-stepped: one graph per chunk of frames, each temporal conv’s causal cache carried between calls in JS, so no single graph covers the video',
  createRunner: async (config, weights, session, options = {}) => {
    const bound = bindWeights(wanEncoderParams(config), weights, { source: 'the weights given to the encoder' });
    const moments = options.moments === true;
    return new ChunkEncoderRunner(
      (step) => buildWanEncoderGraph(config, bound, step, { moments }).toModel(),
      session,
      config.geometry.patchSize,
    );
  },
  moments: true,
  ignoredKeyPrefixes: ['decoder.', 'post_quant_conv.'],
  frames: { kind: 'first-then-chunks', chunk: WAN_ENCODE_CHUNK },
  patchifiedTiles: true,
};

// Why no fused graph: the decoder runs one latent frame per call through segment graphs, the
// temporal convs' causal cache threaded between calls in JS (runner.ts) — there is no one graph
// over the tile for the locality analysis to read, so row sharding is refused up front.
const FRAME_STEPPED =
  'its decoder runs frame by frame through per-segment graphs, each temporal conv’s causal cache (its last two input frames) carried between calls in JS, so there is no single graph over the tile';

export const wanRuntime: FamilyRuntime = {
  decoderParams: wanDecoderParams,
  graphWithheld: FRAME_STEPPED,
  memoryRuns,
  createTileRunner,
  postprocess: (raw, { config }) => clampSigned(unpatchify(raw, config.geometry.patchSize)),
  encoder: wanEncoder,
};

export const qwenImageRuntime: FamilyRuntime = {
  decoderParams: wanDecoderParams,
  graphWithheld: FRAME_STEPPED,
  memoryRuns,
  createTileRunner,
  postprocess: (raw, { spatiallyTiled }) => (spatiallyTiled ? raw : clampSigned(raw)),
  encoder: wanEncoder,
};
