// Resolution buckets: map a requested size to one of a list of bucket sizes under an explicit
// policy. `pad` keeps every pixel (the content sits at the top-left of a larger bucket; a
// content box and a validity mask let the decoded image be cropped back); `crop` scales to
// cover the bucket and cuts the overflow; `resize` stretches to the bucket. Crop and resize
// change the content, and say so.

import { reason, type Reason, refuse } from '../errors.js';
import type { Size2 } from '../families/types.js';
import { isPositiveInteger } from './shapes.js';

/** How an image is fitted to a bucket: padded, cropped or resized. */
export type BucketPolicy = 'pad' | 'crop' | 'resize';
/** Every BucketPolicy. */
export const BUCKET_POLICIES: readonly BucketPolicy[] = ['pad', 'crop', 'resize'];

/** A pixel box, half-open on both axes. */
export interface Box {
  /** Half-open pixel ranges. */
  y0: number;
  y1: number;
  x0: number;
  x1: number;
}

/** The bucket chosen for an image and what the policy does to it. */
export interface BucketChoice {
  policy: BucketPolicy;
  requested: Size2;
  bucket: Size2;
  /** Bucket area / requested area. */
  areaInflation: number;
  /** False for pad; crop and resize alter the image. */
  contentChanged: boolean;
  /** Whether the image keeps its aspect ratio (pad and crop always; resize only into a same-shape bucket). */
  aspectPreserved: boolean;
  /** pad: where the requested image lies inside the bucket. */
  contentBox?: Box;
  /** pad: share of the bucket that holds content. */
  validFraction?: number;
  /** crop: uniform scale applied before cropping, and the part of the requested image kept. */
  scale?: number;
  keptBox?: Box;
  /** resize: per-axis scale. */
  scaleHeight?: number;
  scaleWidth?: number;
  /** One sentence about what the policy does to this image. */
  note: string;
}

/** Parses "1024x1024,1152x896" (height × width, docs/design.md §9). */
export function parseBuckets(text: string, field = 'buckets'): Size2[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const reasons: Reason[] = [];
  const buckets: Size2[] = [];
  items.forEach((item, i) => {
    const m = /^(\d+)x(\d+)$/.exec(item);
    const size = m ? { height: Number(m[1]), width: Number(m[2]) } : null;
    if (!size || !isPositiveInteger(size.height) || !isPositiveInteger(size.width)) {
      reasons.push(reason('BUCKET_INVALID', `${field}[${i}]`, item, 'HEIGHTxWIDTH with positive integers, e.g. 1024x1024'));
    } else buckets.push(size);
  });
  if (items.length === 0) reasons.push(reason('BUCKETS_EMPTY', field, text, 'a comma-separated list such as 1024x1024,1152x896'));
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  return buckets;
}

const aspectDistance = (a: Size2, b: Size2) => Math.abs(Math.log(a.height / a.width) - Math.log(b.height / b.width));

