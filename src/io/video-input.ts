// Video input for a video encoder, read through the system ffmpeg chunk by chunk: ffprobe gives
// the first video stream's size, ffmpeg decodes it to rgb24 on its stdout, and `chunks(n)` yields
// (1, 3, f ≤ n, H, W) tensors in the family's input range as the frames arrive (each byte first
// float32 b/255, as torch's uint8 → float32 / 255, so frames map as PNG pixels do). ffmpeg's pipe
// is read only as fast as chunks are taken (async iteration pauses the stream), so memory holds
// one chunk and the pipe's buffer, never the video. mp4 and webm (any container ffmpeg reads);
// ffmpeg missing is refused with the install hint (io/video.ts). Bounded: a frame of at most
// MAX_IMAGE_PIXELS, a chunk of at most MAX_CHUNK_FRAMES frames and MAX_CHUNK_BYTES float32 bytes.

import { spawn, spawnSync } from 'node:child_process';
import { DistVaeError, reason, refuse } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { MAX_IMAGE_PIXELS } from './image.js';
import { channelAffine, inputValue, type SampleRange } from './sample-range.js';
import { checkFfmpeg } from './video.js';

/** The most frames one chunk may hold. */
export const MAX_CHUNK_FRAMES = 1024;
/** The most float32 bytes one chunk may hold (2 GiB). */
export const MAX_CHUNK_BYTES = 2 ** 31;

/** A video read chunk by chunk (see the header). */
export interface VideoInput {
  readonly width: number;
  readonly height: number;
  /** The most frames held at once so far (decoded, not yet handed out). */
  readonly peakFramesHeld: number;
  /** The frames in order, `frames` at a time (the last chunk may be shorter), each (1, 3, f, H, W). */
  chunks(frames: number): AsyncGenerator<Tensor>;
}

/** Options of `openVideoInput`. */
export interface VideoInputOptions {
  /** The ffmpeg executable (default `ffmpeg`); ffprobe is looked up beside it by name. */
  ffmpeg?: string;
  ffprobe?: string;
}

/** Opens a video for chunked reading: probes its size now (refusing what cannot be read), decodes on `chunks`. */
export function openVideoInput(path: string, range: SampleRange, options: VideoInputOptions = {}): VideoInput {
  const ffmpeg = options.ffmpeg ?? 'ffmpeg';
  // Resolved first, so a range that cannot take RGB is refused before ffmpeg runs.
  const affine = channelAffine(range, 3);
  checkFfmpeg(ffmpeg);
  const probe = spawnSync(
    options.ffprobe ?? 'ffprobe',
    ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=width,height', '-of', 'json', path],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  if (probe.error || probe.status !== 0) {
    throw new DistVaeError(
      'FILE_INVALID',
      `${path}: ffprobe cannot read a video stream: ${(probe.stderr ?? String(probe.error)).trim().split('\n').slice(-2).join(' | ')}`,
    );
  }
  const stream = (JSON.parse(probe.stdout) as { streams?: { width?: number; height?: number }[] }).streams?.[0];
  const [width, height] = [stream?.width ?? 0, stream?.height ?? 0];
  if (!(Number.isSafeInteger(width) && Number.isSafeInteger(height) && width >= 1 && height >= 1 && width * height <= MAX_IMAGE_PIXELS)) {
    const r = reason(
      'IMAGE_TOO_LARGE',
      'video',
      `${width}x${height}`,
      `frames of at most ${MAX_IMAGE_PIXELS} pixels, each side at least 1`,
      `${path}: its video stream is ${width} x ${height}; frames of at most ${MAX_IMAGE_PIXELS} pixels are read`,
    );
    throw new DistVaeError('FILE_INVALID', r.message, { reasons: [r] });
  }
  let peak = 0;
  return {
    width,
    height,
    get peakFramesHeld() {
      return peak;
    },
    async *chunks(frames: number) {
      const most = Math.max(1, Math.min(MAX_CHUNK_FRAMES, Math.floor(MAX_CHUNK_BYTES / (3 * 4 * width * height))));
      if (!Number.isInteger(frames) || frames < 1 || frames > most) {
        refuse(
          'INVALID_ARGUMENT',
          reason(
            'FRAMES_INVALID',
            'frames',
            frames,
            `an integer in [1, ${most}] (a chunk of ${width} x ${height} frames holds at most ${MAX_CHUNK_BYTES / 2 ** 30} GiB)`,
          ),
        );
      }
      const child = spawn(
        ffmpeg,
        ['-v', 'error', '-nostdin', '-i', path, '-map', '0:v:0', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      const frameBytes = width * height * 3;
      const plane = width * height;
      let chunk = new Float32Array(3 * frames * plane);
      let held = 0;
      let at = 0; // bytes of the current frame received
      const frame = new Uint8Array(frameBytes);
      const emit = (f: number): Tensor => {
        // (1, 3, F, H, W): plane c of frame k at (c·F + k)·H·W.
        const out = f === frames ? chunk : new Float32Array(3 * f * plane);
        if (f !== frames) for (let c = 0; c < 3; c++) out.set(chunk.subarray(c * frames * plane, (c * frames + f) * plane), c * f * plane);
        return { dims: [1, 3, f, height, width], data: out };
      };
      try {
        for await (const piece of child.stdout as AsyncIterable<Buffer>) {
          let offset = 0;
          while (offset < piece.length) {
            const n = Math.min(frameBytes - at, piece.length - offset);
            frame.set(piece.subarray(offset, offset + n), at);
            at += n;
            offset += n;
            if (at < frameBytes) continue;
            at = 0;
            for (let i = 0; i < plane; i++)
              for (let c = 0; c < 3; c++)
                chunk[(c * frames + held) * plane + i] = inputValue(Math.fround(frame[i * 3 + c]! / 255), affine, c);
            held++;
            peak = Math.max(peak, held);
            if (held === frames) {
              yield emit(frames);
              chunk = new Float32Array(3 * frames * plane);
              held = 0;
            }
          }
        }
        const code = await exited;
        if (code !== 0)
          throw new DistVaeError(
            'FILE_INVALID',
            `${path}: ffmpeg could not decode it (exit ${code}): ${stderr.trim().split('\n').slice(-2).join(' | ')}`,
          );
        if (held > 0) yield emit(held);
      } finally {
        // A consumer that stops early ends ffmpeg with it.
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  };
}
