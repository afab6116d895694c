// PNG written band by band as a decode's rows finish: the header (IHDR, then tEXt chunks naming
// the plan, the distvae version and the VAE's content hash) first, then each band's rows —
// filtered (filter type None), deflated by one zlib stream and flushed as IDAT chunks — then
// IEND, all into an AtomicFile. Memory holds one band, never the image. 8- or 16-bit RGB (RGBA
// for 4 channels; one channel is replicated to grey RGB, as the whole-image writer does).

import { crc32 } from 'node:zlib';
import { Zlib } from 'fflate';
import { DistVaeError, reason } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { AtomicFile } from '../bytes/atomic-file.js';
import { channelAffine, imageValue, type ChannelAffine, type SampleRange } from './sample-range.js';

/** The size, channels, bit depth, value range and text chunks of a PNG written band by band. */
export interface PngStreamOptions {
  width: number;
  height: number;
  /** Channels of the sample (1, 3 or 4). */
  channels: number;
  bitDepth?: 8 | 16;
  range: SampleRange;
  /** tEXt chunks (Latin-1 keywords of 1–79 characters and Latin-1 text). */
  text?: Readonly<Record<string, string>>;
}

const SIGNATURE = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const latin1 = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff);

/** Writes a PNG band by band as a decode's rows finish (memory independent of its height), atomically. */
export class PngBandWriter {
  private readonly file: AtomicFile;
  private readonly deflate: Zlib;
  private rowsWritten = 0;
  private readonly bitDepth: 8 | 16;
  private readonly affine: ChannelAffine;

  constructor(
    path: string,
    private readonly options: PngStreamOptions,
  ) {
    const { width, height, channels } = options;
    this.bitDepth = options.bitDepth ?? 8;
    if (![1, 3, 4].includes(channels)) throw new DistVaeError('TENSOR_INVALID', `a PNG needs 1, 3 or 4 channels, got ${channels}`);
    this.affine = channelAffine(options.range, channels);
    if (!(width >= 1 && height >= 1 && width < 2 ** 31 && height < 2 ** 31)) {
      const r = reason('PNG_SIZE', 'size', `${width}x${height}`, 'each side in [1, 2^31)');
      throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
    }
    this.file = new AtomicFile(path);
    this.file.write(SIGNATURE);
    const ihdr = new Uint8Array(13);
    const v = new DataView(ihdr.buffer);
    v.setUint32(0, width);
    v.setUint32(4, height);
    ihdr.set([this.bitDepth, channels === 4 ? 6 : 2, 0, 0, 0], 8);
    this.chunk('IHDR', ihdr);
    for (const [keyword, text] of Object.entries(options.text ?? {})) this.chunk('tEXt', latin1(`${keyword}\0${text}`));
    this.deflate = new Zlib({ level: 6 }, (data) => {
      if (data.length > 0) this.chunk('IDAT', data);
    });
  }

  /** Appends rows: a (1, C, h, W) band of the sample (values in its range), in order. */
  writeBand(band: Tensor): void {
    const { width, height, channels } = this.options;
    const [b, c, h, w] = band.dims as number[];
    if (band.dims.length !== 4 || b !== 1 || c !== channels || w !== width || this.rowsWritten + h! > height) {
      throw new DistVaeError(
        'TENSOR_INVALID',
        `band [${band.dims.join(', ')}] does not continue a 1 x ${channels} x ${height} x ${width} image at row ${this.rowsWritten}`,
      );
    }
    const outChannels = channels === 4 ? 4 : 3;
    const bytesPerSample = this.bitDepth / 8;
    const rowBytes = 1 + width * outChannels * bytesPerSample;
    const max = this.bitDepth === 16 ? 65535 : 255;
    const out = new Uint8Array(rowBytes * h!);
    const plane = h! * w!;
    for (let y = 0; y < h!; y++) {
      let o = y * rowBytes + 1; // filter byte 0: None
      for (let x = 0; x < w!; x++) {
        for (let k = 0; k < outChannels; k++) {
          const c = channels === 1 ? 0 : k;
          const q = Math.round(imageValue(band.data[c * plane + y * w! + x]!, this.affine, c) * max);
          if (bytesPerSample === 2) out[o++] = q >> 8;
          out[o++] = q & 0xff;
        }
      }
    }
    this.rowsWritten += h!;
    this.deflate.push(out, false);
  }

  /** Ends the image (every row must have been written) and renames it into place. */
  finish(): void {
    if (this.rowsWritten !== this.options.height) {
      this.abort();
      throw new DistVaeError('RUNTIME_FAILED', `PNG ended after ${this.rowsWritten} of ${this.options.height} rows`);
    }
    this.deflate.push(new Uint8Array(0), true);
    this.chunk('IEND', new Uint8Array(0));
    this.file.commit();
  }

  abort(): void {
    this.file.abort();
  }

  private chunk(type: string, data: Uint8Array): void {
    const head = new Uint8Array(8);
    new DataView(head.buffer).setUint32(0, data.length);
    head.set(latin1(type), 4);
    const crc = new Uint8Array(4);
    new DataView(crc.buffer).setUint32(0, crc32(data, crc32(head.subarray(4))));
    this.file.write(head);
    this.file.write(data);
    this.file.write(crc);
  }
}
