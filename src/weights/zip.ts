// Random access into a zip archive over a ByteSource, as torch.save writes them (stored
// entries, ZIP64 records past 4 GiB): the central directory is read once (bounded), and an
// entry's bytes are read by range — a stored entry directly, a deflated one inflated in
// bounded pieces only as far as the range asked for, never past its declared size. Nothing
// is decompressed before a caller has checked the declared sizes.

import { Inflate } from 'fflate';
import { DistVaeError } from '../errors.js';
import { MAX_READ_BYTES, readAll, type ByteSource } from '../bytes/byte-source.js';

export interface ZipEntry {
  readonly name: string;
  /** 0 stored, 8 deflate. */
  readonly method: number;
  readonly compressedSize: number;
  /** The size the directory declares; reads never produce more. */
  readonly size: number;
  readonly localHeaderOffset: number;
}

export interface ZipArchive {
  readonly entries: ReadonlyMap<string, ZipEntry>;
  /** Bytes [start, start + length) of an entry's uncompressed content. */
  read(entry: ZipEntry, start: number, length: number): Promise<Uint8Array>;
}

const EOCD_SIGNATURE = 0x06054b50;
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EOCD_SIGNATURE = 0x06064b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
const EOCD_BYTES = 22;
const MAX_COMMENT = 65535;
/** A state dict's directory holds one record per tensor storage: megabytes at most. */
const MAX_DIRECTORY_BYTES = 64 * 1024 * 1024;
/**
 * Compressed bytes pushed to the inflater at a time: deflate expands at most about 1032:1, so
 * one push never produces more than ~17 MB, however the entry was crafted.
 */
const INFLATE_PIECE = 16 * 1024;

