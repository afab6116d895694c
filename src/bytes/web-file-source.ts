// The browser counterpart of file-source.ts (package.json's `browser` map): a page has no file
// system, so opening a path is refused, naming the byte sources a page has instead.

import { DistVaeError } from '../errors.js';
import type { ByteSource } from './byte-source.js';

export type FileByteSource = ByteSource;

function noFiles(path: string): never {
  throw new DistVaeError('UNSUPPORTED', `cannot open ${path}: a page has no file system; use bytesSource, blobSource or httpRangeSource`);
}

export async function openFileSource(path: string): Promise<FileByteSource> {
  return noFiles(path);
}

export function refuseIfNotRegular(path: string): void {
  noFiles(path);
}

export async function withFileSource<T>(path: string, _use: (source: FileByteSource) => Promise<T>): Promise<T> {
  return noFiles(path);
}
