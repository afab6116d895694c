// Whole-file reads and (atomic) writes for the tensor and weight codecs, with file-system
// failures turned into DistVaeErrors that name the path.

import { readFileSync, statSync } from 'node:fs';
import { DistVaeError } from '../errors.js';
import { refuseIfNotRegular } from './file-source.js';
import { writeFileAtomic } from './atomic-file.js';

/**
 * Reads a whole regular file. A device or pipe (/dev/zero under a `.npy` name) has no size to
 * bound the read by and is refused before reading.
 */
export function readFileBytes(path: string): Uint8Array {
  try {
    refuseIfNotRegular(path, statSync(path));
    return readFileSync(path);
  } catch (e) {
    if (e instanceof DistVaeError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new DistVaeError('FILE_NOT_FOUND', `${path}: no such file`, { cause: e });
    throw new DistVaeError('FILE_INVALID', `${path}: cannot read (${code ?? String(e)})`, { cause: e });
  }
}

/** Writes a whole file atomically (a temporary file renamed on success; see atomic-file.ts). */
export function writeFileBytes(path: string, bytes: Uint8Array): void {
  writeFileAtomic(path, bytes);
}
