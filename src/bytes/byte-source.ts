// Random-access bytes under every file reader (safetensors, .pth, .npy, latents): a size, a
// name for messages, and bounded reads at an offset. Readers never ask for a whole file; they
// read a header, then the ranges they need. This module runs in a browser (no `node:` imports):
// an in-memory buffer, a `Blob` (a `File` from an <input>), or an HTTP server (Range requests,
// or the whole body of one that ignores them, read as it streams). The Node file handle lives in
// `file-source.ts`.

import { DistVaeError, reason } from '../errors.js';

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
  /**
   * Largest file read whole from a server that ignores Range (default 2^31 bytes, what a page's
   * 32-bit WebAssembly memory can take); a larger one is refused naming the size.
   */
  maxWholeBytes?: number;
}

/**
 * A source over a URL: the size comes from a HEAD request's Content-Length, each read is one
 * `Range: bytes=a-b` GET answering 206 with exactly those bytes. A server that ignores Range (a
 * plain static server such as `python3 -m http.server` answers 200 with the whole file) is read
 * once instead, as its body streams: the body fills one buffer of the file's size (never more
 * than the file), each read resolves as soon as the body has reached the end of its range, and
 * no further request is made.
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
  const maxWhole = options.maxWholeBytes ?? 2 ** 31;
  // Set by the first GET answered 200: every read is served from that body from then on.
  let whole: StreamedBody | null = null;
  return {
    size,
    name,
    read: async (offset, length) => {
      checkRange({ size, name }, offset, length);
      if (length === 0) return new Uint8Array(0);
      if (whole) return whole.read(offset, length);
      let response: Response;
      try {
        response = await doFetch(url, { headers: { ...(options.headers ?? {}), Range: `bytes=${offset}-${offset + length - 1}` } });
      } catch (e) {
        return fail(`range request failed (${(e as Error).message})`, e);
      }
      if (response.status === 200) {
        // Reads in flight together may all be answered 200: the first body is kept, the others dropped.
        if (whole) void response.body?.cancel().catch(() => undefined);
        else {
          if (size > maxWhole) {
            void response.body?.cancel().catch(() => undefined);
            throw new DistVaeError(
              'INVALID_ARGUMENT',
              `${name} is ${size} bytes and its server ignores Range requests (it answered 200 with the whole file); a page reads at most ${maxWhole} bytes whole: serve it from a server with Range support`,
              { reasons: [reason('INPUT_TOO_LARGE', 'url', url, `at most ${maxWhole} bytes from a server without Range support`)] },
            );
          }
          whole = new StreamedBody(response, size, fail);
        }
        return whole.read(offset, length);
      }
      if (response.status !== 206)
        fail(`range request answered HTTP ${response.status}, expected 206 Partial Content or 200 with the whole file`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      if (bytes.length !== length) fail(`range request for ${length} bytes at ${offset} returned ${bytes.length}`);
      return bytes;
    },
  };
}

/**
 * The whole body of a 200 answer, read as it streams into one buffer of the file's size; a read
 * waits until the body has reached the end of its range. A body longer or shorter than the HEAD
 * request's Content-Length fails every read waiting and every read after.
 */
class StreamedBody {
  private readonly buffer: Uint8Array;
  private filled = 0;
  private error: unknown = null;
  private waiters: { end: number; resolve: () => void; reject: (e: unknown) => void }[] = [];

  constructor(
    response: Response,
    private readonly size: number,
    private readonly fail: (what: string, cause?: unknown) => never,
  ) {
    this.buffer = new Uint8Array(size);
    this.pump(response).catch((e: unknown) => {
      this.error = e;
      for (const w of this.waiters) w.reject(e);
      this.waiters = [];
    });
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const end = offset + length;
    if (end > this.filled) {
      if (this.error !== null) throw this.error;
      await new Promise<void>((resolve, reject) => this.waiters.push({ end, resolve, reject }));
    }
    return this.buffer.subarray(offset, end);
  }

  private async pump(response: Response): Promise<void> {
    const declared = response.headers.get('content-length');
    if (declared !== null && Number(declared) !== this.size)
      this.fail(`the server ignores Range and its 200 answer is ${declared} bytes, but HEAD said ${this.size}`);
    if (!response.body) this.take(new Uint8Array(await response.arrayBuffer()));
    else {
      const reader = response.body.getReader();
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (e) {
          return this.fail(
            `reading the whole file (the server ignores Range) failed after ${this.filled} bytes (${(e as Error).message})`,
            e,
          );
        }
        if (chunk.done) break;
        this.take(chunk.value);
      }
    }
    if (this.filled !== this.size) this.fail(`the server ignores Range and its body ended after ${this.filled} of ${this.size} bytes`);
  }

  private take(chunk: Uint8Array): void {
    if (this.filled + chunk.length > this.size)
      this.fail(`the server ignores Range and its body runs past the ${this.size} bytes HEAD announced`);
    this.buffer.set(chunk, this.filled);
    this.filled += chunk.length;
    const ready = this.waiters.filter((w) => w.end <= this.filled);
    this.waiters = this.waiters.filter((w) => w.end > this.filled);
    for (const w of ready) w.resolve();
  }
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
