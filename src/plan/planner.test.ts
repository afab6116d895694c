// The planner contract (docs/design.md §4): exact window / overlap requests (never rounded; every
// refusal carries code, field, value and valid range), untiled axes and `sampleShape`, the
// default overlap a shape plan keeps, overlap plans against the installed window, every
// family's constraints, frame plans, diffusers-equivalence, and the default plan's refusal.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError, type Reason } from '../errors.js';
import { FAMILY_NAMES, planningVae } from '../families/registry.js';
import type { VaeSpec } from '../families/types.js';
import { KL_TINY_PLAN, LTX2_TINY_16, WAN22_PUBLISHED } from '../families/testing/video-configs.js';
import { diffusersDifference, diffusersEquivalent } from './equivalence.js';
import {
  explainTiling,
  setTiling,
  explainTileFramePlan,
  explainTileOverlapPlan,
  explainTileShapePlan,
  tileFramePlan,
  tileOverlapPlan,
  tileShapePlan,
} from './planner.js';

/** Latent units per output pixel for each family at its published defaults (docs/design.md §3). */
const PUBLISHED_RATIO: Record<string, number> = {
  'autoencoder-kl': 8,
  flux2: 8,
  tae: 8,
  wan: 8,
  'qwen-image': 8,
  'hunyuan-video': 8,
  ltx2: 32,
  'hunyuan-image': 32,
  'dc-ae': 32,
  'hunyuan-video-1.5': 16,
  'minimax-h3': 16,
};
/** Smallest window in latent units: LTX-2's reflect padding needs 2 rows / columns. */
const MIN_WINDOW_LATENT: Record<string, number> = {
  'autoencoder-kl': 1,
  flux2: 1,
  tae: 1,
  wan: 1,
  'qwen-image': 1,
  'hunyuan-video': 1,
  ltx2: 2,
  'hunyuan-image': 1,
  'dc-ae': 1,
  'hunyuan-video-1.5': 1,
  'minimax-h3': 1,
};

function only(reasons: Reason[]): Reason {
  assert.equal(reasons.length, 1, JSON.stringify(reasons));
  return reasons[0]!;
}

/** Asserts that `fn` refuses with PLAN_REFUSED and exactly these [code, field, value] reasons, in order; returns the error. */
function planRefusal(fn: () => unknown, reasons: [string, string, unknown][]): DistVaeError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof DistVaeError, String(e));
    assert.equal(e.code, 'PLAN_REFUSED');
    assert.deepEqual(
      e.reasons.map((r) => [r.code, r.field, r.value]),
      reasons,
    );
    return e;
  }
  assert.fail('expected a PLAN_REFUSED refusal');
}

test('whole-latent windows are accepted exactly as asked, for every family; every non-multiple is refused, never rounded', () => {
  for (const family of FAMILY_NAMES) {
    const vae = planningVae(family);
    const r = PUBLISHED_RATIO[family]!;
    assert.equal(vae.geometry.spatialRatio, r);
    const min = MIN_WINDOW_LATENT[family]!;
    for (let px = 1; px <= 12 * r; px++) {
      const plan = tileShapePlan(vae, px, 6 * r);
      const reasons = explainTileShapePlan(vae, px, 6 * r);
      if (px % r === 0 && px / r >= min) {
        assert.deepEqual(reasons, [], `${family} ${px}`);
        assert.deepEqual(plan?.window, { height: px, width: 6 * r });
        assert.equal(plan?.kind, 'shape');
        assert.equal(plan?.family, family);
      } else {
        assert.equal(plan, null, `${family} ${px} must be refused`);
        const why = only(reasons);
        assert.equal(why.field, 'window.height');
        assert.equal(why.value, px);
        if (px % r !== 0) {
          assert.equal(why.code, 'WINDOW_NOT_WHOLE_LATENT');
          assert.equal(why.valid, `a multiple of ${r} px`);
        } else {
          assert.equal(why.code, 'WINDOW_TOO_SMALL');
          assert.match(why.valid, new RegExp(`at least ${min * r} px`));
        }
        assert.ok(why.message.includes(String(px)), why.message);
      }
    }
  }
});

