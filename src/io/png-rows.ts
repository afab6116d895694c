// PNG read row by row: the file is read in 64 KiB pieces, its IDAT data inflated as a stream
// (fflate's Unzlib) and unfiltered one scanline at a time, so memory holds the scanlines a caller
// has not yet taken, never the image. Every colour type and bit depth the format allows (grey
// 1/2/4/8/16, RGB 8/16, palette 1/2/4/8, grey+alpha and RGBA 8/16) becomes RGB in [0, 1] as the
// whole-image reader (io/image.ts) makes it: grey replicated, palette looked up, alpha dropped,
// v / (2^depth − 1). Adam7-interlaced files are not streamed (a pass holds every 8th row of the
// whole image): `isInterlacedPng` tells the caller to read them whole instead.
// Bounds: the header's size (MAX_IMAGE_PIXELS), PLTE (≤ 256 entries), ancillary chunks skipped
// unread, decompressed data no longer than the scanlines the header declares.

import { closeSync, openSync, readSync } from 'node:fs';
import { Unzlib } from 'fflate';
import { DistVaeError } from '../errors.js';
import { MAX_IMAGE_PIXELS } from './image.js';

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** File bytes read (and inflated) at once: deflate expands at most ~1032×, so one piece inflates to ≤ 17 MiB. */
const PIECE = 16 * 1024;
/** Channels per colour type: grey, -, RGB, palette, grey+alpha, -, RGBA. */
const CHANNELS: Readonly<Record<number, number>> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
const DEPTHS: Readonly<Record<number, readonly number[]>> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

/** The PNG header fields the row reader needs. */
export interface PngHeader {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  interlaced: boolean;
}

/** A PNG's rows in order: `nextRow()` returns row y's R, G, B planes (3·W floats in [0, 1]). */
export class PngRowReader {
  readonly header: PngHeader;
  private readonly fd: number;
  private readonly piece = new Uint8Array(PIECE);
  private filePos = 8;
  private fileSize: number;
  private palette: Float32Array | null = null;
  private readonly inflate: Unzlib;
  /** Inflated bytes not yet unfiltered, in arrival order. */
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private ended = false;
  private previous: Uint8Array;
  private current: Uint8Array;
  private readonly bpp: number;
  private readonly stride: number;
  private inflated = 0;
  private rowsRead = 0;

  constructor(
    readonly path: string,
    fileSize: number,
  ) {
    this.fileSize = fileSize;
    try {
      this.fd = openSync(path, 'r');
    } catch (e) {
      throw new DistVaeError('FILE_NOT_FOUND', `${path}: cannot open (${(e as NodeJS.ErrnoException).code ?? String(e)})`, { cause: e });
    }
    try {
      const head = this.read(0, 33);
      if (!SIGNATURE.every((b, i) => head[i] === b)) this.bad('not a PNG (missing its signature)');
      const view = new DataView(head.buffer, head.byteOffset, 33);
      if (view.getUint32(8) !== 13 || String.fromCharCode(...head.subarray(12, 16)) !== 'IHDR') this.bad('the IHDR header is missing');
      const [width, height] = [view.getUint32(16), view.getUint32(20)];
      const [bitDepth, colorType, , , interlace] = head.subarray(24, 29);
      if (!(width >= 1 && height >= 1 && width * height <= MAX_IMAGE_PIXELS)) {
        throw new DistVaeError(
          'FILE_INVALID',
          `${path}: the PNG declares ${width} x ${height} pixels; images of at most ${MAX_IMAGE_PIXELS} pixels (16384 x 16384) are read`,
        );
      }
      if (!DEPTHS[colorType!]?.includes(bitDepth!)) this.bad(`colour type ${colorType} with bit depth ${bitDepth} is not a PNG format`);
      if (interlace! > 1) this.bad(`interlace method ${interlace} is not 0 or 1`);
      this.header = { width, height, bitDepth: bitDepth!, colorType: colorType!, interlaced: interlace === 1 };
      this.filePos = 33;
      const bits = CHANNELS[colorType!]! * bitDepth!;
      this.bpp = Math.max(1, bits / 8);
      this.stride = Math.ceil((width * bits) / 8);
      this.previous = new Uint8Array(this.stride);
      this.current = new Uint8Array(this.stride);
      this.inflate = new Unzlib((data, final) => {
        if (data.length > 0) {
          this.inflated += data.length;
          if (this.inflated > (this.stride + 1) * height)
            this.bad(`its image data inflates past the ${(this.stride + 1) * height} bytes of ${height} scanlines`);
          this.pending.push(data);
          this.pendingBytes += data.length;
        }
        if (final) this.ended = true;
      });
    } catch (e) {
      closeSync(this.fd);
      throw e;
    }
  }

  /** Row `rowsRead` as R, G, B planes of `width` values each, in [0, 1]. */
  nextRow(): Float32Array {
    const { width, height } = this.header;
    if (this.rowsRead >= height) throw new DistVaeError('INVALID_ARGUMENT', `${this.path}: row ${this.rowsRead} of ${height} asked for`);
    while (this.pendingBytes < this.stride + 1) {
      if (this.ended) this.bad(`its image data ends after ${this.rowsRead} of ${height} scanlines (truncated?)`);
      this.feed();
    }
    const filter = this.take(1)[0]!;
    const raw = this.take(this.stride);
    [this.previous, this.current] = [this.current, this.previous];
    this.unfilter(filter, raw, this.current, this.previous);
    this.rowsRead++;
    const out = new Float32Array(3 * width);
    this.toRgb(this.current, out);
    return out;
  }

