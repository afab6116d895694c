// Video output through the system `ffmpeg`: a decoded (B, C, F, H, W) sample becomes one MP4
// (H.264) or WebM (VP9) file per batch item, with the family's value mapping as for PNG
// (io/image.ts) and 8-bit RGB frames streamed to ffmpeg's stdin. ffmpeg is not a dependency:
// when it is missing, the error says how to install it; callers check before decoding. An
// aborted write kills ffmpeg and removes its partial file; so does a process exiting (or ended
// by a signal, through `killVideoEncoders`) while ffmpeg runs.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { unlinkSync } from 'node:fs';
import { extname } from 'node:path';
import { withTemporaryPath } from './atomic-file.js';
import { abortedError, DistVaeError, reason, refuse } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { imagesOf, sampleToImage, type SampleRange } from './image.js';

export const VIDEO_EXTENSIONS = ['.mp4', '.webm'] as const;

/** Encoder settings per container: widely playable 4:2:0 video at visually lossless quality. */
const ENCODERS: Readonly<Record<(typeof VIDEO_EXTENSIONS)[number], string[]>> = {
  '.mp4': ['-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-crf', '18', '-movflags', '+faststart'],
  '.webm': ['-c:v', 'libvpx-vp9', '-pix_fmt', 'yuv420p', '-crf', '30', '-b:v', '0'],
};

/** The frame rate written when none is asked for (LTX-2 and HunyuanVideo pipelines export at 24). */
export const DEFAULT_FPS = 24;

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

/**
 * Runs ffmpeg on `frames` streamed to its stdin, writing `output` (its last argument); rejects
 * with ffmpeg's own message on failure, and with ABORTED once an aborted ffmpeg is gone.
 */
function encode(command: string, args: string[], output: string, frames: Iterable<Uint8Array>, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedError(signal, 'video encoding'));
    const child = spawn(command, [...args, output], { stdio: ['pipe', 'ignore', 'pipe'] });
    liveEncoders.set(child, output);
    let stderr = '';
    let failed = false;
    const fail = (e: DistVaeError) => {
      if (!failed) reject(e);
      failed = true;
    };
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    child.on('error', (e: NodeJS.ErrnoException) => {
      liveEncoders.delete(child);
      fail(e.code === 'ENOENT' ? ffmpegMissing(command, e) : new DistVaeError('RUNTIME_FAILED', `ffmpeg could not be started: ${e.message}`, { cause: e }));
    });
    child.on('close', (code) => {
      liveEncoders.delete(child);
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) fail(abortedError(signal, 'video encoding'));
      else if (code === 0) resolve();
      else fail(new DistVaeError('RUNTIME_FAILED', `ffmpeg exited with code ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`));
    });
    // A closed pipe shows up as an exit code; the write error itself adds nothing.
    child.stdin.on('error', () => undefined);
    const iterator = frames[Symbol.iterator]();
    const pump = () => {
      for (let next = iterator.next(); !next.done; next = iterator.next()) {
        if (!child.stdin.write(next.value)) return void child.stdin.once('drain', pump);
      }
      child.stdin.end();
    };
    pump();
  });
}

/**
 * Writes a decoded (B, C, F, H, W) sample as video: one file for batch 1, else `<stem>-<b><ext>`
 * per batch item. Odd sizes are padded by one black row / column (4:2:0 needs even sizes).
 * Returns the paths written.
 */
export async function writeSampleVideo(path: string, sample: Tensor, range: SampleRange, options: VideoOptions = {}): Promise<string[]> {
  const ext = extname(path).toLowerCase() as (typeof VIDEO_EXTENSIONS)[number];
  if (!isVideoPath(path)) {
    refuse('INVALID_ARGUMENT', reason('VIDEO_EXTENSION', 'path', path, `a path ending in ${VIDEO_EXTENSIONS.join(' or ')}`));
  }
  if (sample.dims.length !== 5) {
    throw new DistVaeError('TENSOR_INVALID', `a video needs a (B, C, F, H, W) sample, got [${sample.dims.join(', ')}]`);
  }
  const fps = options.fps ?? DEFAULT_FPS;
  if (!(Number.isFinite(fps) && fps > 0)) {
    refuse('INVALID_ARGUMENT', reason('FPS_INVALID', 'fps', fps, 'a number > 0'));
  }
  const command = options.ffmpeg ?? 'ffmpeg';
  const [batch, , frameCount] = sample.dims as [number, number, number];
  const { channels, height, width, frames } = imagesOf(sampleToImage(sample, range));
  const stem = path.slice(0, path.length - ext.length);
  const paths = batch === 1 ? [path] : Array.from({ length: batch }, (_, b) => `${stem}-${String(b).padStart(String(batch - 1).length, '0')}${ext}`);
  for (const [b, out] of paths.entries()) {
    const args = [
      '-hide_banner', '-loglevel', 'error', '-y',
      '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${width}x${height}`, '-framerate', String(fps), '-i', '-',
      '-vf', 'pad=ceil(iw/2)*2:ceil(ih/2)*2',
      ...ENCODERS[ext],
    ];
    const mine = frames.slice(b * frameCount, (b + 1) * frameCount);
    // ffmpeg writes a temporary file renamed on success: a failed encode leaves nothing at `out`.
    await withTemporaryPath(out, (temporary) =>
      encode(command, args, temporary, (function* () {
        for (const image of mine) yield rgb24(image, channels, height * width);
      })(), options.signal),
    );
  }
  return paths;
}