test('invalid window values (0, negative, fractional, NaN) are refused per axis, both axes at once', () => {
  const vae = planningVae('autoencoder-kl');
  for (const bad of [0, -8, 8.5, Number.NaN, Infinity]) {
    const why = only(explainTileShapePlan(vae, bad, 64));
    assert.deepEqual([why.code, why.field], ['WINDOW_INVALID', 'window.height']);
    assert.equal(Object.is(why.value, bad), true);
    assert.equal(tileShapePlan(vae, bad, 64), null);
  }
  const both = explainTileShapePlan(vae, 100, -8);
  assert.deepEqual(
    both.map((r) => [r.code, r.field, r.value]),
    [
      ['WINDOW_NOT_WHOLE_LATENT', 'window.height', 100],
      ['WINDOW_INVALID', 'window.width', -8],
    ],
  );
});

test("family constraints use the config's ratio: tiny KL r=2, tiny LTX-2 r=16 with a 2-unit minimum, Wan 2.2 r=16", () => {
  const kl = planningVae('autoencoder-kl', KL_TINY_PLAN);
  assert.notEqual(tileShapePlan(kl, 2, 130), null);
  assert.equal(only(explainTileShapePlan(kl, 3, 130)).valid, 'a multiple of 2 px');
  const ltx = planningVae('ltx2', LTX2_TINY_16);
  assert.equal(only(explainTileShapePlan(ltx, 16, 64)).code, 'WINDOW_TOO_SMALL');
  assert.equal(only(explainTileShapePlan(ltx, 64, 16)).field, 'window.width');
  assert.notEqual(tileShapePlan(ltx, 32, 32), null);
  assert.equal(only(explainTileShapePlan(ltx, 40, 32)).valid, 'a multiple of 16 px');
  const wan22 = planningVae('wan', WAN22_PUBLISHED);
  assert.equal(only(explainTileShapePlan(wan22, 248, 256)).valid, 'a multiple of 16 px');
  assert.notEqual(tileShapePlan(wan22, 16, 16), null);
});

test('a shape plan keeps a default overlap of floor(window_lat/4) units on tiled axes and 0 on axes sampleShape leaves untiled', () => {
  const vae = planningVae('autoencoder-kl');
  // No sample shape: both axes get floor(w/4) latent units.
  for (const [h, w] of [
    [512, 512],
    [8, 24],
    [40, 1000],
    [96, 72],
  ] as const) {
    const plan = tileShapePlan(vae, h, w)!;
    assert.deepEqual(plan.overlap, { height: Math.floor(h / 8 / 4) * 8, width: Math.floor(w / 8 / 4) * 8 }, `${h}x${w}`);
  }
  // sampleShape is in output pixels: 512x2048 px = 64x256 latent. Height fits the 64-unit window -> untiled.
  const plan = tileShapePlan(vae, 512, 512, { sampleShape: { height: 512, width: 2048 } })!;
  assert.deepEqual(plan.overlap, { height: 0, width: 128 });
  // One unit more and the axis is tiled again.
  assert.deepEqual(tileShapePlan(vae, 512, 512, { sampleShape: { height: 520, width: 2048 } })!.overlap, { height: 128, width: 128 });
  // A sample that fits on both axes: both overlaps 0.
  assert.deepEqual(tileShapePlan(vae, 1024, 1024, { sampleShape: { height: 512, width: 1024 } })!.overlap, { height: 0, width: 0 });
  // Applying it installs window and overlap exactly and turns tiling on.
  setTiling(vae, plan);
  assert.deepEqual(vae.tiling.window, { height: 512, width: 512 });
  assert.deepEqual(vae.tiling.overlap, { height: 0, width: 128 });
  assert.equal(vae.tiling.enabled, true);
});

test('sampleShape must itself be whole latent units (and whole frame steps for video)', () => {
  const vae = planningVae('autoencoder-kl');
  const why = explainTileShapePlan(vae, 512, 512, { sampleShape: { height: 1004, width: 1024 } });
  assert.deepEqual(only(why).code, 'SIZE_NOT_WHOLE_LATENT');
  assert.equal(why[0]!.field, 'sampleShape.height');
  assert.equal(why[0]!.valid, 'a multiple of 8 px');
  assert.equal(tileShapePlan(vae, 512, 512, { sampleShape: { height: 1004, width: 1024 } }), null);
  const hv = planningVae('hunyuan-video');
  assert.deepEqual(
    only(explainTileShapePlan(hv, 256, 256, { sampleShape: { height: 512, width: 512, frames: 32 } })).code,
    'FRAMES_INVALID',
  );
  assert.deepEqual(explainTileShapePlan(hv, 256, 256, { sampleShape: { height: 512, width: 512, frames: 33 } }), []);
  assert.deepEqual(
    only(explainTileShapePlan(vae, 256, 256, { sampleShape: { height: 512, width: 512, frames: 5 } })).code,
    'FRAMES_ON_IMAGE_FAMILY',
  );
});

