// Whole-file reads and writes for the tensor and weight codecs, with file-system failures
// turned into DistVaeErrors that name the path.

import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { refuseIfNotRegular } from '../sources/file-source.js';
import { DistVaeError, reason, refuse } from '../errors.js';

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

export function writeFileBytes(path: string, bytes: Uint8Array): void {
  try {
    writeFileSync(path, bytes);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    refuse('INVALID_ARGUMENT', reason('INVALID_ARGUMENT', 'path', path, 'a writable file path', `cannot write ${path} (${code})`), { cause: e });
  }
}
