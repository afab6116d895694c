// Output files that appear whole or not at all: bytes go to a hidden temporary file in the
// target's own folder (so the final rename stays on one file system and is atomic), which is
// renamed over the target only once everything is written and flushed. A failed write (a full
// disk), an error in the producer or an abort removes the temporary file: no partial output.

import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { DistVaeError, reason } from '../errors.js';

/** The file-system calls an AtomicFile makes (replaceable to inject failures in tests). */
export interface AtomicFileSystem {
  openSync(path: string, flags: string): number;
  /** At the file's current end, or at `position` when one is given. */
  writeSync(fd: number, bytes: Uint8Array, offset: number, length: number, position?: number): number;
  fsyncSync(fd: number): void;
  closeSync(fd: number): void;
  renameSync(from: string, to: string): void;
  unlinkSync(path: string): void;
}

const NODE_FS: AtomicFileSystem = {
  openSync: (path, flags) => openSync(path, flags),
  writeSync: (fd, bytes, offset, length, position) => writeSync(fd, bytes, offset, length, position),
  fsyncSync,
  closeSync,
  renameSync,
  unlinkSync,
};

let counter = 0;

/**
 * A hidden temporary name next to `path` that keeps its extension (ffmpeg picks its muxer from
 * it, and writes there for io/video.ts): `dir/.name.<pid>.<n>.partial.ext`.
 */
export function temporaryPathFor(path: string): string {
  const ext = extname(path);
  const stem = basename(path, ext);
  return join(dirname(path), `.${stem}.${process.pid}.${counter++}.partial${ext}`);
}

/** A file written whole or not at all: bytes go to a temporary file renamed over the target by `commit()`; `abort()` removes it. */
export class AtomicFile {
  private fd: number | null;
  private readonly tempPath: string;
  private finished = false;
  /** Bytes written so far. */
  written = 0;

  /** Opens a temporary file next to `path`; nothing is visible at `path` until `commit`. */
  constructor(
    readonly path: string,
    private readonly fs: AtomicFileSystem = NODE_FS,
  ) {
    this.tempPath = temporaryPathFor(path);
    try {
      this.fd = fs.openSync(this.tempPath, 'wx');
    } catch (e) {
      throw writeError(path, e);
    }
  }

  /** Appends bytes; on failure the temporary file is removed and the error names the target. */
  write(bytes: Uint8Array): void {
    this.writeBytes(bytes, undefined);
  }

  /**
   * Writes bytes at `position` (a file filled out of order, such as the planes of an .npy
   * written band by band); failures as for `write`.
   */
  writeAt(bytes: Uint8Array, position: number): void {
    this.writeBytes(bytes, position);
  }

  private writeBytes(bytes: Uint8Array, position: number | undefined): void {
    if (this.fd === null) throw new Error('unreachable: write after commit or abort');
    try {
      for (let at = 0; at < bytes.length;)
        at += this.fs.writeSync(this.fd, bytes, at, bytes.length - at, position === undefined ? undefined : position + at);
      this.written += bytes.length;
    } catch (e) {
      this.abort();
      throw writeError(this.path, e);
    }
  }

  /** Flushes and renames the temporary file over the target. */
  commit(): void {
    if (this.fd === null) throw new Error('unreachable: commit after commit or abort');
    try {
      this.fs.fsyncSync(this.fd);
      this.fs.closeSync(this.fd);
      this.fd = null;
      this.fs.renameSync(this.tempPath, this.path);
      this.finished = true;
    } catch (e) {
      this.abort();
      throw writeError(this.path, e);
    }
  }

  /** Removes the temporary file (idempotent; a no-op after commit). */
  abort(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.fd !== null) {
      try {
        this.fs.closeSync(this.fd);
      } catch {
        // Already failing: the unlink below is what matters.
      }
      this.fd = null;
    }
    try {
      this.fs.unlinkSync(this.tempPath);
    } catch {
      // Never created, or already gone.
    }
  }
}

/** Writes `bytes` to `path` atomically. */
export function writeFileAtomic(path: string, bytes: Uint8Array, fs?: AtomicFileSystem): void {
  const file = new AtomicFile(path, fs);
  file.write(bytes);
  file.commit();
}

/**
 * Runs `produce` against an AtomicFile for `path`, committing when it resolves and removing the
 * temporary file when it throws (the producer's error is rethrown).
 */
export async function withAtomicFile<T>(path: string, produce: (file: AtomicFile) => Promise<T>, fs?: AtomicFileSystem): Promise<T> {
  const file = new AtomicFile(path, fs);
  try {
    const result = await produce(file);
    file.commit();
    return result;
  } catch (e) {
    file.abort();
    throw e;
  }
}

function writeError(path: string, e: unknown): DistVaeError {
  if (e instanceof DistVaeError) return e;
  const code = (e as NodeJS.ErrnoException).code ?? String(e);
  const why = code === 'ENOSPC' ? 'no space left on the device' : code === 'EDQUOT' ? 'disk quota exceeded' : code;
  const r = reason(
    'OUTPUT_UNWRITABLE',
    'path',
    path,
    'a writable file path with room for the output',
    `cannot write ${path} (${why}); nothing was left at that path`,
  );
  return new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r], cause: e });
}