test('overlap plans are exact: multiples of r below the installed window; the rest refused with code, field, value and valid', () => {
  const vae = planningVae('autoencoder-kl');
  setTiling(vae, tileShapePlan(vae, 256, 512)!);
  for (let ov = 0; ov <= 520; ov += 4) {
    const reasons = explainTileOverlapPlan(vae, 64, ov);
    const plan = tileOverlapPlan(vae, 64, ov);
    if (ov % 8 === 0 && ov < 512) {
      assert.deepEqual(reasons, []);
      assert.deepEqual(plan, {
        kind: 'overlap',
        family: 'autoencoder-kl',
        window: { height: 256, width: 512 },
        overlap: { height: 64, width: ov },
      });
    } else {
      assert.equal(plan, null, `overlap ${ov}`);
      const why = only(reasons);
      assert.equal(why.field, 'overlap.width');
      assert.equal(why.value, ov);
      if (ov % 8 !== 0) assert.deepEqual([why.code, why.valid], ['OVERLAP_NOT_WHOLE_LATENT', 'a multiple of 8 px']);
      else assert.deepEqual([why.code, why.valid], ['OVERLAP_NOT_BELOW_WINDOW', 'at most 504 px (below the 512 px window)']);
    }
  }
  // overlap == window on height (256): refused; -8 and 1.5: invalid.
  assert.equal(only(explainTileOverlapPlan(vae, 256, 0)).code, 'OVERLAP_NOT_BELOW_WINDOW');
  assert.equal(only(explainTileOverlapPlan(vae, -8, 0)).code, 'OVERLAP_INVALID');
  assert.equal(only(explainTileOverlapPlan(vae, 0, 1.5)).code, 'OVERLAP_INVALID');
  // Installed exactly.
  setTiling(vae, tileOverlapPlan(vae, 8, 248)!);
  assert.deepEqual(vae.tiling.overlap, { height: 8, width: 248 });
  assert.deepEqual(vae.tiling.window, { height: 256, width: 512 });
});

test('an axis left untiled by sampleShape must request overlap 0', () => {
  const vae = planningVae('autoencoder-kl');
  const sampleShape = { height: 512, width: 2048 }; // latent 64 x 256 under a 64x64 window: height untiled
  setTiling(vae, tileShapePlan(vae, 512, 512, { sampleShape })!);
  const why = only(explainTileOverlapPlan(vae, 128, 128, { sampleShape }));
  assert.deepEqual([why.code, why.field, why.value], ['OVERLAP_ON_UNTILED_AXIS', 'overlap.height', 128]);
  assert.match(why.valid, /^0/);
  assert.match(why.message, /512 px/);
  assert.equal(tileOverlapPlan(vae, 128, 128, { sampleShape }), null);
  assert.deepEqual(tileOverlapPlan(vae, 0, 128, { sampleShape })?.overlap, { height: 0, width: 128 });
  // Without sampleShape the planner cannot know the axis is untiled and accepts the overlap.
  assert.notEqual(tileOverlapPlan(vae, 128, 128), null);
  // An invalid sampleShape is itself a reason.
  assert.deepEqual(
    explainTileOverlapPlan(vae, 0, 128, { sampleShape: { height: 510, width: 2048 } }).map((r) => r.field),
    ['sampleShape.height'],
  );
});