/** The bucket for an image of `requested` size under `policy`: the smallest that holds it (pad) or the closest aspect ratio (crop, resize). */
export function chooseBucket(requested: Size2, buckets: readonly Size2[], policy: BucketPolicy): BucketChoice {
  const reasons: Reason[] = [];
  for (const axis of ['height', 'width'] as const) {
    if (!isPositiveInteger(requested[axis]))
      reasons.push(reason('SIZE_INVALID', axis, requested[axis], 'a positive integer number of pixels'));
  }
  if (!BUCKET_POLICIES.includes(policy)) reasons.push(reason('POLICY_INVALID', 'policy', policy, BUCKET_POLICIES.join(', ')));
  if (buckets.length === 0) reasons.push(reason('BUCKETS_EMPTY', 'buckets', [], 'at least one bucket'));
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  const area = requested.height * requested.width;
  const inflation = (b: Size2) => (b.height * b.width) / area;
  // What every policy's answer says about the bucket it chose.
  const chosen = (bucket: Size2) => ({ policy, requested: { ...requested }, bucket: { ...bucket }, areaInflation: inflation(bucket) });

  if (policy === 'pad') {
    const fitting = buckets.filter((b) => b.height >= requested.height && b.width >= requested.width);
    if (fitting.length === 0) {
      const list = buckets.map((b) => `${b.height}x${b.width}`).join(', ');
      refuse(
        'INVALID_ARGUMENT',
        reason(
          'NO_BUCKET_HOLDS_IMAGE',
          'buckets',
          list,
          `a bucket at least ${requested.height}x${requested.width}`,
          `no bucket holds ${requested.height}x${requested.width} without cutting it (buckets: ${list}); add a larger bucket or use --policy crop or resize`,
        ),
      );
    }
    const bucket = minBy(fitting, (b) => [b.height * b.width, aspectDistance(b, requested)]);
    const contentBox = { y0: 0, y1: requested.height, x0: 0, x1: requested.width };
    return {
      ...chosen(bucket),
      contentChanged: false,
      aspectPreserved: true,
      contentBox,
      validFraction: area / (bucket.height * bucket.width),
      note: `pad: the ${requested.height}x${requested.width} image sits at the top-left of a ${bucket.height}x${bucket.width} bucket; crop the decode to the content box to get it back unchanged`,
    };
  }

  // crop and resize: the closest aspect ratio, then the area closest to the request.
  const bucket = minBy(buckets, (b) => [aspectDistance(b, requested), Math.abs(Math.log(inflation(b)))]);
  if (policy === 'crop') {
    const scale = Math.max(bucket.height / requested.height, bucket.width / requested.width);
    const keptH = bucket.height / scale;
    const keptW = bucket.width / scale;
    const y0 = (requested.height - keptH) / 2;
    const x0 = (requested.width - keptW) / 2;
    const keptBox = { y0, y1: y0 + keptH, x0, x1: x0 + keptW };
    const lost = 1 - (keptH * keptW) / area;
    return {
      ...chosen(bucket),
      contentChanged: true,
      aspectPreserved: true,
      scale,
      keptBox,
      note: `crop changes content: scaled by ${fmt(scale)} to cover ${bucket.height}x${bucket.width}, then ${fmt(lost * 100)}% of the image is cut away (centre kept)`,
    };
  }
  const scaleHeight = bucket.height / requested.height;
  const scaleWidth = bucket.width / requested.width;
  return {
    ...chosen(bucket),
    contentChanged: true,
    aspectPreserved: scaleHeight === scaleWidth,
    scaleHeight,
    scaleWidth,
    note:
      scaleHeight === scaleWidth
        ? `resize changes content: scaled by ${fmt(scaleHeight)} to ${bucket.height}x${bucket.width}, aspect ratio kept`
        : `resize changes content: stretched by ${fmt(scaleHeight)} (height) and ${fmt(scaleWidth)} (width) to ${bucket.height}x${bucket.width}, aspect ratio distorted by ${fmt((scaleWidth / scaleHeight - 1) * 100)}%`,
  };
}

/** 1 where the bucket holds content, 0 on padding (row-major, bucket height × width). */
export function validityMask(choice: BucketChoice): Uint8Array {
  const { height, width } = choice.bucket;
  const mask = new Uint8Array(height * width);
  const box = choice.contentBox ?? { y0: 0, y1: height, x0: 0, x1: width };
  for (let y = box.y0; y < box.y1; y++) mask.fill(1, y * width + box.x0, y * width + box.x1);
  return mask;
}

function minBy<T>(items: readonly T[], key: (t: T) => number[]): T {
  let best: T = items[0]!;
  let bestKey = key(best);
  for (const item of items.slice(1)) {
    const k = key(item);
    const i = k.findIndex((v, j) => v !== bestKey[j]);
    if (i >= 0 && k[i]! < bestKey[i]!) {
      best = item;
      bestKey = k;
    }
  }
  return best;
}

function fmt(v: number): string {
  return Number(v.toFixed(3)).toString();
}
