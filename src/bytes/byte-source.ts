// Random-access bytes under every file reader (safetensors, .pth, .npy, latents): a size, a
// name for messages, and bounded reads at an offset. Readers never ask for a whole file; they
// read a header, then the ranges they need. This module runs in a browser (no `node:` imports):
// an in-memory buffer, a `Blob` (a `File` from an <input>), or an HTTP server honouring Range
// requests. The Node file handle lives in `file-source.ts`.

import { DistVaeError } from '../errors.js';

/** Random-access bytes of known size. */
export interface ByteSource {
  /** Total size in bytes. */
  readonly size: number;
  /** Names the source in error messages (a path, a file name, a URL). */
  readonly name: string;
  /** The absolute path of a local file, when the source is one (lets float32 weights stay in it as external data). */
  readonly path?: string;
  /**
   * Exactly `length` bytes starting at `offset`; a range outside [0, size] is refused with
   * FILE_INVALID. The result may share memory with the source's buffer: treat it as read-only.
   */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Releases an underlying handle (file descriptors); absent where there is nothing to release. */
  close?(): Promise<void>;
}

/** The most one `read` returns; readers split larger tensors into pieces of at most this. */
export const MAX_READ_BYTES = 64 * 1024 * 1024;

/** Refuses a range a source cannot serve, naming it. */
export function checkRange(source: Pick<ByteSource, 'size' | 'name'>, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > source.size) {
    throw new DistVaeError(
      'FILE_INVALID',
      `${source.name}: bytes [${offset}, ${offset + length}) lie outside the ${source.size}-byte file (truncated?)`,
    );
  }
}

/** A source over bytes already in memory (no copy). */
export function bytesSource(bytes: Uint8Array | ArrayBuffer, name = '<buffer>'): ByteSource {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return {
    size: view.length,
    name,
    read: async (offset, length) => {
      checkRange({ size: view.length, name }, offset, length);
      return view.subarray(offset, offset + length);
    },
  };
}

/** A source over a `Blob` or `File`: each read slices the blob, so the whole file is never loaded. */
export function blobSource(blob: Blob, name = (blob as { name?: string }).name ?? '<blob>'): ByteSource {
  return {
    size: blob.size,
    name,
    read: async (offset, length) => {
      checkRange({ size: blob.size, name }, offset, length);
      return new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
    },
  };
}

export interface HttpRangeOptions {
  /** Request headers sent with every request (e.g. an Authorization header). */
  headers?: Record<string, string>;
  /** The fetch to use; default the global one. */
  fetch?: typeof fetch;
  /** Names the source in messages; default the URL. */
  name?: string;
}

/**
 * A source over a URL served with HTTP Range support: the size comes from a HEAD request's
 * Content-Length, each read is one `Range: bytes=a-b` GET that must answer 206 with exactly
 * that many bytes (a server that ignores Range would send the whole file: refused).
 */
export async function httpRangeSource(url: string, options: HttpRangeOptions = {}): Promise<ByteSource> {
  const doFetch = options.fetch ?? fetch;
  const name = options.name ?? url;
  const fail = (what: string, cause?: unknown): never => {
    throw new DistVaeError('FILE_INVALID', `${name}: ${what}`, { cause });
  };
  let head: Response;
  try {
    head = await doFetch(url, { method: 'HEAD', ...(options.headers ? { headers: options.headers } : {}) });
  } catch (e) {
    return fail(`HEAD request failed (${(e as Error).message})`, e);
  }
  if (head.status === 404) throw new DistVaeError('FILE_NOT_FOUND', `${name}: HTTP 404`);
  if (!head.ok) fail(`HEAD answered HTTP ${head.status}`);
  const size = Number(head.headers.get('content-length'));
  if (!Number.isSafeInteger(size) || size < 0) fail(`HEAD gave no usable Content-Length (${head.headers.get('content-length')})`);
  return {
    size,
    name,
    read: async (offset, length) => {
      checkRange({ size, name }, offset, length);
      if (length === 0) return new Uint8Array(0);
      let response: Response;
      try {
        response = await doFetch(url, { headers: { ...(options.headers ?? {}), Range: `bytes=${offset}-${offset + length - 1}` } });
      } catch (e) {
        return fail(`range request failed (${(e as Error).message})`, e);
      }
      if (response.status !== 206) fail(`range request answered HTTP ${response.status}, expected 206 Partial Content (no Range support?)`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      if (bytes.length !== length) fail(`range request for ${length} bytes at ${offset} returned ${bytes.length}`);
      return bytes;
    },
  };
}

/** Reads [offset, offset + length) in pieces of at most MAX_READ_BYTES into one new buffer. */
export async function readAll(source: ByteSource, offset: number, length: number): Promise<Uint8Array> {
  checkRange(source, offset, length);
  if (length <= MAX_READ_BYTES) return source.read(offset, length);
  const out = new Uint8Array(length);
  for (let at = 0; at < length; at += MAX_READ_BYTES) {
    out.set(await source.read(offset + at, Math.min(MAX_READ_BYTES, length - at)), at);
  }
  return out;
}