test('an overlap plan validates against the installed window and is refused at apply time if the window changed since', () => {
  const vae = planningVae('autoencoder-kl');
  // Before any shape plan: the family default window (512) is installed, so 504 is valid and 512 is not.
  assert.notEqual(tileOverlapPlan(vae, 504, 504), null);
  assert.equal(only(explainTileOverlapPlan(vae, 512, 0)).code, 'OVERLAP_NOT_BELOW_WINDOW');
  setTiling(vae, tileShapePlan(vae, 256, 256)!);
  const plan = tileOverlapPlan(vae, 128, 128)!;
  setTiling(vae, tileShapePlan(vae, 384, 256)!);
  assert.throws(
    () => setTiling(vae, plan),
    (e: unknown) => {
      assert.ok(e instanceof DistVaeError);
      assert.equal(e.code, 'PLAN_REFUSED');
      assert.deepEqual(
        [e.reasons[0]!.code, e.reasons[0]!.field, e.reasons[0]!.value, e.reasons[0]!.valid],
        ['PLAN_WINDOW_CHANGED', 'plan.window', { height: 256, width: 256 }, '384x256'],
      );
      return true;
    },
  );
  // The refused apply left the VAE as it was.
  assert.deepEqual(
    [vae.tiling.window, vae.tiling.overlap],
    [
      { height: 384, width: 256 },
      { height: 96, width: 64 },
    ],
  );
  // A plan made for another family is refused too.
  const other = planningVae('tae');
  assert.throws(() => setTiling(vae, tileShapePlan(other, 64, 64)!), { code: 'PLAN_REFUSED' });
});

test('a plan validated on another config of the same family is re-checked when applied (no fractional latent tiles)', () => {
  const tiny = planningVae('autoencoder-kl', KL_TINY_PLAN); // r = 2
  const published = planningVae('autoencoder-kl'); // r = 8
  const shape = tileShapePlan(tiny, 130, 130)!;
  planRefusal(
    () => setTiling(published, shape),
    [
      ['WINDOW_NOT_WHOLE_LATENT', 'window.height', 130],
      ['WINDOW_NOT_WHOLE_LATENT', 'window.width', 130],
    ],
  );
  assert.deepEqual(published.tiling.window, { height: 512, width: 512 });
  // Same window on both, but an overlap that is whole latent units only at r = 2.
  setTiling(tiny, tileShapePlan(tiny, 64, 64)!);
  setTiling(published, tileShapePlan(published, 64, 64)!);
  assert.throws(
    () => setTiling(published, tileOverlapPlan(tiny, 2, 2)!),
    (e: unknown) => e instanceof DistVaeError && e.reasons[0]!.code === 'OVERLAP_NOT_WHOLE_LATENT',
  );
  // Frames: 12/4 frames are whole steps of the tiny LTX-2 (rt 4), not of the published one (rt 8).
  const frames = tileFramePlan(planningVae('ltx2', LTX2_TINY_16), { window: 12, overlap: 4 })!;
  const ltx = planningVae('ltx2');
  assert.throws(
    () => setTiling(ltx, frames),
    (e: unknown) => e instanceof DistVaeError && e.reasons.map((r) => r.code).join() === 'FRAME_WINDOW_INVALID,FRAME_OVERLAP_INVALID',
  );
  assert.deepEqual(ltx.tiling.frames, { enabled: false, window: 16, overlap: 8 });
});

test('patch size: a Wan 2.2 overlap must be whole latent units (16 px), hence whole patches', () => {
  const wan22 = planningVae('wan', WAN22_PUBLISHED);
  setTiling(wan22, tileShapePlan(wan22, 256, 256)!);
  assert.deepEqual(wan22.tiling.overlap, { height: 64, width: 64 });
  assert.equal(only(explainTileOverlapPlan(wan22, 8, 0)).code, 'OVERLAP_NOT_WHOLE_LATENT');
  assert.equal(only(explainTileOverlapPlan(wan22, 2, 0)).code, 'OVERLAP_NOT_WHOLE_LATENT');
  assert.deepEqual(tileOverlapPlan(wan22, 48, 16)?.overlap, { height: 48, width: 16 });
});

