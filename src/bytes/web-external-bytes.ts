// The page build's stand-in for external-bytes.ts: a page reads weights from byte sources into
// memory, so no tensor names a file; one that does is refused instead of reaching node:fs.

import { DistVaeError } from '../errors.js';
import type { FileBytes } from './file-bytes.js';

/** Refuses: in a page no weight lies in a local file. */
export function readExternalBytes(file: FileBytes): Uint8Array {
  throw new DistVaeError(
    'UNSUPPORTED',
    `a page cannot read ${file.path}: weights in a page come from byte sources (ArrayBuffer, File, URL)`,
  );
}
