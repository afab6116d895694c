// Video output through the system `ffmpeg`: a decoded (B, C, F, H, W) sample becomes one MP4
// (H.264) or WebM (VP9) file per batch item, with the family's value mapping as for PNG
// (io/image.ts) and 8-bit RGB frames streamed to ffmpeg's stdin — as they arrive, chunk by
// chunk (VideoFrameWriter), or from a whole sample (writeSampleVideo). ffmpeg is not a
// dependency: when it is missing, the error says how to install it; callers check before
// decoding. An aborted write kills ffmpeg and removes its partial file; so does a process
// exiting (or ended by a signal, through `killVideoEncoders`) while ffmpeg runs.

import { spawn, spawnSync, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { renameSync, rmSync, unlinkSync } from 'node:fs';
import { extname } from 'node:path';
import { temporaryPathFor } from '../bytes/atomic-file.js';
import { abortedError, DistVaeError, reason, refuse } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { imagesOf } from './image.js';
import { channelAffine, sampleToImage, type SampleRange } from './sample-range.js';

/** The video containers `writeSampleVideo` writes. */
export const VIDEO_EXTENSIONS = ['.mp4', '.webm'] as const;

/** Encoder settings per container: widely playable 4:2:0 video at visually lossless quality. */
const ENCODERS: Readonly<Record<(typeof VIDEO_EXTENSIONS)[number], string[]>> = {
  '.mp4': ['-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-crf', '18', '-movflags', '+faststart'],
  '.webm': ['-c:v', 'libvpx-vp9', '-pix_fmt', 'yuv420p', '-crf', '30', '-b:v', '0'],
};

/** The frame rate written when none is asked for (LTX-2 and HunyuanVideo pipelines export at 24). */
export const DEFAULT_FPS = 24;

/** Options of `writeSampleVideo`. */
export interface VideoOptions {
  /** Frames per second, > 0 (default 24). */
  fps?: number;
  /** The ffmpeg executable (default `ffmpeg`, looked up on PATH). */
  ffmpeg?: string;
  /** Aborting kills ffmpeg and removes its partial file (ABORTED). */
  signal?: AbortSignal;
}

/** ffmpeg processes running now, with the temporary file each writes. */
const liveEncoders = new Map<ChildProcess, string>();

/**
 * Kills every running ffmpeg at once and removes its partial file (a process that must exit
 * now, e.g. ended by a signal: ffmpeg would otherwise finish the file from what it was given).
 */
export function killVideoEncoders(): void {
  for (const [child, temporary] of liveEncoders) {
    child.kill('SIGKILL');
    try {
      unlinkSync(temporary);
    } catch {
      // Not created yet.
    }
  }
  liveEncoders.clear();
}
process.on('exit', killVideoEncoders);

/** Whether `path` ends in a video extension (VIDEO_EXTENSIONS). */
export function isVideoPath(path: string): boolean {
  return (VIDEO_EXTENSIONS as readonly string[]).includes(extname(path).toLowerCase());
}

function ffmpegMissing(command: string, cause?: unknown): DistVaeError {
  const r = reason(
    'FFMPEG_MISSING',
    'ffmpeg',
    command,
    'an ffmpeg executable on PATH',
    `video output (.mp4/.webm) needs the system ffmpeg, and "${command}" was not found: install it (e.g. apt-get install ffmpeg) or write .npy / .png instead`,
  );
  return new DistVaeError('UNSUPPORTED', r.message, { reasons: [r], cause });
}

/** Throws UNSUPPORTED with the install hint unless `ffmpeg -version` runs. */
export function checkFfmpeg(command = 'ffmpeg'): void {
  const probe = spawnSync(command, ['-version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) throw ffmpegMissing(command, probe.error);
}

/** 8-bit interleaved RGB of one (C, H, W) image in [0, 1] (grey replicated, alpha dropped). */
function rgb24(image: Float32Array, channels: number, plane: number): Uint8Array {
  const out = new Uint8Array(plane * 3);
  for (let i = 0; i < plane; i++) {
    for (let k = 0; k < 3; k++) out[i * 3 + k] = Math.round(image[(channels === 1 ? 0 : k) * plane + i]! * 255);
  }
  return out;
}

/** One ffmpeg process encoding rgb24 frames from its stdin into `output`. */
class FfmpegEncoder {
  private readonly child: ChildProcessWithoutNullStreams;
  private stderr = '';
  private failure: DistVaeError | null = null;
  private readonly closed: Promise<void>;

  constructor(command: string, args: string[], output: string, signal?: AbortSignal) {
    const child = spawn(command, [...args, output], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    liveEncoders.set(child, output);
    child.stdout.resume();
    child.stderr.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    // A closed pipe shows up as an exit code; the write error itself adds nothing.
    child.stdin.on('error', () => undefined);
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    this.closed = new Promise<void>((resolve) => {
      child.on('error', (e: NodeJS.ErrnoException) => {
        liveEncoders.delete(child);
        this.failure ??=
          e.code === 'ENOENT'
            ? ffmpegMissing(command, e)
            : new DistVaeError('RUNTIME_FAILED', `ffmpeg could not be started: ${e.message}`, { cause: e });
        resolve();
      });
      child.on('close', (code) => {
        liveEncoders.delete(child);
        signal?.removeEventListener('abort', onAbort);
        if (signal?.aborted) this.failure ??= abortedError(signal, 'video encoding');
        else if (code !== 0)
          this.failure ??= new DistVaeError(
            'RUNTIME_FAILED',
            `ffmpeg exited with code ${code}: ${this.stderr.trim().split('\n').slice(-3).join(' | ')}`,
          );
        resolve();
      });
    });
  }

  /** Writes one frame, waiting while ffmpeg's pipe is full (so frames never pile up in memory). */
  async write(frame: Uint8Array): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.child.stdin.write(frame)) return;
    await Promise.race([new Promise<void>((resolve) => this.child.stdin.once('drain', resolve)), this.closed]);
    if (this.failure) throw this.failure;
  }

  /** Ends the input and waits for ffmpeg; rejects with its own message on failure. */
  async end(): Promise<void> {
    this.child.stdin.end();
    await this.closed;
    if (this.failure) throw this.failure;
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }

  /** Resolves once the process is gone (after end or kill). */
  gone(): Promise<void> {
    return this.closed;
  }
}

/** The shape of the video a VideoFrameWriter receives: (B, C, F, H, W) with F frames in all. */
export interface VideoShape {
  batch: number;
  channels: number;
  frames: number;
  height: number;
  width: number;
}

/**
 * A video written as its frames arrive (a temporal chunk at a time): one ffmpeg per batch item,
 * started up front, each frame mapped and piped as soon as it is given (with the pipe's back
 * pressure), each file encoded to a temporary path renamed on `finish`. Memory holds the frames
 * being written, never the video. `abort` stops ffmpeg and leaves nothing.
 */
export class VideoFrameWriter {
  /** The paths written: `path` for batch 1, else `<stem>-<b><ext>`. */
  readonly paths: string[];
  private readonly temporaries: string[];
  private readonly encoders: FfmpegEncoder[];
  private framesWritten = 0;
  private done = false;

  constructor(
    path: string,
    private readonly shape: VideoShape,
    private readonly range: SampleRange,
    options: VideoOptions = {},
  ) {
    const ext = extname(path).toLowerCase() as (typeof VIDEO_EXTENSIONS)[number];
    if (!isVideoPath(path)) {
      refuse('INVALID_ARGUMENT', reason('VIDEO_EXTENSION', 'path', path, `a path ending in ${VIDEO_EXTENSIONS.join(' or ')}`));
    }
    const fps = options.fps ?? DEFAULT_FPS;
    if (!(Number.isFinite(fps) && fps > 0)) {
      refuse('INVALID_ARGUMENT', reason('FPS_INVALID', 'fps', fps, 'a number > 0'));
    }
    const { batch, channels, height, width } = shape;
    if (![1, 3, 4].includes(channels)) throw new DistVaeError('TENSOR_INVALID', `a video needs 1, 3 or 4 channels, got ${channels}`);
    channelAffine(range, channels); // a range that does not fit the channels is refused before ffmpeg starts
    const stem = path.slice(0, path.length - ext.length);
    this.paths =
      batch === 1 ? [path] : Array.from({ length: batch }, (_, b) => `${stem}-${String(b).padStart(String(batch - 1).length, '0')}${ext}`);
    const args = [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      '-s',
      `${width}x${height}`,
      '-framerate',
      String(fps),
      '-i',
      '-',
      '-vf',
      'pad=ceil(iw/2)*2:ceil(ih/2)*2',
      ...ENCODERS[ext],
    ];
    if (options.signal?.aborted) throw abortedError(options.signal, 'video encoding');
    // ffmpeg writes temporary files renamed on success: a failed encode leaves nothing at a path.
    this.temporaries = this.paths.map((p) => temporaryPathFor(p));
    const command = options.ffmpeg ?? 'ffmpeg';
    this.encoders = this.temporaries.map((t) => new FfmpegEncoder(command, args, t, options.signal));
  }

  /** Appends the next frames, a (B, C, f, H, W) sample in the family's range. */
  async writeFrames(frames: Tensor): Promise<void> {
    const { batch, channels, height, width } = this.shape;
    const [b, c, f, h, w] = frames.dims as number[];
    if (
      frames.dims.length !== 5 ||
      b !== batch ||
      c !== channels ||
      h !== height ||
      w !== width ||
      this.framesWritten + f! > this.shape.frames
    ) {
      await this.abort();
      throw new DistVaeError(
        'TENSOR_INVALID',
        `frames [${frames.dims.join(', ')}] do not continue a (${batch}, ${channels}, ${this.shape.frames}, ${height}, ${width}) video at frame ${this.framesWritten}`,
      );
    }
    const images = imagesOf(sampleToImage(frames, this.range)).frames;
    try {
      for (let bi = 0; bi < batch; bi++) {
        for (let fi = 0; fi < f!; fi++) await this.encoders[bi]!.write(rgb24(images[bi * f! + fi]!, channels, height * width));
      }
    } catch (e) {
      await this.abort();
      throw e;
    }
    this.framesWritten += f!;
  }

  /** Ends every file (all frames must have been written) and renames them into place; returns the paths. */
  async finish(): Promise<string[]> {
    if (this.framesWritten !== this.shape.frames) {
      await this.abort();
      throw new DistVaeError('RUNTIME_FAILED', `video ended after ${this.framesWritten} of ${this.shape.frames} frames`);
    }
    try {
      for (const encoder of this.encoders) await encoder.end();
      for (const [i, temporary] of this.temporaries.entries()) renameSync(temporary, this.paths[i]!);
    } catch (e) {
      await this.abort();
      throw e instanceof DistVaeError
        ? e
        : new DistVaeError('RUNTIME_FAILED', `writing ${this.paths.join(', ')} failed: ${(e as Error).message}`, { cause: e });
    }
    this.done = true;
    return this.paths;
  }

  /** Stops ffmpeg and removes the temporary files (idempotent; a no-op after finish). */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    for (const encoder of this.encoders) encoder.kill();
    await Promise.all(this.encoders.map((e) => e.gone()));
    for (const temporary of this.temporaries) rmSync(temporary, { force: true });
  }
}

/**
 * Writes a decoded (B, C, F, H, W) sample as video: one file for batch 1, else `<stem>-<b><ext>`
 * per batch item. Odd sizes are padded by one black row / column (4:2:0 needs even sizes).
 * Returns the paths written.
 */
export async function writeSampleVideo(path: string, sample: Tensor, range: SampleRange, options: VideoOptions = {}): Promise<string[]> {
  if (!isVideoPath(path)) {
    refuse('INVALID_ARGUMENT', reason('VIDEO_EXTENSION', 'path', path, `a path ending in ${VIDEO_EXTENSIONS.join(' or ')}`));
  }
  if (sample.dims.length !== 5) {
    throw new DistVaeError('TENSOR_INVALID', `a video needs a (B, C, F, H, W) sample, got [${sample.dims.join(', ')}]`);
  }
  const [batch, channels, frames, height, width] = sample.dims as [number, number, number, number, number];
  const writer = new VideoFrameWriter(path, { batch, channels, frames, height, width }, range, options);
  await writer.writeFrames(sample);
  return writer.finish();
}