  close(): void {
    closeSync(this.fd);
  }

  private bad(what: string): never {
    throw new DistVaeError('FILE_INVALID', `${this.path}: not a valid PNG: ${what}`);
  }

  private read(at: number, length: number): Uint8Array {
    const out = length <= PIECE ? this.piece.subarray(0, length) : new Uint8Array(length);
    const got = readSync(this.fd, out, 0, length, at);
    if (got !== length) this.bad(`the file ends at byte ${at + got} inside a chunk (truncated?)`);
    return out;
  }

  /** Reads the next chunk: IDAT data goes to the inflater, piece by piece; PLTE is kept; others are skipped. */
  private feed(): void {
    if (this.filePos + 12 > this.fileSize) this.bad(`the file ends at byte ${this.fileSize} without an IEND chunk (truncated?)`);
    const head = this.read(this.filePos, 8);
    const length = new DataView(head.buffer, head.byteOffset, 8).getUint32(0);
    const type = String.fromCharCode(...head.subarray(4, 8));
    const start = this.filePos + 8;
    if (start + length + 4 > this.fileSize) {
      this.bad(
        `chunk ${JSON.stringify(type)} at byte ${this.filePos} declares ${length} bytes, past the end of the ${this.fileSize}-byte file (truncated?)`,
      );
    }
    this.filePos = start + length + 4;
    if (type === 'IDAT') {
      for (let at = 0; at < length; at += PIECE) {
        const n = Math.min(PIECE, length - at);
        // The inflater may keep a reference to its input: give it its own copy.
        this.inflate.push(this.read(start + at, n).slice(), false);
      }
    } else if (type === 'PLTE') {
      if (length % 3 !== 0 || length > 768) this.bad(`its PLTE chunk is ${length} bytes, not 3 per entry for at most 256 entries`);
      const bytes = this.read(start, length);
      this.palette = Float32Array.from(bytes, (v) => v / 255);
    } else if (type === 'IEND') {
      this.inflate.push(new Uint8Array(0), true);
      if (!this.ended) this.bad('its image data stops inside the compressed stream');
    }
  }

  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const head = this.pending[0]!;
      const k = Math.min(head.length, n - filled);
      out.set(head.subarray(0, k), filled);
      filled += k;
      if (k === head.length) this.pending.shift();
      else this.pending[0] = head.subarray(k);
    }
    this.pendingBytes -= n;
    return out;
  }

  private unfilter(filter: number, raw: Uint8Array, out: Uint8Array, up: Uint8Array): void {
    const bpp = this.bpp;
    const n = raw.length;
    switch (filter) {
      case 0:
        out.set(raw);
        return;
      case 1:
        for (let i = 0; i < n; i++) out[i] = raw[i]! + (i >= bpp ? out[i - bpp]! : 0);
        return;
      case 2:
        for (let i = 0; i < n; i++) out[i] = raw[i]! + up[i]!;
        return;
      case 3:
        for (let i = 0; i < n; i++) out[i] = raw[i]! + (((i >= bpp ? out[i - bpp]! : 0) + up[i]!) >> 1);
        return;
      case 4:
        for (let i = 0; i < n; i++) {
          const a = i >= bpp ? out[i - bpp]! : 0;
          const b = up[i]!;
          const c = i >= bpp ? up[i - bpp]! : 0;
          const p = a + b - c;
          const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
          out[i] = raw[i]! + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
        }
        return;
      default:
        this.bad(`scanline ${this.rowsRead} has filter type ${filter} (valid: 0 to 4)`);
    }
  }

  /** One unfiltered scanline → R, G, B planes. */
  private toRgb(line: Uint8Array, out: Float32Array): void {
    const { width, bitDepth, colorType } = this.header;
    const channels = CHANNELS[colorType]!;
    const sample = (i: number): number => {
      if (bitDepth === 8) return line[i]!;
      if (bitDepth === 16) return (line[2 * i]! << 8) | line[2 * i + 1]!;
      const perByte = 8 / bitDepth;
      const shift = 8 - bitDepth * ((i % perByte) + 1);
      return (line[Math.floor(i / perByte)]! >> shift) & ((1 << bitDepth) - 1);
    };
    if (colorType === 3) {
      const palette = this.palette ?? this.bad('a palette image has no PLTE chunk before its image data');
      for (let x = 0; x < width; x++) {
        const k = sample(x);
        if (3 * k >= palette.length) this.bad(`pixel ${x} of row ${this.rowsRead - 1} is palette entry ${k} of ${palette.length / 3}`);
        for (let c = 0; c < 3; c++) out[c * width + x] = palette[3 * k + c]!;
      }
      return;
    }
    const max = 2 ** bitDepth - 1;
    if (bitDepth === 8 || bitDepth === 16) {
      // The common depths without the per-sample closure (it dominates a large image's read).
      const step = channels < 3 ? 0 : 1;
      for (let c = 0; c < 3; c++) {
        const plane = c * width;
        let k = c * step;
        if (bitDepth === 8) {
          for (let x = 0; x < width; x++, k += channels) out[plane + x] = line[k]! / max;
        } else {
          for (let x = 0; x < width; x++, k += channels) out[plane + x] = ((line[2 * k]! << 8) | line[2 * k + 1]!) / max;
        }
      }
      return;
    }
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 3; c++) out[c * width + x] = sample(x * channels + (channels < 3 ? 0 : c)) / max;
    }
  }
}
