// Reading the bytes an external ONNX tensor names (a float32 weight left in its safetensors
// checkpoint): bounded positional reads of exactly that range. Node only; a page build maps
// this module to web-external-bytes.ts (package.json "browser"), where weights are never
// file-backed.

import { closeSync, openSync, readSync } from 'node:fs';
import { DistVaeError } from '../errors.js';
import type { FileBytes } from './file-bytes.js';

/** Reads the bytes an external tensor names. */
export function readExternalBytes(file: FileBytes): Uint8Array {
  const out = new Uint8Array(new ArrayBuffer(file.length));
  const fd = openSync(file.path, 'r');
  try {
    for (let at = 0; at < file.length;) {
      const n = readSync(fd, out, at, file.length - at, file.offset + at);
      if (n === 0) throw new DistVaeError('FILE_INVALID', `${file.path} ended at byte ${file.offset + at}, inside an external tensor`);
      at += n;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}
