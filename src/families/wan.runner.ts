// The frame-stepping tile runner of the Wan family (DESIGN §3 'frame-steps'): a tile's decode is
// a run of step-graph calls, one per latent frame of each batch element, threading the causal
// history (`present:*` outputs of one step fed back as `past:*` inputs of the next) and writing
// each step's frames into the tile's (B, C, F, H, W) raw output. The history lives only inside
// one `decode` call, so it is cleared per tile as diffusers clears its cache per tile.
//
// Sessions are made on first use, one per kind of step: a one-frame tile (a Qwen-Image image)
// needs only the `only` graph, a video tile `first` and `next` — a session holds its own copy of
// the weights, so graphs a decode never runs are never built.

import { throwIfAborted } from '../decode/engine.js';
import type { TileRunner } from '../decode/types.js';
import { createSession, type Session, type SessionOptions } from '../runtime/session.js';
import type { Tensor } from '../tensor.js';
import { LATENT_INPUT, SAMPLE_OUTPUT } from './wan.graph.js';
import { pastInputName, presentOutputName, type WanStep } from './wan-blocks.js';

const PRESENT_PREFIX = 'present:';

export class FrameStepRunner implements TileRunner {
  private readonly sessions = new Map<WanStep, Promise<Session>>();

  constructor(
    /** The ONNX bytes of a step graph. */
    private readonly buildStep: (step: WanStep) => Uint8Array,
    private readonly sessionOptions: SessionOptions,
    /** Output frames per latent frame after the first (2^number of temporal upsamples). */
    private readonly temporalRatio: number,
  ) {}

  private session(step: WanStep): Promise<Session> {
    let session = this.sessions.get(step);
    if (!session) {
      session = createSession(this.buildStep(step), this.sessionOptions);
      this.sessions.set(step, session);
    }
    return session;
  }

  async decode(tile: Tensor, signal?: AbortSignal): Promise<Tensor> {
    const [batch, , frames] = tile.dims as [number, number, number, number, number];
    const outFrames = 1 + (frames - 1) * this.temporalRatio;
    let out: { data: Float32Array; dims: number[] } | null = null;
    for (let b = 0; b < batch; b++) {
      // The history read by a step becomes the output buffers of the step after it (same
      // shapes), and a next step's sample buffer is reused by the following one: from the third
      // step on, a step allocates nothing, and two copies of the history exist, never more.
      let past = new Map<string, Tensor>();
      let into: Record<string, Tensor> = {};
      let outFrame = 0;
      for (let f = 0; f < frames; f++) {
        throwIfAborted(signal);
        const step: WanStep = frames === 1 ? 'only' : f === 0 ? 'first' : 'next';
        const feeds = { [LATENT_INPUT]: latentFrame(tile, b, f), ...Object.fromEntries([...past].map(([key, t]) => [pastInputName(key), t])) };
        const results = await (await this.session(step)).run(feeds, step === 'next' ? into : {});
        const sample = results[SAMPLE_OUTPUT]!;
        const [count, channels, height, width] = sample.dims as [number, number, number, number];
        out ??= { data: new Float32Array(batch * channels * outFrames * height * width), dims: [batch, channels, outFrames, height, width] };
        writeFrames(out.data, out.dims, b, outFrame, sample);
        outFrame += count;
        into = step === 'next' ? { [SAMPLE_OUTPUT]: sample } : {};
        for (const [key, t] of past) into[presentOutputName(key)] = t;
        past = new Map();
        for (const [name, value] of Object.entries(results)) {
          if (name.startsWith(PRESENT_PREFIX)) past.set(name.slice(PRESENT_PREFIX.length), value);
        }
      }
    }
    return out!;
  }

  async dispose(): Promise<void> {
    const sessions = await Promise.all(this.sessions.values());
    this.sessions.clear();
    await Promise.all(sessions.map((s) => s.dispose()));
  }
}

/** Latent frame f of batch element b: (1, C, h, w). */
function latentFrame(tile: Tensor, b: number, f: number): Tensor {
  const [, channels, frames, height, width] = tile.dims as [number, number, number, number, number];
  const plane = height * width;
  const data = new Float32Array(channels * plane);
  for (let c = 0; c < channels; c++) {
    const from = ((b * channels + c) * frames + f) * plane;
    data.set(tile.data.subarray(from, from + plane), c * plane);
  }
  return { dims: [1, channels, height, width], data };
}

/** Copies a step's (count, C, H, W) frames to frames [first, first + count) of batch element b of a (B, C, F, H, W) output. */
function writeFrames(out: Float32Array, dims: readonly number[], b: number, first: number, sample: Tensor): void {
  const [, channels, frames, height, width] = dims as [number, number, number, number, number];
  const count = sample.dims[0]!;
  const plane = height * width;
  for (let t = 0; t < count; t++) {
    for (let c = 0; c < channels; c++) {
      const from = (t * channels + c) * plane;
      out.set(sample.data.subarray(from, from + plane), ((b * channels + c) * frames + first + t) * plane);
    }
  }
}
