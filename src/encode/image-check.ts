// Images an encoder takes: the checks before any work (rank, channels, sizes that are multiples
// of the spatial ratio, frame counts a video encoder's frame loop takes, finite values) and the
// centred crop to valid sizes. Pure, so pages and the Node encoder share it.

import { DistVaeError, reason, type Reason, refuse } from '../errors.js';
import { encodeFrameStep, encodeFramesProblem, type EncodeFrames } from '../families/encode-frames.js';
import type { ResolvedConfig } from '../families/types.js';
import { nearestMultiples } from '../plan/shapes.js';
import type { Tensor } from '../tensor.js';
import type { ImageRows } from './tile-bands.js';

/**
 * Refuses an image the encoder cannot take: rank, channels, sizes (multiples of r), non-finite
 * values; with `frames` (a video encoder's frame loop, FamilyEncoder.frames) the input is a
 * video (B, C, F, H, W) and F must be a count the loop takes. A size refusal names the crop that
 * fixes it: `crop`, as the caller spells it (the CLI's `--crop`), else `cropToMultiple`.
 */
export function checkImage(
  config: ResolvedConfig,
  image: Pick<Tensor, 'dims'> & { data?: Float32Array },
  source = 'image',
  options: { crop?: string; frames?: EncodeFrames } = {},
): void {
  const { spatialRatio: r, temporalRatio: rt, outChannels } = config.geometry;
  const dims = image.dims;
  const reasons: Reason[] = [];
  const rank = options.frames ? 5 : 4;
  const layout = options.frames ? '(B, C, F, H, W)' : '(B, C, H, W)';
  if (dims.length !== rank) {
    const hint = options.frames && dims.length === 4 ? ' (an image is one frame: F = 1)' : '';
    reasons.push(
      reason(
        'IMAGE_RANK',
        `${source}.dims`,
        dims,
        `${rank} dimensions ${layout}`,
        `${source} has ${dims.length} dimensions [${dims.join(', ')}]; the encoder takes ${layout}${hint}`,
      ),
    );
  } else {
    const frameProblem = options.frames ? encodeFramesProblem(options.frames, rt, dims[2]!) : null;
    if (frameProblem !== null)
      reasons.push(
        reason(
          'FRAMES_INVALID',
          `${source}.frames`,
          dims[2],
          `1 + ${encodeFrameStep(options.frames!, rt)}·k frames (k ≥ 0)`,
          `${source}: ${frameProblem}`,
        ),
      );
    if (dims[1] !== outChannels)
      reasons.push(
        reason(
          'IMAGE_CHANNELS',
          `${source}.channels`,
          dims[1],
          `${outChannels} channels`,
          `${source} has ${dims[1]} channels; the encoder takes ${outChannels}`,
        ),
      );
    (['height', 'width'] as const).forEach((axis, i) => {
      const v = dims[rank - 2 + i]!;
      if (!Number.isInteger(v) || v < r || v % r !== 0) {
        reasons.push(
          reason(
            'IMAGE_SIZE',
            `${source}.${axis}`,
            v,
            `a positive multiple of ${r} px`,
            `${source} ${axis} ${v} px is not a multiple of ${r} (nearest: ${nearestMultiples(v, r)}); crop it to multiples of ${r} (${options.crop ?? 'cropToMultiple'}) or resize it`,
          ),
        );
      }
    });
    if (dims[0]! < 1) reasons.push(reason('IMAGE_EMPTY', `${source}.batch`, dims[0], 'at least 1 image', `${source} holds no image`));
  }
  if (reasons.length > 0) refuse('TENSOR_INVALID', reasons);
  // Rows read band by band (no data here) are checked as each band is read (tile-bands.ts).
  const bad = image.data?.findIndex((v) => !Number.isFinite(v)) ?? -1;
  if (bad >= 0) throw new DistVaeError('TENSOR_INVALID', `${source} holds a non-finite value (${image.data![bad]}) at flat index ${bad}`);
}

/** The centred crop of (…, H, W) to the largest multiples of `multiple` that fit: its size and offset (refused when nothing is left). */
function cropOf(dims: readonly number[], multiple: number): { th: number; tw: number; y0: number; x0: number } {
  const [h, w] = dims.slice(-2) as [number, number];
  const th = h - (h % multiple);
  const tw = w - (w % multiple);
  if (th === 0 || tw === 0) {
    refuse(
      'TENSOR_INVALID',
      reason(
        'IMAGE_TOO_SMALL',
        'image',
        `${h}x${w}`,
        `at least ${multiple}x${multiple} px`,
        `the image (${h}x${w} px) is smaller than ${multiple} px on a side and cannot be cropped to a multiple of ${multiple}`,
      ),
    );
  }
  return { th, tw, y0: Math.floor((h - th) / 2), x0: Math.floor((w - tw) / 2) };
}

/** The centred crop of an image (…, H, W) to the largest multiples of `multiple` that fit. */
export function cropToMultiple(image: Tensor, multiple: number): Tensor {
  const [h, w] = image.dims.slice(-2) as [number, number];
  const { th, tw, y0, x0 } = cropOf(image.dims, multiple);
  if (th === h && tw === w) return image;
  const planes = image.data.length / (h * w);
  const data = new Float32Array(planes * th * tw);
  for (let p = 0; p < planes; p++) {
    for (let y = 0; y < th; y++) {
      const from = (p * h + y0 + y) * w + x0;
      data.set(image.data.subarray(from, from + tw), (p * th + y) * tw);
    }
  }
  return { dims: [...image.dims.slice(0, -2), th, tw], data };
}

/** The same centred crop of rows read band by band: each band asked for is cut from the source's rows. */
export function cropRowsToMultiple<T extends ImageRows>(rows: T, multiple: number): ImageRows {
  const [h, w] = rows.dims.slice(-2) as [number, number];
  const { th, tw, y0, x0 } = cropOf(rows.dims, multiple);
  if (th === h && tw === w) return rows;
  return {
    dims: [...rows.dims.slice(0, -2), th, tw],
    rows(a, b) {
      const band = rows.rows(y0 + a, y0 + b);
      return tw === w ? band : cutCols(band, x0, tw);
    },
  };
}

function cutCols(band: Tensor, x0: number, tw: number): Tensor {
  const [bh, w] = band.dims.slice(-2) as [number, number];
  const planes = band.data.length / (bh * w);
  const data = new Float32Array(planes * bh * tw);
  for (let p = 0; p < planes; p++)
    for (let y = 0; y < bh; y++) data.set(band.data.subarray((p * bh + y) * w + x0, (p * bh + y) * w + x0 + tw), (p * bh + y) * tw);
  return { dims: [...band.dims.slice(0, -1), tw], data };
}
