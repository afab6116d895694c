// .npy written band by band as a decode's rows finish: the header (numpy.save's format 1.0, with
// the final shape) first, then each band's rows written in place — in C order every plane
// (batch item × channel) of the sample is its own run of rows, so a band of rows lands as one
// positional write per plane — into an AtomicFile renamed on success. Memory holds one band,
// never the sample; the bytes are those writeNpy writes for the whole sample.

import { DistVaeError, reason } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { DTYPE_BYTES, encodeFromFloat32 } from '../weights/dtype.js';
import { AtomicFile } from '../bytes/atomic-file.js';
import { npyHeader, type NpyDType } from './npy.js';

/** The sample a NpyBandWriter writes: its final dims and the stored element type. */
export interface NpyStreamOptions {
  /** The whole sample's dims, `[...leading, height, width]` (at least 2). */
  dims: readonly number[];
  /** Stored element type; default F32. */
  dtype?: NpyDType;
}

/**
 * An .npy written band by band as a decode's rows finish (header with the final shape first),
 * into a temporary file renamed on `finish`; `abort` (or any failure) leaves nothing at the path.
 */
export class NpyBandWriter {
  private readonly file: AtomicFile;
  private readonly dims: readonly number[];
  private readonly dtype: NpyDType;
  private readonly dataStart: number;
  private rowsWritten = 0;

  constructor(path: string, options: NpyStreamOptions) {
    const dims = options.dims;
    if (
      dims.length < 2 ||
      !dims.every((d) => Number.isSafeInteger(d) && d >= 1) ||
      dims.reduce((a, d) => a * d, 1) > Number.MAX_SAFE_INTEGER / 8
    ) {
      const r = reason('NPY_SHAPE', 'dims', `[${dims.join(', ')}]`, 'at least 2 positive integer dims of a representable size');
      throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
    }
    this.dims = [...dims];
    this.dtype = options.dtype ?? 'F32';
    const header = npyHeader(dims, this.dtype);
    this.dataStart = header.length;
    this.file = new AtomicFile(path);
    this.file.write(header);
  }

  /** Appends rows: a `[...leading, h, width]` band of the sample, in order. */
  writeBand(band: Tensor): void {
    const lead = this.dims.slice(0, -2);
    const [height, width] = this.dims.slice(-2) as [number, number];
    const h = band.dims.at(-2)!;
    if (
      band.dims.length !== this.dims.length ||
      lead.some((d, i) => band.dims[i] !== d) ||
      band.dims.at(-1) !== width ||
      this.rowsWritten + h > height
    ) {
      this.abort();
      throw new DistVaeError(
        'TENSOR_INVALID',
        `band [${band.dims.join(', ')}] does not continue a [${this.dims.join(', ')}] sample at row ${this.rowsWritten}`,
      );
    }
    const planes = lead.reduce((a, d) => a * d, 1);
    const bytes = DTYPE_BYTES[this.dtype];
    for (let p = 0; p < planes; p++) {
      const rows = band.data.subarray(p * h * width, (p + 1) * h * width);
      this.file.writeAt(encodeFromFloat32(rows, this.dtype), this.dataStart + (p * height + this.rowsWritten) * width * bytes);
    }
    this.rowsWritten += h;
  }

  /** Ends the file (every row must have been written) and renames it into place. */
  finish(): void {
    const height = this.dims.at(-2)!;
    if (this.rowsWritten !== height) {
      this.abort();
      throw new DistVaeError('RUNTIME_FAILED', `.npy ended after ${this.rowsWritten} of ${height} rows`);
    }
    this.file.commit();
  }

  abort(): void {
    this.file.abort();
  }
}