export async function openZip(source: ByteSource): Promise<ZipArchive> {
  const fail = (message: string): never => {
    throw new DistVaeError('FILE_INVALID', `${source.name}: ${message}`);
  };
  const tailLength = Math.min(source.size, EOCD_BYTES + MAX_COMMENT);
  const tail = await source.read(source.size - tailLength, tailLength);
  const tv = view(tail);
  let at = -1;
  for (let i = tail.length - EOCD_BYTES; i >= 0; i--) {
    if (tv.getUint32(i, true) === EOCD_SIGNATURE) {
      at = i;
      break;
    }
  }
  if (at < 0) fail('no zip end-of-central-directory record (truncated, or not a zip archive)');
  let count = tv.getUint16(at + 10, true);
  let directorySize = tv.getUint32(at + 12, true);
  let directoryOffset = tv.getUint32(at + 16, true);
  if (count === 0xffff || directorySize === 0xffffffff || directoryOffset === 0xffffffff) {
    if (at < 20 || tv.getUint32(at - 20, true) !== ZIP64_LOCATOR_SIGNATURE) fail('zip64 sizes without a zip64 locator');
    const zip64At = safeNumber(tv.getBigUint64(at - 20 + 8, true), fail);
    const record = view(await source.read(zip64At, Math.min(56, source.size - zip64At)));
    if (record.byteLength < 56 || record.getUint32(0, true) !== ZIP64_EOCD_SIGNATURE)
      fail(`no zip64 end-of-central-directory record at byte ${zip64At}`);
    count = safeNumber(record.getBigUint64(32, true), fail);
    directorySize = safeNumber(record.getBigUint64(40, true), fail);
    directoryOffset = safeNumber(record.getBigUint64(48, true), fail);
  }
  if (directorySize > MAX_DIRECTORY_BYTES)
    fail(`central directory of ${directorySize} bytes exceeds the ${MAX_DIRECTORY_BYTES}-byte limit`);
  if (directoryOffset + directorySize > source.size)
    fail(`central directory [${directoryOffset}, ${directoryOffset + directorySize}) runs past the ${source.size}-byte file (truncated?)`);
  const directory = await readAll(source, directoryOffset, directorySize);
  const dv = view(directory);
  const entries = new Map<string, ZipEntry>();
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > directory.length || dv.getUint32(p, true) !== CENTRAL_SIGNATURE) fail(`central directory record ${i} is malformed`);
    const flags = dv.getUint16(p + 8, true);
    const method = dv.getUint16(p + 10, true);
    let compressedSize = dv.getUint32(p + 20, true);
    let size = dv.getUint32(p + 24, true);
    const nameLength = dv.getUint16(p + 28, true);
    const extraLength = dv.getUint16(p + 30, true);
    const commentLength = dv.getUint16(p + 32, true);
    let localHeaderOffset = dv.getUint32(p + 42, true);
    if (p + 46 + nameLength + extraLength > directory.length) fail(`central directory record ${i} runs past the directory`);
    const name = new TextDecoder().decode(directory.subarray(p + 46, p + 46 + nameLength));
    // ZIP64 extended information: the fields saturated above, in this order.
    for (let e = p + 46 + nameLength; e + 4 <= p + 46 + nameLength + extraLength;) {
      const id = dv.getUint16(e, true);
      const length = dv.getUint16(e + 2, true);
      if (id === 0x0001) {
        let q = e + 4;
        const next = (): number => {
          if (q + 8 > e + 4 + length) fail(`entry ${name}: zip64 extra field too short`);
          const v = safeNumber(dv.getBigUint64(q, true), fail);
          q += 8;
          return v;
        };
        if (size === 0xffffffff) size = next();
        if (compressedSize === 0xffffffff) compressedSize = next();
        if (localHeaderOffset === 0xffffffff) localHeaderOffset = next();
      }
      e += 4 + length;
    }
    if (flags & 1) fail(`entry ${name} is encrypted`);
    if (method !== 0 && method !== 8)
      fail(`entry ${name} uses compression method ${method}; only stored (0) and deflate (8) are supported`);
    if (method === 0 && compressedSize !== size)
      fail(`stored entry ${name} declares ${compressedSize} stored bytes for ${size} bytes of content`);
    entries.set(name, { name, method, compressedSize, size, localHeaderOffset });
    p += 46 + nameLength + extraLength + commentLength;
  }

  const dataOffset = async (entry: ZipEntry): Promise<number> => {
    const local = view(await source.read(entry.localHeaderOffset, Math.min(30, source.size - entry.localHeaderOffset)));
    if (local.byteLength < 30 || local.getUint32(0, true) !== LOCAL_SIGNATURE)
      fail(`entry ${entry.name}: no local header at byte ${entry.localHeaderOffset}`);
    const start = entry.localHeaderOffset + 30 + local.getUint16(26, true) + local.getUint16(28, true);
    if (start + entry.compressedSize > source.size)
      fail(`entry ${entry.name}: its ${entry.compressedSize} bytes at ${start} run past the ${source.size}-byte file (truncated?)`);
    return start;
  };

  return {
    entries,
    read: async (entry, start, length) => {
      if (start < 0 || length < 0 || start + length > entry.size)
        fail(`entry ${entry.name}: bytes [${start}, ${start + length}) lie outside its ${entry.size} bytes`);
      const from = await dataOffset(entry);
      if (entry.method === 0) return readAll(source, from + start, length);
      return inflateRange(source, entry, from, start, length, fail);
    },
  };
}

/** Inflates a deflated entry piece by piece, keeping only [start, start + length), stopping there. */
async function inflateRange(
  source: ByteSource,
  entry: ZipEntry,
  from: number,
  start: number,
  length: number,
  fail: (m: string) => never,
): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  let produced = 0;
  let ended = false;
  const inflate = new Inflate((chunk, final) => {
    const lo = Math.max(start, produced);
    const hi = Math.min(start + length, produced + chunk.length);
    if (hi > lo) out.set(chunk.subarray(lo - produced, hi - produced), lo - start);
    produced += chunk.length;
    if (produced > entry.size) fail(`entry ${entry.name} inflates past its declared ${entry.size} bytes`);
    if (final) ended = true;
  });
  for (let at = 0; at < entry.compressedSize && produced < start + length; at += INFLATE_PIECE) {
    const n = Math.min(INFLATE_PIECE, entry.compressedSize - at, MAX_READ_BYTES);
    try {
      inflate.push(await source.read(from + at, n), at + n >= entry.compressedSize);
    } catch (e) {
      if (e instanceof DistVaeError) throw e;
      fail(`entry ${entry.name} is not valid deflate data`);
    }
  }
  if (produced < start + length)
    fail(`entry ${entry.name} inflates to ${produced} bytes${ended ? '' : ' (cut short)'}, fewer than the ${start + length} needed`);
  return out;
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function safeNumber(value: bigint, fail: (m: string) => never): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) fail(`zip64 value ${value} is out of range`);
  return Number(value);
}