test('frame plans: HunyuanVideo and LTX-2 take multiples of rt with overlap below the window; others have no temporal tiling', () => {
  const hv = planningVae('hunyuan-video');
  assert.deepEqual(tileFramePlan(hv, { window: 32, overlap: 8 }), {
    kind: 'frames',
    family: 'hunyuan-video',
    frames: { window: 32, overlap: 8 },
  });
  assert.deepEqual(
    explainTileFramePlan(hv, 18, 4).map((r) => [r.code, r.field, r.value]),
    [['FRAME_WINDOW_INVALID', 'frames.window', 18]],
  );
  assert.deepEqual(
    explainTileFramePlan(hv, 16, 6).map((r) => [r.code, r.value]),
    [['FRAME_OVERLAP_INVALID', 6]],
  );
  assert.deepEqual(
    explainTileFramePlan(hv, 16, 16).map((r) => r.code),
    ['FRAME_OVERLAP_NOT_BELOW_WINDOW'],
  );
  assert.deepEqual(
    explainTileFramePlan(hv, 0, -4).map((r) => r.code),
    ['FRAME_WINDOW_INVALID', 'FRAME_OVERLAP_INVALID'],
  );
  assert.equal(tileFramePlan(hv, { window: 16, overlap: 16 }), null);
  setTiling(hv, tileFramePlan(hv, { window: 32, overlap: 8 })!);
  assert.deepEqual(hv.tiling.frames, { enabled: true, window: 32, overlap: 8 });
  setTiling(hv, tileFramePlan(hv, null)!);
  assert.deepEqual(hv.tiling.frames, { enabled: false, window: 32, overlap: 8 });

  const ltx = planningVae('ltx2'); // rt 8
  assert.equal(only(explainTileFramePlan(ltx, 12, 0)).code, 'FRAME_WINDOW_INVALID');
  assert.deepEqual(tileFramePlan(ltx, { window: 24, overlap: 8 })?.frames, { window: 24, overlap: 8 });

  for (const family of ['wan', 'qwen-image', 'autoencoder-kl', 'flux2', 'tae']) {
    const vae = planningVae(family);
    assert.equal(only(explainTileFramePlan(vae, 16, 4)).code, 'NO_TEMPORAL_TILING', family);
    assert.equal(tileFramePlan(vae, { window: 16, overlap: 4 }), null);
    assert.equal(tileFramePlan(vae, null), null);
  }
});

function installed(vae: VaeSpec, window: [number, number], overlap: [number, number]): VaeSpec {
  setTiling(vae, tileShapePlan(vae, window[0], window[1])!);
  setTiling(vae, tileOverlapPlan(vae, overlap[0], overlap[1])!);
  return vae;
}

test('diffusersEquivalent: square windows with equal overlaps that int(Lmin(1−f)) / int(Smin·f) reproduce; rectangular or unequal not; tae never; family B always', () => {
  const kl = () => planningVae('autoencoder-kl');
  assert.equal(diffusersEquivalent(installed(kl(), [512, 512], [128, 128])), true);
  assert.equal(diffusersEquivalent(installed(kl(), [384, 384], [96, 96])), true);
  assert.equal(diffusersEquivalent(installed(kl(), [512, 512], [0, 0])), true);
  assert.equal(diffusersEquivalent(installed(kl(), [512, 512], [192, 192])), true); // f = 0.375: 64·0.625 = 40, 512·0.375 = 192
  assert.equal(diffusersEquivalent(installed(kl(), [512, 384], [128, 128])), false);
  assert.equal(diffusersEquivalent(installed(kl(), [512, 512], [128, 64])), false);
  // f = 32/40 = 0.8: diffusers computes int(5·(1 − 0.8)) = int(0.9999999999999998) = 0, not 1.
  assert.equal(diffusersEquivalent(installed(kl(), [40, 40], [32, 32])), false);
  assert.equal(diffusersEquivalent(installed(planningVae('flux2'), [1024, 1024], [256, 256])), true);
  assert.equal(diffusersEquivalent(installed(planningVae('tae'), [512, 512], [128, 128])), false);
  for (const family of ['wan', 'qwen-image', 'hunyuan-video', 'ltx2']) {
    assert.equal(diffusersEquivalent(installed(planningVae(family), [256, 512], [64, 128])), true, family);
  }
  // diffusersDifference says why, in the numbers of the plan.
  assert.equal(diffusersDifference(installed(kl(), [512, 512], [128, 128])), null);
  assert.match(diffusersDifference(installed(kl(), [512, 384], [128, 128]))!, /square windows .* 512x384/);
  assert.match(diffusersDifference(installed(kl(), [512, 512], [128, 64]))!, /one overlap factor .* 128x64/);
  assert.match(diffusersDifference(installed(kl(), [40, 40], [32, 32]))!, /int\(5·\(1−f\)\) = 0 latent units .* not 1 and 32/);
  assert.match(diffusersDifference(installed(planningVae('tae'), [512, 512], [128, 128]))!, /no tiled decode for tae/);
});

