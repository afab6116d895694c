// The one check of a network's output for NaN and ±Infinity (docs/design.md §10). Written out, a
// non-finite value is a black or garbage image that looks like a result, so every decode path
// checks each piece of output once, where the piece enters assembly: the whole decode, a temporal
// chunk, a tile (raw or finalised by its rank), a rank's band of rows, an exact tile's core, an
// encode. The finished output is never scanned again (the writers trust it).

import { DistVaeError } from '../errors.js';

/** A piece of output: (B, C, [F,] H, W) values, C order. */
export interface OutputPiece {
  readonly dims: readonly number[];
  readonly data: Float32Array;
}

/** Which rows and columns of a piece land in the output, and where (output rows / columns). */
export interface PieceWindow {
  /** First row and column of the piece that lands, and how many. */
  sy: number;
  sx: number;
  h: number;
  w: number;
  /** Where that first row and column land in the output. */
  y: number;
  x: number;
}

/**
 * NON_FINITE_OUTPUT (a runtime failure) when `piece` holds NaN or ±Infinity — within `window`
 * when given (the part that lands in the output). The message names `where` (the tile, band or
 * chunk) and the first bad value's position (b, c, [f,] y, x): in output rows and columns with a
 * window, else within the piece.
 */
export function checkFiniteOutput(piece: OutputPiece, where: string, window?: PieceWindow): void {
  const { dims, data } = piece;
  const height = dims.at(-2) ?? 1;
  const width = dims.at(-1) ?? data.length;
  const planeCount = data.length / (height * width);
  const win = window ?? { sy: 0, sx: 0, h: height, w: width, y: 0, x: 0 };
  for (let p = 0; p < planeCount; p++) {
    for (let y = win.sy; y < win.sy + win.h; y++) {
      const row = (p * height + y) * width;
      for (let x = win.sx; x < win.sx + win.w; x++) {
        const v = data[row + x]!;
        // v - v is 0 for finite v and NaN for NaN and ±Infinity.
        if (v - v !== 0) throw nonFiniteOutput(dims, p, win.y + y - win.sy, win.x + x - win.sx, v, where, window !== undefined);
      }
    }
  }
}

function nonFiniteOutput(
  dims: readonly number[],
  plane: number,
  y: number,
  x: number,
  value: number,
  where: string,
  inOutput: boolean,
): DistVaeError {
  // The plane index unravels over the leading dimensions: (b, c) or (b, c, f).
  const leading = dims.slice(0, -2);
  const index: number[] = [];
  for (let i = leading.length - 1, rest = plane; i >= 0; i--) {
    index.unshift(rest % leading[i]!);
    rest = Math.floor(rest / leading[i]!);
  }
  const names =
    leading.length === 3 ? 'b, c, f, y, x' : leading.length === 2 ? 'b, c, y, x' : [...leading.map((_, i) => `d${i}`), 'y', 'x'].join(', ');
  return new DistVaeError(
    'NON_FINITE_OUTPUT',
    `${where} came out non-finite: ${value} at (${names}) = (${[...index, y, x].join(', ')}) ${inOutput ? 'of the output' : `of ${where}`}; ` +
      'the weights or the inputs drive the network out of float32 range (finite values only)',
  );
}
