// The frame-stepping tile runner of the Wan family (docs/design.md §3 'frame-steps'): a tile's decode
// sends each latent frame of each batch element through the decoder's segment graphs, one frame
// per call, depth first (a frame a temporal upsampler makes goes through the rest of the decoder
// before its sibling), threading every temporal conv's history — the last two input frames it
// saw — and writing the last segment's frames into the tile's (B, C, F, H, W) raw output. The
// history lives only inside one `decode` call, so it is cleared per tile as diffusers clears its
// cache per tile.
//
// Sessions are made on first use, one per (segment, kind of frame): a one-frame tile (a
// Qwen-Image image) needs only the `only` graphs, a video tile the `first` and `next` graphs — a
// session holds its own copy of its weights, so graphs a decode never runs are never built.

import { throwIfAborted } from '../../errors.js';
import type { TileRunner } from '../runtime-types.js';
import { createSession } from '../../runtime/session.js';
import type { Session, SessionOptions } from '../../runtime/session-types.js';
import type { ModelProto } from '../../graph/onnx-proto.js';
import type { Tensor } from '../../tensor.js';
import { SEGMENT_INPUT, SEGMENT_OUTPUT } from './graph.js';
import { pastInputName, PRESENT_PREFIX, type WanStep } from './blocks.js';

export class FrameStepRunner implements TileRunner {
  private readonly sessions = new Map<string, Promise<Session>>();

  constructor(
    /** The model of a segment's graph for a kind of frame. */
    private readonly buildGraph: (segment: number, step: WanStep) => ModelProto,
    private readonly segments: number,
    private readonly sessionOptions: SessionOptions,
    /** Output frames per latent frame after the first (2^number of temporal upsamples). */
    private readonly temporalRatio: number,
  ) {}

  session(segment: number, step: WanStep): Promise<Session> {
    const key = `${segment}.${step}`;
    let session = this.sessions.get(key);
    if (!session) {
      session = createSession(this.buildGraph(segment, step), this.sessionOptions);
      this.sessions.set(key, session);
    }
    return session;
  }

  async decode(tile: Tensor, signal?: AbortSignal): Promise<Tensor> {
    const [batch, , frames] = tile.dims as [number, number, number, number, number];
    const output = new TileOutput(batch, 1 + (frames - 1) * this.temporalRatio);
    for (let b = 0; b < batch; b++) {
      const sequence = new Sequence(this, this.segments, frames === 1, (y) => output.write(b, y), signal);
      for (let f = 0; f < frames; f++) await sequence.feed(0, latentFrame(tile, b, f));
    }
    return output.tensor();
  }

  async dispose(): Promise<void> {
    const sessions = await Promise.all(this.sessions.values());
    this.sessions.clear();
    await Promise.all(sessions.map((s) => s.dispose()));
  }
}

/** One batch element's frames on their way through the segments, with every temporal conv's history. */
class Sequence {
  /** Per temporal conv: its input frames t−2 and t−1 (oldest first). */
  private readonly history = new Map<string, [Tensor, Tensor]>();
  /** All-zero frames, shared per shape (inputs are only read). */
  private readonly zeros = new Map<string, Tensor>();
  private readonly started: boolean[];

  constructor(
    private readonly runner: FrameStepRunner,
    private readonly segments: number,
    /** A one-frame sequence: nothing follows, so no history is made. */
    private readonly single: boolean,
    private readonly emit: (frames: Tensor) => void,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.started = new Array<boolean>(segments).fill(false);
  }

  async feed(segment: number, x: Tensor): Promise<void> {
    throwIfAborted(this.signal);
    const step: WanStep = this.single ? 'only' : this.started[segment] ? 'next' : 'first';
    this.started[segment] = true;
    const session = await this.runner.session(segment, step);
    const feeds: Record<string, Tensor> = { [SEGMENT_INPUT]: x };
    for (const [key, [oldest, latest]] of this.history) {
      if (!session.inputNames.includes(pastInputName(key, 0))) continue;
      feeds[pastInputName(key, 0)] = oldest;
      feeds[pastInputName(key, 1)] = latest;
    }
    const results = await session.run(feeds);
    for (const [name, present] of Object.entries(results)) {
      if (!name.startsWith(PRESENT_PREFIX)) continue;
      const key = name.slice(PRESENT_PREFIX.length);
      this.history.set(key, [step === 'first' ? this.zerosLike(present) : this.history.get(key)![1], present]);
    }
    const y = results[SEGMENT_OUTPUT]!;
    if (segment === this.segments - 1) {
      this.emit(y);
      return;
    }
    for (let t = 0; t < y.dims[0]!; t++) await this.feed(segment + 1, frameOf(y, t));
  }

  private zerosLike(t: Tensor): Tensor {
    const key = t.dims.join('x');
    let zeros = this.zeros.get(key);
    if (!zeros) {
      zeros = { dims: [...t.dims], data: new Float32Array(t.data.length) };
      this.zeros.set(key, zeros);
    }
    return zeros;
  }
}

/** A tile's raw output (B, C, F, H, W), allocated when the first frames arrive, filled in order per batch element. */
class TileOutput {
  private data: Float32Array | null = null;
  private dims: number[] = [];
  private readonly next: number[];

  constructor(
    private readonly batch: number,
    private readonly frames: number,
  ) {
    this.next = new Array<number>(batch).fill(0);
  }

  /** Appends (count, C, H, W) frames to batch element b. */
  write(b: number, y: Tensor): void {
    const [count, channels, height, width] = y.dims as [number, number, number, number];
    if (!this.data) {
      this.dims = [this.batch, channels, this.frames, height, width];
      this.data = new Float32Array(this.batch * channels * this.frames * height * width);
    }
    const plane = height * width;
    for (let t = 0; t < count; t++) {
      for (let c = 0; c < channels; c++) {
        const from = (t * channels + c) * plane;
        this.data.set(y.data.subarray(from, from + plane), ((b * channels + c) * this.frames + this.next[b]! + t) * plane);
      }
    }
    this.next[b]! += count;
  }

  tensor(): Tensor {
    return { dims: this.dims, data: this.data! };
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

/** Frame t of (count, C, H, W) as (1, C, H, W), sharing its memory. */
function frameOf(y: Tensor, t: number): Tensor {
  const size = y.data.length / y.dims[0]!;
  return { dims: [1, ...y.dims.slice(1)], data: y.data.subarray(t * size, (t + 1) * size) };
}
