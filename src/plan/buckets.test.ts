// Resolution buckets: parsing (height x width, all errors at once), the pad / crop / resize
// choices, the content box and validity mask of pad, area inflation, and the refusal when no
// bucket holds the image under pad. Expected values are worked out here by hand.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { chooseBucket, parseBuckets, validityMask, type BucketPolicy } from './buckets.js';

const SDXL = parseBuckets('1024x1024,1152x896,896x1152,1024x768');

test('parses HEIGHTxWIDTH lists, spaces allowed', () => {
  assert.deepEqual(parseBuckets(' 1024x1024, 1152x896 ,896x1152'), [
    { height: 1024, width: 1024 },
    { height: 1152, width: 896 },
    { height: 896, width: 1152 },
  ]);
});

test('malformed bucket lists are refused with every bad entry named at once', () => {
  assert.throws(
    () => parseBuckets('1024x1024,abc,0x512,12x,-8x8,1024X768'),
    (e: unknown) => {
      assert.ok(e instanceof DistVaeError);
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.deepEqual(
        e.reasons.map((r) => [r.code, r.field, r.value]),
        [
          ['BUCKET_INVALID', 'buckets[1]', 'abc'],
          ['BUCKET_INVALID', 'buckets[2]', '0x512'],
          ['BUCKET_INVALID', 'buckets[3]', '12x'],
          ['BUCKET_INVALID', 'buckets[4]', '-8x8'],
          ['BUCKET_INVALID', 'buckets[5]', '1024X768'],
        ],
      );
      for (const r of e.reasons) assert.match(r.valid, /HEIGHTxWIDTH/);
      return true;
    },
  );
  for (const empty of ['', ' , ,'])
    assert.throws(
      () => parseBuckets(empty),
      (e: unknown) => e instanceof DistVaeError && e.reasons[0]!.code === 'BUCKETS_EMPTY',
    );
});

test('pad: the smallest bucket that holds the image; content at the top-left; inflation and valid share', () => {
  const choice = chooseBucket({ height: 1000, width: 700 }, SDXL, 'pad');
  // Fitting: 1024x1024 (1048576 px), 1152x896 (1032192), 1024x768 (786432); 896x1152 is too short.
  assert.deepEqual(choice.bucket, { height: 1024, width: 768 });
  assert.deepEqual(choice.contentBox, { y0: 0, y1: 1000, x0: 0, x1: 700 });
  assert.equal(choice.areaInflation, 786432 / 700000);
  assert.equal(choice.validFraction, 700000 / 786432);
  assert.equal(choice.contentChanged, false);
  assert.equal(choice.aspectPreserved, true);
  assert.match(choice.note, /content box/);
  // Area first, aspect second: the exact-aspect 1400x980 loses to the smaller square bucket.
  assert.deepEqual(chooseBucket({ height: 1000, width: 700 }, parseBuckets('1400x980,1024x1024'), 'pad').bucket, {
    height: 1024,
    width: 1024,
  });
  // Equal areas: the aspect ratio closer to the request wins (100x130 is wider than tall).
  const tie = chooseBucket({ height: 100, width: 130 }, parseBuckets('150x120,120x150'), 'pad');
  assert.deepEqual(tie.bucket, { height: 120, width: 150 });
  // An exact fit inflates nothing.
  assert.equal(chooseBucket({ height: 896, width: 1152 }, SDXL, 'pad').areaInflation, 1);
});

test('pad: the validity mask is 1 exactly on the content box, row-major over the bucket', () => {
  const choice = chooseBucket({ height: 3, width: 5 }, parseBuckets('4x6,8x8'), 'pad');
  assert.deepEqual(choice.bucket, { height: 4, width: 6 });
  const mask = validityMask(choice);
  // prettier-ignore
  assert.deepEqual([...mask], [
    1, 1, 1, 1, 1, 0,
    1, 1, 1, 1, 1, 0,
    1, 1, 1, 1, 1, 0,
    0, 0, 0, 0, 0, 0,
  ]);
  const big = validityMask(chooseBucket({ height: 1000, width: 700 }, SDXL, 'pad'));
  assert.equal(big.length, 1024 * 768);
  assert.equal(
    big.reduce((a, b) => a + b, 0),
    700000,
  );
  assert.equal(big[999 * 768 + 699], 1);
  assert.equal(big[999 * 768 + 700], 0);
  assert.equal(big[1000 * 768], 0);
  // crop / resize fill the whole bucket.
  assert.ok(validityMask(chooseBucket({ height: 3, width: 5 }, parseBuckets('4x6'), 'crop')).every((v) => v === 1));
});

