// The Node file behind a ByteSource: one open file handle, its size from fstat, and positioned
// reads of exactly the bytes asked for. Only regular files are opened — a device (/dev/zero,
// /dev/urandom) or a FIFO under a weights or latents name has no size to bound reads by and is
// refused before anything is read.

import type { Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DistVaeError } from '../errors.js';
import { checkRange, MAX_READ_BYTES, type ByteSource } from './byte-source.js';

/** A ByteSource over a file; call `close()` when done (or use `withFileSource`). */
export interface FileByteSource extends ByteSource {
  close(): Promise<void>;
}

/** Opens a file for bounded random-access reads (close it when done). */
export async function openFileSource(path: string): Promise<FileByteSource> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (e) {
    throw fileError(path, e);
  }
  try {
    const stats = await handle.stat();
    refuseIfNotRegular(path, stats);
    return new NodeFileSource(handle, stats.size, path, resolve(path));
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** Refuses a device, pipe or folder: reads are bounded by a file's size, and those have none. */
export function refuseIfNotRegular(path: string, stats: Stats): void {
  if (stats.isFile()) return;
  const kind = stats.isDirectory()
    ? 'a folder'
    : stats.isCharacterDevice() || stats.isBlockDevice()
      ? 'a device'
      : stats.isFIFO()
        ? 'a pipe'
        : 'not a regular file';
  throw new DistVaeError('FILE_INVALID', `${path} is ${kind}, not a regular file: files are read only when their size is known`);
}

/** Opens `path`, runs `use`, and closes the file whatever happens. */
export async function withFileSource<T>(path: string, use: (source: FileByteSource) => Promise<T>): Promise<T> {
  const source = await openFileSource(path);
  try {
    return await use(source);
  } finally {
    await source.close();
  }
}

class NodeFileSource implements FileByteSource {
  constructor(
    private readonly handle: FileHandle,
    readonly size: number,
    readonly name: string,
    readonly path: string,
  ) {}

  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    if (length > MAX_READ_BYTES) throw new Error(`unreachable: a read of ${length} bytes exceeds MAX_READ_BYTES (use readAll)`);
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await this.handle.read(out, done, length - done, offset + done));
      } catch (e) {
        throw fileError(this.name, e);
      }
      if (bytesRead === 0)
        throw new DistVaeError(
          'FILE_INVALID',
          `${this.name}: file ended at byte ${offset + done} of the ${this.size} fstat reported (changed while read?)`,
        );
      done += bytesRead;
    }
    return out;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

function fileError(path: string, e: unknown): DistVaeError {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new DistVaeError('FILE_NOT_FOUND', `${path}: no such file`, { cause: e });
  if (code === 'EISDIR') return new DistVaeError('FILE_INVALID', `${path} is a folder, not a regular file`, { cause: e });
  return new DistVaeError('FILE_INVALID', `${path}: cannot read (${code ?? String(e)})`, { cause: e });
}