test("setTiling(vae) installs diffusers' default plan, and refuses one that does not land on whole latent units", () => {
  for (const family of FAMILY_NAMES) {
    const vae = planningVae(family);
    setTiling(vae);
    assert.equal(vae.tiling.enabled, true);
    assert.deepEqual([vae.tiling.window, vae.tiling.overlap], [vae.config.tiling.window, vae.config.tiling.overlap], family);
  }
  // sample_size 100 with r = 8: window 100 px is 12.5 latent units and int(100·0.25) = 25 px is 3.125.
  const bad = planningVae('autoencoder-kl', { sample_size: 100 });
  const refused = planRefusal(
    () => setTiling(bad),
    [
      ['DEFAULT_PLAN_NOT_WHOLE_LATENT', 'window.height', 100],
      ['DEFAULT_PLAN_NOT_WHOLE_LATENT', 'window.width', 100],
      ['DEFAULT_PLAN_NOT_WHOLE_LATENT', 'overlap.height', 25],
      ['DEFAULT_PLAN_NOT_WHOLE_LATENT', 'overlap.width', 25],
    ],
  );
  assert.match(refused.message, /window 100x100/);
  assert.equal(bad.tiling.enabled, false);
  // sample_size 40: the window (5 units) is whole but int(40·0.25) = 10 px is not.
  const overlapOnly = planningVae('autoencoder-kl', { sample_size: 40 });
  assert.throws(
    () => setTiling(overlapOnly),
    (e: unknown) => e instanceof DistVaeError && e.reasons.every((r) => r.field.startsWith('overlap.')),
  );
  // sample_size 96: window 12 units, overlap 24 px = 3 units -> fine.
  const ok = planningVae('autoencoder-kl', { sample_size: 96 });
  setTiling(ok);
  assert.deepEqual(ok.tiling.overlap, { height: 24, width: 24 });
});

test('setTiling installs an exact window, overlap and frames in one call, or refuses with every reason and changes nothing', () => {
  const vae = planningVae('autoencoder-kl');
  setTiling(vae, { window: { height: 512, width: 256 }, overlap: { height: 64, width: 32 }, sampleShape: { height: 1024, width: 1024 } });
  assert.deepEqual(vae.tiling, { enabled: true, window: { height: 512, width: 256 }, overlap: { height: 64, width: 32 }, frames: null });
  // A window alone keeps its default overlap (floor(window_lat / 4) latent units), as tileShapePlan.
  setTiling(vae, { window: { height: 256, width: 256 } });
  assert.deepEqual(vae.tiling.overlap, tileShapePlan(vae, 256, 256)!.overlap);
  const before = structuredClone(vae.tiling);
  const request = { window: { height: 100, width: 256 }, overlap: { height: 64, width: 256 }, frames: { window: 8, overlap: 0 } };
  const codes = explainTiling(vae, request).map((r) => [r.code, r.field]);
  assert.deepEqual(codes, [
    ['WINDOW_NOT_WHOLE_LATENT', 'window.height'],
    ['OVERLAP_NOT_BELOW_WINDOW', 'overlap.width'],
    ['NO_TEMPORAL_TILING', 'frames.window'],
  ]);
  assert.throws(
    () => setTiling(vae, request),
    (e: unknown) =>
      e instanceof DistVaeError && e.code === 'PLAN_REFUSED' && e.reasons.map((r) => [r.code, r.field]).join() === codes.join(),
  );
  assert.deepEqual(vae.tiling, before, 'a refused request leaves the tiling as it was');
  // Temporal tiling: on with exact frames, off with null; setTiling(vae, 'off') turns both axes off.
  const hv = planningVae('hunyuan-video');
  setTiling(hv, { frames: { window: 8, overlap: 4 } });
  assert.deepEqual(hv.tiling.frames, { enabled: true, window: 8, overlap: 4 });
  assert.deepEqual([hv.tiling.window, hv.tiling.enabled], [hv.config.tiling.window, true]);
  setTiling(hv, { frames: null });
  assert.equal(hv.tiling.frames!.enabled, false);
  setTiling(hv, { frames: { window: 8, overlap: 4 } });
  setTiling(hv, 'off');
  assert.deepEqual([hv.tiling.enabled, hv.tiling.frames!.enabled], [false, false]);
});