test('pad refuses when no bucket holds the image, naming the size and the buckets, and suggesting crop or resize', () => {
  assert.throws(
    () => chooseBucket({ height: 1200, width: 1200 }, SDXL, 'pad'),
    (e: unknown) => {
      assert.ok(e instanceof DistVaeError);
      assert.equal(e.code, 'INVALID_ARGUMENT');
      const r = e.reasons[0]!;
      assert.deepEqual([r.code, r.field], ['NO_BUCKET_HOLDS_IMAGE', 'buckets']);
      assert.match(r.valid, /1200x1200/);
      assert.match(r.message, /1024x1024, 1152x896, 896x1152, 1024x768/);
      assert.match(r.message, /crop or resize/);
      return true;
    },
  );
});

test('crop: the closest aspect ratio, scaled to cover, centre kept; says the content changes', () => {
  const choice = chooseBucket({ height: 1000, width: 700 }, SDXL, 'crop');
  // |ln(h/w) − ln(1000/700)|: 1024x768 → 0.069, 1152x896 → 0.105, 1024x1024 → 0.357, 896x1152 → 0.61.
  assert.deepEqual(choice.bucket, { height: 1024, width: 768 });
  const scale = 768 / 700; // covers: max(1024/1000, 768/700)
  assert.equal(choice.scale, scale);
  const keptH = 1024 / scale;
  assert.ok(Math.abs(choice.keptBox!.y0 - (1000 - keptH) / 2) < 1e-9);
  assert.ok(Math.abs(choice.keptBox!.y1 - (1000 + keptH) / 2) < 1e-9);
  assert.deepEqual([choice.keptBox!.x0, choice.keptBox!.x1], [0, 700]);
  assert.equal(choice.contentChanged, true);
  assert.equal(choice.aspectPreserved, true);
  assert.equal(choice.areaInflation, 786432 / 700000);
  assert.match(choice.note, /crop changes content/);
  // Same aspect everywhere: the area closest to the request (in log terms) wins.
  assert.deepEqual(chooseBucket({ height: 512, width: 512 }, parseBuckets('256x256,1024x1024,640x640'), 'crop').bucket, {
    height: 640,
    width: 640,
  });
});

test('resize: stretches into the closest-aspect bucket; aspect kept only for a same-shape bucket', () => {
  const stretched = chooseBucket({ height: 1000, width: 700 }, SDXL, 'resize');
  assert.deepEqual(stretched.bucket, { height: 1024, width: 768 });
  assert.deepEqual([stretched.scaleHeight, stretched.scaleWidth], [1.024, 768 / 700]);
  assert.equal(stretched.aspectPreserved, false);
  assert.equal(stretched.contentChanged, true);
  assert.match(stretched.note, /distorted/);
  const kept = chooseBucket({ height: 512, width: 768 }, parseBuckets('1024x1024,1024x1536'), 'resize');
  assert.deepEqual([kept.bucket, kept.scaleHeight, kept.scaleWidth, kept.aspectPreserved], [{ height: 1024, width: 1536 }, 2, 2, true]);
  assert.equal(kept.areaInflation, 4);
});

test('invalid requests: size, policy and empty bucket list refused together', () => {
  assert.throws(
    () => chooseBucket({ height: 0, width: 7.5 }, [], 'stretch' as BucketPolicy),
    (e: unknown) => {
      assert.ok(e instanceof DistVaeError);
      assert.deepEqual(
        e.reasons.map((r) => [r.code, r.field]),
        [
          ['SIZE_INVALID', 'height'],
          ['SIZE_INVALID', 'width'],
          ['POLICY_INVALID', 'policy'],
          ['BUCKETS_EMPTY', 'buckets'],
        ],
      );
      return true;
    },
  );
});
