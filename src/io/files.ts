// Whole-file reads and writes for the tensor and weight codecs, with file-system failures
// turned into DistVaeErrors that name the path.

import { readFileSync, writeFileSync } from 'node:fs';
import { DistVaeError, reason, refuse } from '../errors.js';

export function readFileBytes(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (e) {
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
