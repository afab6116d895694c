// Whole-file bytes of what a page is given: an ArrayBuffer or view, a Blob or File, or a URL
// (fetched, refused on an HTTP error status). Sizes are bounded before the bytes are read.

import { DistVaeError, reason, refuse } from '../errors.js';

/** Something a page holds bytes of: a buffer, a view, a Blob / File, or a URL to fetch. */
export type ByteInput = ArrayBuffer | ArrayBufferView | BlobLike | string | URL;

/** The part of Blob / File the loader reads. */
export interface BlobLike {
  readonly size: number;
  readonly name?: string;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** Largest file a page reads whole (a 32-bit WebAssembly memory holds at most 4 GiB). */
export const MAX_INPUT_BYTES = 2 ** 31;

function tooLarge(name: string, size: number): never {
  const r = reason(
    'INPUT_TOO_LARGE',
    name,
    size,
    `at most ${MAX_INPUT_BYTES} bytes`,
    `${name} is ${size} bytes; a page reads at most ${MAX_INPUT_BYTES} bytes whole`,
  );
  refuse('INVALID_ARGUMENT', r);
}

/** Whether `input` is a Blob or File (or reads like one). */
export function isBlob(input: unknown): input is BlobLike {
  return (
    typeof input === 'object' &&
    input !== null &&
    typeof (input as BlobLike).arrayBuffer === 'function' &&
    typeof (input as BlobLike).size === 'number'
  );
}

/** The bytes of `input` and a name for messages. */
export async function readBytes(
  input: ByteInput,
  options: { signal?: AbortSignal; name?: string } = {},
): Promise<{ bytes: Uint8Array; name: string }> {
  if (input instanceof ArrayBuffer) return { bytes: new Uint8Array(input), name: options.name ?? '<ArrayBuffer>' };
  if (ArrayBuffer.isView(input))
    return { bytes: new Uint8Array(input.buffer, input.byteOffset, input.byteLength), name: options.name ?? '<buffer>' };
  if (isBlob(input)) {
    const name = input.name ?? options.name ?? '<Blob>';
    if (input.size > MAX_INPUT_BYTES) tooLarge(name, input.size);
    return { bytes: new Uint8Array(await input.arrayBuffer()), name };
  }
  const url = String(input);
  let response: Response;
  try {
    response = await fetch(url, options.signal ? { signal: options.signal } : {});
  } catch (cause) {
    if (options.signal?.aborted) throw new DistVaeError('ABORTED', `fetching ${url} aborted`, { cause });
    throw new DistVaeError('FILE_NOT_FOUND', `could not fetch ${url}: ${(cause as Error).message}`, {
      cause,
      reasons: [reason('FETCH_FAILED', 'url', url, 'a reachable URL')],
    });
  }
  if (!response.ok) {
    refuse(
      'FILE_NOT_FOUND',
      reason('FETCH_FAILED', 'url', url, 'a URL that answers 200', `fetching ${url} answered HTTP ${response.status}`),
    );
  }
  const length = Number(response.headers.get('content-length') ?? 0);
  if (length > MAX_INPUT_BYTES) tooLarge(url, length);
  return { bytes: new Uint8Array(await response.arrayBuffer()), name: url };
}
