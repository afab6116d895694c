// The input pixels of an encode's tiles, cut from an image in memory or pulled band by band from a
// row source (io/row-source.ts: PNG decoded as its rows are asked for, .npy by positional reads)
// as the tiles are asked for — so a tiled encode of a large PNG never holds the float image. A
// band is the rows of one tile row of the grid, [y0·r, y1·r): it is read when a tile of it (or of
// a later row) is first asked for, in order of its start as a row source wants, and dropped once
// every tile of it has been handed out. Tiles may be asked for out of raster order (ranks take
// their tiles a few ahead of each other): the bands between are read and kept until their tiles
// come. A tile asked for again after its band was dropped (a rank that failed, its tiles dealt
// again) is read from a fresh source (`reopen`), never from a copy of the image.

import { DistVaeError } from '../errors.js';
import type { Tile } from '../plan/grid.js';
import type { Tensor } from '../tensor.js';
import { sliceCols } from '../tile/blend.js';

/** Image rows read band by band, (B, C, H, W): a RowSource (io/row-source.ts) satisfies it. */
export interface ImageRows {
  readonly dims: readonly number[];
  /** Rows [y0, y1) of every plane; y0 never decreases between calls. */
  rows(y0: number, y1: number): Tensor;
}

/** An encoder's input: the image in memory, or its rows read as the plan needs them. */
export type ImageInput = Tensor | ImageRows;

/** Whether an input is an image already in memory. */
export function inMemory(image: ImageInput): image is Tensor {
  return 'data' in image;
}

/** Refuses a band holding a non-finite value (a .npy input), naming the image row it is on. */
function checkFinite(band: Tensor, y0: number): void {
  const bad = band.data.findIndex((v) => !Number.isFinite(v));
  if (bad < 0) return;
  const [h, w] = band.dims.slice(-2) as [number, number];
  const row = y0 + (Math.floor(bad / w) % h);
  throw new DistVaeError('TENSOR_INVALID', `the image holds a non-finite value (${band.data[bad]}) on row ${row}`);
}

/** A tile's rows and columns in input pixels. */
type TileRect = Pick<Tile, 'y0' | 'y1' | 'x0' | 'x1'>;

/** Cuts the input pixels of a grid's tiles from an image input (see the header). */
export class TileBands {
  /** Tile rows of the grid by their start, ascending: [y0, y1) in input pixels and the tiles in each. */
  private readonly bands: { y0: number; y1: number; tiles: Set<number> }[] = [];
  private readonly bandOf: number[] = [];
  private readonly held = new Map<number, Tensor>();
  /** Bands read from the source so far (the next is read next). */
  private read = 0;
  private heldBytes = 0;
  /** The most bytes of bands held at once (what a streamed encode's coordinator keeps of its input). */
  peakBytesHeld = 0;

  constructor(
    private readonly image: ImageInput,
    private readonly tiles: readonly TileRect[],
    private readonly r: number,
    private readonly reopen?: () => ImageRows & { close?(): void },
  ) {
    const height = image.dims.at(-2)!;
    tiles.forEach((t, index) => {
      const y0 = t.y0 * r;
      const y1 = Math.min(t.y1 * r, height);
      let k = this.bands.findIndex((b) => b.y0 === y0 && b.y1 === y1);
      if (k < 0) k = this.bands.push({ y0, y1, tiles: new Set() }) - 1;
      this.bands[k]!.tiles.add(index);
      this.bandOf[index] = k;
    });
    // Sorted by start; bands are re-indexed after the sort.
    const order = this.bands
      .map((_, k) => k)
      .sort((a, b) => this.bands[a]!.y0 - this.bands[b]!.y0 || this.bands[a]!.y1 - this.bands[b]!.y1);
    const rank = new Array<number>(order.length);
    order.forEach((k, i) => (rank[k] = i));
    const sorted = order.map((k) => this.bands[k]!);
    this.bands.splice(0, this.bands.length, ...sorted);
    this.bandOf.forEach((k, i) => (this.bandOf[i] = rank[k]!));
  }

  /** The input pixels of tile `index`: rows [y0·r, y1·r), cols [x0·r, x1·r) of every plane (a copy). */
  tile(index: number): Tensor {
    const t = this.tiles[index];
    if (!t) throw new DistVaeError('INVALID_ARGUMENT', `tile ${index} is not one of the ${this.tiles.length} tiles of the encode`);
    const k = this.bandOf[index]!;
    const band = this.band(k);
    const width = this.image.dims.at(-1)!;
    const block = sliceCols(
      { planes: band.data.length / ((band.dims.at(-2) ?? 1) * width), height: band.dims.at(-2)!, width, data: band.data },
      t.x0 * this.r,
      Math.min(t.x1 * this.r, width),
    );
    const out: Tensor = { dims: [...band.dims.slice(0, -2), block.height, block.width], data: block.data };
    const pending = this.bands[k]!.tiles;
    pending.delete(index);
    if (pending.size === 0) this.drop(k);
    return out;
  }

  /** Band k: held, read now (with the bands before it, kept for their tiles), or read again from a fresh source. */
  private band(k: number): Tensor {
    const held = this.held.get(k);
    if (held) return held;
    const { y0, y1 } = this.bands[k]!;
    if (inMemory(this.image)) return this.keep(k, this.image, y0, y1);
    if (k < this.read) {
      // Dropped already (its tiles dealt again): a fresh source from the top, this band only.
      if (!this.reopen)
        throw new Error(`tile rows ${y0}..${y1} of the image were asked for again after they were read, and no source to read them again`);
      const fresh = this.reopen();
      try {
        const band = fresh.rows(y0, y1);
        checkFinite(band, y0);
        return band;
      } finally {
        fresh.close?.();
      }
    }
    for (; this.read <= k; this.read++) {
      const b = this.bands[this.read]!;
      const band = (this.image as ImageRows).rows(b.y0, b.y1);
      checkFinite(band, b.y0);
      this.held.set(this.read, band);
      this.heldBytes += band.data.byteLength;
      this.peakBytesHeld = Math.max(this.peakBytesHeld, this.heldBytes);
    }
    return this.held.get(k)!;
  }

  /** A band cut from an image in memory (not counted: the image is held anyway). */
  private keep(k: number, image: Tensor, y0: number, y1: number): Tensor {
    const [h, w] = image.dims.slice(-2) as [number, number];
    const planes = image.data.length / (h * w);
    const data = new Float32Array(planes * (y1 - y0) * w);
    for (let p = 0; p < planes; p++) data.set(image.data.subarray((p * h + y0) * w, (p * h + y1) * w), p * (y1 - y0) * w);
    const band = { dims: [...image.dims.slice(0, -2), y1 - y0, w], data };
    this.held.set(k, band);
    return band;
  }

  private drop(k: number): void {
    const band = this.held.get(k);
    if (!band) return;
    this.held.delete(k);
    if (!inMemory(this.image)) this.heldBytes -= band.data.byteLength;
  }
}
