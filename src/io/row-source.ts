// An encoder's input read band by band as a plan needs its rows: `openImageRows(path, range)` gives a
// RowSource whose `rows(y0, y1)` returns rows [y0, y1) of every plane, in the family's input range.
//   - PNG streams (io/png-rows.ts): rows are decoded as they are asked for and dropped once a later
//     band starts below them, so memory holds the rows between the lowest band start still
//     possible and the last row asked for — a band and its overlap, never the image.
//     Adam7-interlaced PNGs are read whole (each pass spans the whole image).
//   - .npy (B, C, H, W) / (B, C, F, H, W), values already in the input range: each band is one
//     positional read per plane, nothing kept.
//   - JPEG is read whole (a baseline JPEG's MCU rows could stream, jpeg-js cannot).
// Bands are asked in order of their start row (tiles overlap, so a band may start above the
// previous band's end, never above its start). Pixels map from [0, 1] to the range the family
// declares, per channel (its `sampleRange`, io/sample-range.ts: 'signed' → 2v − 1, diffusers'
// [−1, 1]; 'unit' → v, TAE's [0, 1]; a mean / std → (v − mean[c]) / std[c]).

import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { DistVaeError, reason, refuse } from '../errors.js';
import { channelAffine, imageToInput, inputValue, type ChannelAffine, type SampleRange } from './sample-range.js';
import { elementCount, type Tensor } from '../tensor.js';
import { decodeToFloat32, DTYPE_BYTES } from '../weights/dtype.js';
import { refuseIfNotRegular } from '../bytes/file-source.js';
import { readFileBytes } from '../bytes/files.js';
import { decodeImage } from './image.js';
import { parseNpyHeader } from './npy.js';
import { PngRowReader } from './png-rows.js';

/** An image input read band by band: dims (B, C, H, W) or (B, C, F, H, W), values in the family's input range. */
export interface RowSource {
  readonly dims: readonly number[];
  /** How the file is read: 'streamed' (PNG, .npy) or 'whole' (JPEG, interlaced PNG). */
  readonly reading: 'streamed' | 'whole';
  /** Rows [y0, y1) of every plane, (…, y1 − y0, W). `y0` never decreases between calls. */
  rows(y0: number, y1: number): Tensor;
  /** The most image rows this source has held at once (decoded, not yet dropped). */
  readonly peakRowsHeld: number;
  close(): void;
}

function checkBand(dims: readonly number[], y0: number, y1: number, last: number, source: string): void {
  const h = dims.at(-2)!;
  if (!(Number.isInteger(y0) && Number.isInteger(y1) && 0 <= y0 && y0 < y1 && y1 <= h)) {
    refuse(
      'INVALID_ARGUMENT',
      reason(
        'INVALID_ARGUMENT',
        'rows',
        `[${y0}, ${y1})`,
        `0 <= y0 < y1 <= ${h}`,
        `${source}: rows [${y0}, ${y1}) are not inside its ${h} rows`,
      ),
    );
  }
  if (y0 < last) {
    throw new DistVaeError(
      'INVALID_ARGUMENT',
      `${source}: rows from ${y0} asked for after a band starting at ${last}; bands come in order of their start`,
    );
  }
}

/** A source over a tensor already in memory (JPEG, interlaced PNG). */
export function tensorRows(image: Tensor, range: SampleRange, reading: 'streamed' | 'whole' = 'whole'): RowSource {
  const data = imageToInput(image, range).data;
  const dims = [...image.dims];
  const [h, w] = dims.slice(-2) as [number, number];
  const planes = data.length / (h * w);
  let last = 0;
  return {
    dims,
    reading,
    peakRowsHeld: h,
    rows(y0, y1) {
      checkBand(dims, y0, y1, last, 'image');
      last = y0;
      const out = new Float32Array(planes * (y1 - y0) * w);
      for (let p = 0; p < planes; p++) out.set(data.subarray((p * h + y0) * w, (p * h + y1) * w), p * (y1 - y0) * w);
      return { dims: [...dims.slice(0, -2), y1 - y0, w], data: out };
    },
    close() {},
  };
}

/** A PNG streamed row by row, holding the rows from the last band's start on. */
class PngRows implements RowSource {
  readonly reading = 'streamed';
  readonly dims: readonly number[];
  peakRowsHeld = 0;
  /** Held rows, first = row `first`: R, G, B planes of W values each, already mapped. */
  private held: Float32Array[] = [];
  private first = 0;
  private last = 0;
  private readonly affine: ChannelAffine;

  constructor(
    private readonly reader: PngRowReader,
    range: SampleRange,
  ) {
    const { width, height } = reader.header;
    this.dims = [1, 3, height, width];
    this.affine = channelAffine(range, 3);
  }

