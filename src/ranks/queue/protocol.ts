// What the coordinator and the workers of the queue transport agree on: the queue and key
// names of one decode, the data of a run job (one scheduler run of tiles), the binary tile
// payloads in Redis and how a payload is checked before it is blended. Latent slices and
// decoded tiles travel as raw little-endian float32 bytes in their own keys (with a TTL), never
// as job data or return values: BullMQ copies those into its events stream.

import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Tensor } from '../../tensor.js';
import { elementCount } from '../../tensor.js';
import type { Planes } from '../../tile/blend.js';

/** The queue coordinators and workers use unless told otherwise. */
export const DEFAULT_QUEUE = 'distvae';

/** The queue that holds the parent job of every decode (no worker takes from it). */
export function parentQueueOf(queue: string): string {
  return `${queue}-decodes`;
}

/** Redis keys of one decode; every one of them contains the decode id. */
export interface DecodeKeys {
  /** Exists while the coordinator wants results; workers write tiles only while it does. */
  alive: string;
  /** Tiles the coordinator has assembled (a retried run skips them). */
  done: string;
  input(index: number): string;
  output(index: number): string;
}

export function decodeKeys(queue: string, decodeId: string): DecodeKeys {
  const base = `distvae:${queue}:${decodeId}`;
  return { alive: `${base}:alive`, done: `${base}:done`, input: (i) => `${base}:in:${i}`, output: (i) => `${base}:out:${i}` };
}

/** A tile of a run: its raster index and the dims and SHA-256 of its latent slice. */
export interface RunTile {
  index: number;
  dims: number[];
  sha256: string;
}

/** Data of one run job: the tiles the scheduler dealt to one rank. */
export interface RunJobData {
  decodeId: string;
  rank: number;
  /** Content hash of the VAE the tiles must be decoded with. */
  vaeHash: string;
  tiles: RunTile[];
  /** Lifetime of a decoded tile's key (ms): a coordinator that vanished leaves nothing for long. */
  tileTtlMs: number;
}

/** Return value of a run job (small: it goes through BullMQ's events stream). */
export interface RunJobResult {
  worker: string;
  /** Tiles this attempt decoded (a retried run skips those already delivered). */
  tiles: number[];
  decoderSeconds: number;
  busySeconds: number;
  /** The decode had ended (failed or aborted) when the run was taken or between its tiles. */
  cancelled: boolean;
}

/** Progress message of a run job: tile `tile` is in its output key. */
export interface RunProgress {
  tile: number;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function bytesOf(data: Float32Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** A Float32Array over a copy of `bytes` (Redis replies may be unaligned views of a pool). */
export function float32Of(bytes: Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

/** Writes a decoded tile unless the decode has ended (0) or the tile is already assembled (2); 1 when written. */
const WRITE_TILE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 2 end
redis.call('HSET', KEYS[3], 'data', ARGV[3], 'dims', ARGV[4], 'dtype', 'float32', 'sha256', ARGV[5], 'worker', ARGV[6])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1`;

export async function writeTile(
  redis: Redis,
  keys: DecodeKeys,
  index: number,
  tile: Tensor,
  ttlMs: number,
  worker: string,
): Promise<'written' | 'ended' | 'assembled'> {
  const bytes = bytesOf(tile.data);
  const written = await redis.eval(
    WRITE_TILE,
    3,
    keys.alive,
    keys.done,
    keys.output(index),
    index,
    ttlMs,
    bytes,
    JSON.stringify(tile.dims),
    sha256(bytes),
    worker,
  );
  return written === 1 ? 'written' : written === 0 ? 'ended' : 'assembled';
}

/** A decoded tile as it came back, before it is checked. */
export interface TilePayload {
  data?: Buffer;
  dims?: string;
  dtype?: string;
  sha256?: string;
  worker?: string;
}

export async function readTile(redis: Redis, keys: DecodeKeys, index: number): Promise<TilePayload | null> {
  const fields = await redis.hgetallBuffer(keys.output(index));
  if (Object.keys(fields).length === 0) return null;
  const text = (name: string) => fields[name]?.toString('utf8');
  return {
    ...(fields['data'] ? { data: fields['data'] } : {}),
    dims: text('dims'),
    dtype: text('dtype'),
    sha256: text('sha256'),
    worker: text('worker'),
  } as TilePayload;
}

/**
 * The raw tile of a payload, checked against what the layout expects (height × width output
 * units, float32, as many bytes as its dims say, the SHA-256 the worker computed); otherwise a
 * sentence saying what is wrong. A tile that fails is never blended.
 */
export function checkTilePayload(
  payload: TilePayload,
  extent: { height: number; width: number },
): { leading: number[]; planes: Planes } | string {
  if (payload.dtype !== 'float32') return `dtype ${JSON.stringify(payload.dtype)}, expected "float32"`;
  let dims: unknown;
  try {
    dims = JSON.parse(payload.dims ?? '');
  } catch {
    return `dims ${JSON.stringify(payload.dims)} are not JSON`;
  }
  if (!Array.isArray(dims) || dims.length < 3 || !dims.every((d) => Number.isSafeInteger(d) && d > 0))
    return `dims ${JSON.stringify(dims)} are not a list of at least 3 positive integers`;
  const shape = dims as number[];
  const [height, width] = shape.slice(-2) as [number, number];
  if (height !== extent.height || width !== extent.width)
    return `shape [${shape.join(', ')}] ends in ${height}x${width}, expected ${extent.height}x${extent.width}`;
  const data = payload.data;
  if (!data || data.byteLength !== elementCount(shape) * 4)
    return `${data?.byteLength ?? 0} bytes for shape [${shape.join(', ')}] (expected ${elementCount(shape) * 4})`;
  if (sha256(data) !== payload.sha256)
    return `SHA-256 of the ${data.byteLength} bytes is not the ${String(payload.sha256).slice(0, 12)}… the worker computed (corrupted in transit or in Redis)`;
  const leading = shape.slice(0, -2);
  return { leading, planes: { planes: elementCount(leading), height, width, data: float32Of(data) } };
}
