// The Wan encoder's runner (Wan 2.1 / 2.2, Qwen-Image): one call is diffusers' `_encode` of a
// video (B, C, F, H, W) with tiling off — patchify (Wan 2.2), then per batch element the first
// frame alone and chunks of 4 frames through the chunk graphs (encoder-graph.ts), each chunk's
// caches (`present:`) fed to the next (`past:`), the latent frames written into (B, z, f, h, w).
// Like the decoder's frame-step runner (runner.ts), the cache lives only inside one call, so a
// spatial tile starts from an empty cache as diffusers' `tiled_encode` clears it per tile; and
// sessions are made on first use, so an image (F = 1) builds only the `only` graph.

import { throwIfAborted } from '../../errors.js';
import { createSession } from '../../runtime/session.js';
import type { Session, SessionOptions } from '../../runtime/session-types.js';
import type { ModelProto } from '../../graph/onnx-proto.js';
import type { Tensor } from '../../tensor.js';
import type { TileRunner } from '../runtime-types.js';
import type { WanStep } from './blocks.js';
import {
  ENCODER_CHUNK_INPUT,
  ENCODER_CHUNK_OUTPUT,
  ENCODER_PAST_PREFIX,
  ENCODER_PRESENT_PREFIX,
  WAN_ENCODE_CHUNK,
} from './encoder-graph.js';

export class ChunkEncoderRunner implements TileRunner {
  private readonly sessions = new Map<WanStep, Promise<Session>>();

  constructor(
    private readonly buildGraph: (step: WanStep) => ModelProto,
    private readonly sessionOptions: SessionOptions,
    /** Wan 2.2's patch size (1: none). */
    private readonly patchSize: number,
    /** How a session is opened (the host's runtime; a test passes onnxruntime-web's in Node). */
    private readonly open: (model: ModelProto, options: SessionOptions) => Promise<Session> = createSession,
  ) {}

  private session(step: WanStep): Promise<Session> {
    let session = this.sessions.get(step);
    if (!session) {
      session = this.open(this.buildGraph(step), this.sessionOptions);
      this.sessions.set(step, session);
    }
    return session;
  }

  /** Latent means of a video (B, C, F, H, W), F = 1 + 4k: one `_encode`. */
  async decode(video: Tensor, signal?: AbortSignal): Promise<Tensor> {
    const x = patchify(video, this.patchSize);
    const [batch, , frames] = x.dims as [number, number, number];
    const chunks = [{ start: 0, end: 1 }];
    for (let f = 1; f < frames; f += WAN_ENCODE_CHUNK) chunks.push({ start: f, end: f + WAN_ENCODE_CHUNK });
    const outputs: Tensor[][] = [];
    for (let b = 0; b < batch; b++) {
      const latent: Tensor[] = [];
      let cache: Record<string, Tensor> = {};
      for (const [i, chunk] of chunks.entries()) {
        throwIfAborted(signal);
        const step: WanStep = i > 0 ? 'next' : chunks.length === 1 ? 'only' : 'first';
        const session = await this.session(step);
        const feeds: Record<string, Tensor> = { [ENCODER_CHUNK_INPUT]: framesOnBatch(x, b, chunk.start, chunk.end) };
        for (const name of session.inputNames) if (name.startsWith(ENCODER_PAST_PREFIX)) feeds[name] = cache[name]!;
        const results = await session.run(feeds);
        cache = {};
        for (const [name, value] of Object.entries(results))
          if (name.startsWith(ENCODER_PRESENT_PREFIX)) cache[ENCODER_PAST_PREFIX + name.slice(ENCODER_PRESENT_PREFIX.length)] = value;
        latent.push(results[ENCODER_CHUNK_OUTPUT]!);
      }
      outputs.push(latent);
    }
    return stackLatents(outputs);
  }

  async dispose(): Promise<void> {
    const sessions = await Promise.all(this.sessions.values());
    this.sessions.clear();
    await Promise.all(sessions.map((s) => s.dispose()));
  }
}

/**
 * diffusers' `patchify`: (B, C, F, H, W) → (B, C·p², F, H/p, W/p) with
 * out[b, c·p² + dx·p + dy, f, h, w] = in[b, c, f, h·p + dy, w·p + dx] (the width offset is the
 * slower channel digit, as `unpatchify` undoes).
 */
export function patchify(x: Tensor, p: number): Tensor {
  if (p === 1) return x;
  const [batch, channels, frames, height, width] = x.dims as [number, number, number, number, number];
  const [h, w] = [height / p, width / p];
  const data = new Float32Array(x.data.length);
  for (let b = 0; b < batch; b++)
    for (let c = 0; c < channels; c++)
      for (let dx = 0; dx < p; dx++)
        for (let dy = 0; dy < p; dy++)
          for (let f = 0; f < frames; f++) {
            const to = ((b * channels * p * p + c * p * p + dx * p + dy) * frames + f) * h * w;
            const from = ((b * channels + c) * frames + f) * height * width;
            for (let y = 0; y < h; y++)
              for (let xx = 0; xx < w; xx++) data[to + y * w + xx] = x.data[from + (y * p + dy) * width + xx * p + dx]!;
          }
  return { dims: [batch, channels * p * p, frames, h, w], data };
}

/** Frames [f0, f1) of batch element b of (B, C, F, H, W) as (f1 − f0, C, H, W). */
function framesOnBatch(x: Tensor, b: number, f0: number, f1: number): Tensor {
  const [, channels, frames, height, width] = x.dims as [number, number, number, number, number];
  const plane = height * width;
  const n = f1 - f0;
  const data = new Float32Array(n * channels * plane);
  for (let t = 0; t < n; t++)
    for (let c = 0; c < channels; c++) {
      const from = ((b * channels + c) * frames + f0 + t) * plane;
      data.set(x.data.subarray(from, from + plane), (t * channels + c) * plane);
    }
  return { dims: [n, channels, height, width], data };
}

/** Per batch element, its chunks' (n, z, h, w) latent frames, as (B, z, f, h, w). */
function stackLatents(outputs: Tensor[][]): Tensor {
  const [, z, h, w] = outputs[0]![0]!.dims as [number, number, number, number];
  const frames = outputs[0]!.reduce((s, t) => s + t.dims[0]!, 0);
  const plane = h * w;
  const data = new Float32Array(outputs.length * z * frames * plane);
  outputs.forEach((chunks, b) => {
    let f = 0;
    for (const y of chunks) {
      for (let t = 0; t < y.dims[0]!; t++, f++)
        for (let c = 0; c < z; c++)
          data.set(y.data.subarray((t * z + c) * plane, (t * z + c + 1) * plane), ((b * z + c) * frames + f) * plane);
    }
  });
  return { dims: [outputs.length, z, frames, h, w], data };
}
