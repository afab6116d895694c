// The runtime of AutoencoderKLMiniMaxH3: a tile runner that decodes a latent tile's frames as the
// class's `_decode` does — the latent frames padded by repeating the last one, fixed clips of
// `chunk + context` latent frames every `chunk`, each through the ViT decoder, the first
// `prePadding` frames of every clip dropped, each clip's first `blend` frames cross-faded with the
// previous clip's raw tail, the last clip's tail appended and the padded frames cut again. The
// engine hands every spatial tile all frames (temporal policy 'clip-chunks'); since the spatial
// stitch and the temporal cross-fade are both fixed linear blends on different axes, decoding
// clips inside each tile equals diffusers' clips-of-stitched-tiles up to float rounding.
//
// One session per clip shape (the rotary tables are constants of the shape); a plan's tiles share
// one shape, so the runner keeps one session and replaces it only when the shape changes.

import { DistVaeError, throwIfAborted } from '../../errors.js';
import { createSession } from '../../runtime/session.js';
import type { Session } from '../../runtime/session-types.js';
import type { Tensor } from '../../tensor.js';
import type { FamilyRuntime, TileRunner } from '../runtime-types.js';
import type { ResolvedConfig } from '../types.js';
import { buildMiniMaxDecoderGraph, miniMaxDecoderParams, type ClipShape } from './graph.js';
import { clipPlan } from '../clip-frames.js';
import { miniMaxFields } from './spec.js';

/** Latent frames [start, start + count) of a (1, C, T, h, w) tensor, past the end clipped. */
function framesOf(z: Tensor, start: number, count: number): Tensor {
  const [b, c, t, h, w] = z.dims as [number, number, number, number, number];
  const n = Math.min(count, t - start);
  const plane = h * w;
  const data = new Float32Array(b * c * n * plane);
  for (let p = 0; p < b * c; p++) data.set(z.data.subarray((p * t + start) * plane, (p * t + start + n) * plane), p * n * plane);
  return { dims: [b, c, n, h, w], data };
}

/** z with its last latent frame repeated `pad` more times (diffusers' `z[:, :, -1:].repeat`). */
function padFrames(z: Tensor, pad: number): Tensor {
  if (pad === 0) return z;
  const [b, c, t, h, w] = z.dims as [number, number, number, number, number];
  const plane = h * w;
  const data = new Float32Array(b * c * (t + pad) * plane);
  for (let p = 0; p < b * c; p++) {
    data.set(z.data.subarray(p * t * plane, (p + 1) * t * plane), p * (t + pad) * plane);
    const last = z.data.subarray((p * t + t - 1) * plane, (p * t + t) * plane);
    for (let k = 0; k < pad; k++) data.set(last, (p * (t + pad) + t + k) * plane);
  }
  return { dims: [b, c, t + pad, h, w], data };
}

/**
 * The clip loop of `_decode` for one batch item, given a decoder of clips: raw (1, C, F, H, W)
 * with F = 1 + 4(T−1) − 3⌊(T−1)/5⌋ for the published config. Exported for tests of the loop alone.
 */
export async function decodeClips(
  config: ResolvedConfig,
  z: Tensor,
  decodeClip: (clip: Tensor) => Promise<Tensor>,
  signal?: AbortSignal,
): Promise<Tensor> {
  const geometry = config.geometry.clips!;
  const latentFrames = z.dims[2]!;
  const plan = clipPlan(geometry, latentFrames);
  // decode/latents.ts refuses latent frame counts that run no clip before any work.
  if (!plan) throw new DistVaeError('TENSOR_INVALID', `${latentFrames} latent frames run no clip of AutoencoderKLMiniMaxH3's loop`);
  const { chunk, context, prePadding, blend, temporalRatio: rt } = geometry;
  const padded = padFrames(z, plan.padded - latentFrames);
  const kept: { frames: number; data: Float32Array }[] = [];
  let channels = 0;
  let plane = 0;
  let tail: { frames: number; data: Float32Array } | null = null;
  /** Frames [f0, f1) of a decoded clip (1, C, F, H, W) as (C, f1 − f0, H·W) data. */
  const cut = (out: Tensor, f0: number, f1: number) => {
    const f = out.dims[2]!;
    const [a, b] = [Math.min(f0, f), Math.min(f1, f)];
    const n = Math.max(0, b - a);
    const data = new Float32Array(channels * n * plane);
    for (let ch = 0; ch < channels; ch++) data.set(out.data.subarray((ch * f + a) * plane, (ch * f + a + n) * plane), ch * n * plane);
    return { frames: n, data };
  };
  for (const start of plan.starts) {
    throwIfAborted(signal);
    const out = await decodeClip(framesOf(padded, start, chunk + context));
    channels = out.dims[1]!;
    plane = out.dims[3]! * out.dims[4]!;
    const head = cut(out, prePadding, chunk * rt);
    if (tail) {
      // diffusers' `_blend(a, b, E)` along frames: e = min(a, b, E), b[y] = a[a − e + y]·(1 − y/e) + b[y]·(y/e).
      const e = Math.min(tail.frames, head.frames, blend);
      for (let ch = 0; ch < channels; ch++) {
        for (let y = 0; y < e; y++) {
          const wb = y / e;
          const a = (ch * tail.frames + tail.frames - e + y) * plane;
          const b = (ch * head.frames + y) * plane;
          for (let i = 0; i < plane; i++) head.data[b + i] = tail.data[a + i]! * (1 - wb) + head.data[b + i]! * wb;
        }
      }
    }
    kept.push(head);
    tail = geometry.tokenDrop > 0 ? cut(out, chunk * rt + prePadding, 2 * chunk * rt) : null;
  }
  if (tail) kept.push(tail);
  const frames = plan.outFrames;
  const [height, width] = [
    padded.dims[3]! * miniMaxFields(config.fields).spatialRatio,
    padded.dims[4]! * miniMaxFields(config.fields).spatialRatio,
  ];
  const data = new Float32Array(channels * frames * plane);
  for (let ch = 0; ch < channels; ch++) {
    let t = 0;
    for (const piece of kept) {
      const n = Math.min(piece.frames, frames - t);
      if (n <= 0) break;
      data.set(piece.data.subarray(ch * piece.frames * plane, (ch * piece.frames + n) * plane), (ch * frames + t) * plane);
      t += n;
    }
  }
  return { dims: [1, channels, frames, height, width], data };
}

