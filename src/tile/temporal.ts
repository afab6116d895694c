// Temporal chunk assembly (HunyuanVideo, LTX-2; docs/design.md §3): chunks after the first drop one
// decoded frame (the first or the last, as the family declares), blend_t with the previous
// chunk's blended last frames, keep `keep` frames (`keep + 1` for the first chunk), and the
// result is sliced to (F − 1)·rt + 1 frames. Chunks arrive in order; only the previous chunk's
// last frames are kept. Each chunk's kept frames are final once it is added (the next chunk
// blends into its own frames, reading only the kept tail), so `takeChunk` can hand them on
// instead of writing a whole output: a video streams chunk by chunk.

import { DistVaeError } from '../errors.js';
import type { Tensor } from '../tensor.js';

export interface TemporalLayout {
  chunks: number;
  /** Blend extent and kept frames per chunk, in output frames. */
  blend: number;
  keep: number;
  dropFrame: 'first' | 'last';
  outFrames: number;
}

/** Output of one temporal chunk, (B, C, f, H, W), after its spatial assembly. */
export class TemporalAssembler {
  private previousTail: { frames: number; data: Float32Array } | null = null;
  private nextChunk = 0;
  private written = 0;
  private readonly whole: Float32Array | null;

  /** `streaming`: chunks are taken with `takeChunk` and no whole output is allocated. */
  constructor(
    private readonly layout: TemporalLayout,
    private readonly dims: { batch: number; channels: number; height: number; width: number },
    options: { streaming?: boolean } = {},
  ) {
    this.whole = options.streaming ? null : new Float32Array(dims.batch * dims.channels * layout.outFrames * dims.height * dims.width);
  }

  /** The whole output (not when streaming). */
  get output(): Float32Array {
    if (!this.whole) throw new Error('unreachable: a streaming temporal assembler holds no whole output');
    return this.whole;
  }

  get outputDims(): number[] {
    const d = this.dims;
    return [d.batch, d.channels, this.layout.outFrames, d.height, d.width];
  }

  /** Adds chunk `index` into the whole output. */
  add(index: number, chunk: Tensor): void {
    const { t0, frames } = this.takeChunk(index, chunk);
    const frame = this.dims.height * this.dims.width;
    const keep = frames.dims[2]!;
    const outFrames = this.layout.outFrames;
    for (let p = 0; p < this.dims.batch * this.dims.channels; p++) {
      this.output.set(frames.data.subarray(p * keep * frame, (p + 1) * keep * frame), (p * outFrames + t0) * frame);
    }
  }

  /** Adds chunk `index` and returns its final frames [t0, t0 + keep) of the output, (B, C, keep, H, W). */
  takeChunk(index: number, chunk: Tensor): { t0: number; frames: Tensor } {
    if (index !== this.nextChunk)
      throw new DistVaeError('RUNTIME_FAILED', `temporal chunk ${index} arrived before chunk ${this.nextChunk}`);
    const [b, c, f, h, w] = chunk.dims as [number, number, number, number, number];
    const d = this.dims;
    if (chunk.dims.length !== 5 || b !== d.batch || c !== d.channels || h !== d.height || w !== d.width) {
      throw new DistVaeError(
        'TENSOR_INVALID',
        `temporal chunk ${index} has dims [${chunk.dims.join(', ')}], expected [${d.batch}, ${d.channels}, f, ${d.height}, ${d.width}]`,
      );
    }
    const frame = h * w;
    const planes = b * c;
    // Drop the frame the family's causal decoder repeats at the start (or end) of later chunks.
    const skip = index > 0 && this.layout.dropFrame === 'first' ? 1 : 0;
    const frames = index > 0 ? f - 1 : f;
    const at = (p: number, t: number) => (p * f + t + skip) * frame;
    const data = new Float32Array(planes * frames * frame);
    for (let p = 0; p < planes; p++) data.set(chunk.data.subarray(at(p, 0), at(p, 0) + frames * frame), p * frames * frame);
    if (this.previousTail) {
      const prev = this.previousTail;
      const e = Math.min(prev.frames, frames, this.layout.blend);
      for (let p = 0; p < planes; p++) {
        for (let t = 0; t < e; t++) {
          const wb = t / e;
          const a = (p * prev.frames + prev.frames - e + t) * frame;
          const o = (p * frames + t) * frame;
          for (let i = 0; i < frame; i++) data[o + i] = prev.data[a + i]! * (1 - wb) + data[o + i]! * wb;
        }
      }
    }
    const keep = Math.min(frames, index === 0 ? this.layout.keep + 1 : this.layout.keep, this.layout.outFrames - this.written);
    const kept = new Float32Array(planes * keep * frame);
    for (let p = 0; p < planes; p++) kept.set(data.subarray(p * frames * frame, (p * frames + keep) * frame), p * keep * frame);
    const t0 = this.written;
    this.written += keep;
    const tail = Math.min(this.layout.blend, frames);
    const tailData = new Float32Array(planes * tail * frame);
    for (let p = 0; p < planes; p++)
      tailData.set(data.subarray((p * frames + frames - tail) * frame, (p * frames + frames) * frame), p * tail * frame);
    this.previousTail = { frames: tail, data: tailData };
    this.nextChunk++;
    return { t0, frames: { dims: [b, c, keep, h, w], data: kept } };
  }

  get complete(): boolean {
    return this.nextChunk === this.layout.chunks;
  }
}