  rows(y0: number, y1: number): Tensor {
    checkBand(this.dims, y0, y1, this.last, this.reader.path);
    this.last = y0;
    // Rows above y0 can never be asked for again.
    this.held.splice(0, Math.min(this.held.length, y0 - this.first));
    this.first = y0;
    while (this.first + this.held.length < y1) {
      const row = this.reader.nextRow();
      if (this.first + this.held.length >= y0) {
        const w = this.dims[3]!;
        for (let i = 0; i < row.length; i++) row[i] = inputValue(row[i]!, this.affine, Math.floor(i / w));
        this.held.push(row);
      } else this.first++;
      this.peakRowsHeld = Math.max(this.peakRowsHeld, this.held.length);
    }
    const w = this.dims[3]!;
    const h = y1 - y0;
    const out = new Float32Array(3 * h * w);
    for (let y = 0; y < h; y++) {
      const row = this.held[y0 - this.first + y]!;
      for (let c = 0; c < 3; c++) out.set(row.subarray(c * w, (c + 1) * w), (c * h + y) * w);
    }
    return { dims: [1, 3, h, w], data: out };
  }

  close(): void {
    this.held = [];
    this.reader.close();
  }
}

/** The most bytes a .npy header may declare (numpy writes a few hundred). */
const MAX_NPY_HEADER = 1 << 20;

/** A .npy (B, C, H, W) / (B, C, F, H, W) of floats, read a band at a time by positional reads. */
function npyRows(path: string, size: number): RowSource {
  const fd = openSync(path, 'r');
  try {
    const lead = new Uint8Array(12);
    readSync(fd, lead, 0, 12, 0);
    const major = lead[6]!;
    const headerLength = major === 1 ? lead[8]! | (lead[9]! << 8) : new DataView(lead.buffer).getUint32(8, true);
    const prefix = major === 1 ? 10 : 12;
    if (headerLength > MAX_NPY_HEADER || prefix + headerLength > size) {
      throw new DistVaeError(
        'FILE_INVALID',
        `${path}: its .npy header declares ${headerLength} bytes (at most ${MAX_NPY_HEADER}, inside the ${size}-byte file)`,
      );
    }
    const head = new Uint8Array(prefix + headerLength);
    readSync(fd, head, 0, head.length, 0);
    const { dims, dtype, descr } = parseNpyHeader(head, path);
    if (dtype !== 'F32' && dtype !== 'F16' && dtype !== 'F64') {
      throw new DistVaeError('FILE_INVALID', `${path}: an image .npy holds float32, float16 or float64 values, not ${descr}`);
    }
    if ((dims.length !== 4 && dims.length !== 5) || !dims.every((d) => d >= 1)) {
      refuse(
        'TENSOR_INVALID',
        reason(
          'IMAGE_RANK',
          'image.dims',
          `(${dims.join(', ')})`,
          '(B, C, H, W) or (B, C, F, H, W), every size at least 1',
          `${path}: an image .npy is (B, C, H, W) or (B, C, F, H, W), got (${dims.join(', ')})`,
        ),
      );
    }
    const bytes = DTYPE_BYTES[dtype];
    const expected = elementCount(dims) * bytes;
    if (size - head.length !== expected) {
      throw new DistVaeError(
        'FILE_INVALID',
        `${path}: shape (${dims.join(', ')}) of ${descr} needs ${expected} data bytes, the file has ${size - head.length}${size - head.length < expected ? ' (truncated?)' : ''}`,
      );
    }
    const [h, w] = dims.slice(-2) as [number, number];
    const planes = expected / bytes / (h * w);
    let last = 0;
    let peak = 0;
    return {
      dims,
      reading: 'streamed',
      get peakRowsHeld() {
        return peak;
      },
      rows(y0, y1) {
        checkBand(dims, y0, y1, last, path);
        last = y0;
        peak = Math.max(peak, y1 - y0);
        const n = (y1 - y0) * w;
        const raw = new Uint8Array(n * bytes);
        const out = new Float32Array(planes * n);
        for (let p = 0; p < planes; p++) {
          readSync(fd, raw, 0, raw.length, head.length + (p * h + y0) * w * bytes);
          out.set(decodeToFloat32(raw, dtype), p * n);
        }
        return { dims: [...dims.slice(0, -2), y1 - y0, w], data: out };
      },
      close: () => closeSync(fd),
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/**
 * Opens an image input for band-wise reading (see the header): PNG, JPEG or .npy, told apart by
 * their signatures; pixels of PNG and JPEG mapped to `range`, .npy values taken as they are.
 */
export function openImageRows(path: string, range: SampleRange): RowSource {
  let size: number;
  try {
    const stats = statSync(path);
    refuseIfNotRegular(path, stats);
    size = stats.size;
  } catch (e) {
    if (e instanceof DistVaeError) throw e;
    throw new DistVaeError('FILE_NOT_FOUND', `${path}: no such file`, { cause: e });
  }
  const magic = new Uint8Array(8);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, magic, 0, 8, 0);
  } finally {
    closeSync(fd);
  }
  if (magic[0] === 0x93 && String.fromCharCode(...magic.subarray(1, 6)) === 'NUMPY') return npyRows(path, size);
  if (magic[0] === 0x89 && String.fromCharCode(...magic.subarray(1, 4)) === 'PNG') {
    const reader = new PngRowReader(path, size);
    if (!reader.header.interlaced) return new PngRows(reader, range);
    reader.close();
  }
  // JPEG, interlaced PNG, or something decodeImage refuses by name.
  const image = decodeImage(readFileBytes(path), path);
  return tensorRows(image, range);
}

/** Every row of a source as one tensor (an encoder that takes the whole image). */
export function readAllRows(source: RowSource): Tensor {
  return source.rows(0, source.dims.at(-2)!);
}