/** A runner over one session per clip shape, replaced when the shape changes. */
async function createMiniMaxRunner(
  config: ResolvedConfig,
  weights: ReadonlyMap<string, Tensor>,
  options: Parameters<FamilyRuntime['createTileRunner']>[2],
): Promise<TileRunner> {
  let current: { key: string; session: Session } | null = null;
  const sessionFor = async (clip: ClipShape): Promise<Session> => {
    const key = `${clip.frames}x${clip.height}x${clip.width}`;
    if (current?.key === key) return current.session;
    if (current) await current.session.dispose();
    current = null;
    const session = await createSession(buildMiniMaxDecoderGraph(config, weights, clip).toModel(), options);
    current = { key, session };
    return session;
  };
  return {
    async decode(tile, signal) {
      const [batch] = tile.dims as [number];
      const items: Tensor[] = [];
      for (let b = 0; b < batch; b++) {
        const item = batch === 1 ? tile : batchItem(tile, b);
        items.push(
          await decodeClips(
            config,
            item,
            async (clip) => {
              const [, , frames, height, width] = clip.dims as [number, number, number, number, number];
              const session = await sessionFor({ frames, height, width });
              return (await session.run({ latent: clip })).sample!;
            },
            signal,
          ),
        );
      }
      if (batch === 1) return items[0]!;
      const dims = [batch, ...items[0]!.dims.slice(1)];
      const data = new Float32Array(items.reduce((n, t) => n + t.data.length, 0));
      items.reduce((at, t) => (data.set(t.data, at), at + t.data.length), 0);
      return { dims, data };
    },
    async dispose() {
      if (current) await current.session.dispose();
      current = null;
    },
  };
}

/** Item b of a batch (B, …) as a batch of one. */
function batchItem(t: Tensor, b: number): Tensor {
  const size = t.data.length / t.dims[0]!;
  return { dims: [1, ...t.dims.slice(1)], data: t.data.slice(b * size, (b + 1) * size) };
}

/**
 * What one tile decode holds (docs/design.md §13): one session on the clip shape of a tile of
 * these latent dims (B, C, T, h, w), run once per clip per batch item; every clip of a padded
 * latent has the same length, so one graph describes them.
 */
const memoryRuns: FamilyRuntime['memoryRuns'] = (config, weights, dims) => {
  const [batch, , frames, height, width] = dims as [number, number, number, number, number];
  const clips = config.geometry.clips!;
  const plan = clipPlan(clips, frames);
  const clipFrames = plan ? Math.min(plan.padded, clips.chunk + clips.context) : frames;
  return {
    sessions: [
      {
        key: 'clip',
        model: buildMiniMaxDecoderGraph(config, weights, { frames: clipFrames, height, width }).toModel(),
        runs: batch * (plan?.starts.length ?? 1),
      },
    ],
  };
};

export const miniMaxH3Runtime: FamilyRuntime = {
  decoderParams: miniMaxDecoderParams,
  // Why no fused graph: a clip loop in JS around graphs built per clip shape, and inside each the
  // register tokens concatenated onto the positions and rotary angles normalised by the clip's
  // whole height and width — a band can compute neither, so row sharding is refused up front.
  graphWithheld:
    'a Concat appends register tokens to the positions and the rotary tables (Mul by cos and sin) depend on the clip’s whole height and width, in graphs built per clip shape',
  memoryRuns,
  createTileRunner: createMiniMaxRunner,
  // diffusers returns the ImageNet-normalised sample as decoded: no clamp, no unpatchify.
  postprocess: (raw) => raw,
};
