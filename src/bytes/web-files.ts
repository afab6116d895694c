// The browser counterpart of files.ts (package.json's `browser` map): a page has no file
// system, so reading or writing by path is refused, naming what to do instead.

import { DistVaeError } from '../errors.js';

function noFiles(what: string, path: string): never {
  throw new DistVaeError(
    'UNSUPPORTED',
    `${what} ${path}: a page has no file system; pass the bytes (an ArrayBuffer, a File or a URL) instead`,
  );
}

export function readFileBytes(path: string): Uint8Array {
  return noFiles('cannot read', path);
}

export function writeFileBytes(path: string, _bytes: Uint8Array): void {
  noFiles('cannot write', path);
}
