// MiniMax-H3's declaration against diffusers: the tile split of the class's own loop (every length
// at the class's settings and smaller ones, from diffusers' `_split_tiles` itself), the clip loop's
// frame count 1 + 4(T−1) − 3⌊(T−1)/5⌋ and the latent counts it refuses, the published config's
// plan (tiled by default, derived overlaps reported), and the planner's refusals for this loop.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { isDistVaeError } from '../../errors.js';
import { planningVae } from '../registry.js';
import { checkLatents } from '../../decode/latents.js';
import { seamOverlaps, splitSpans } from '../../plan/grid.js';
import { explainTiling, setTiling } from '../../plan/planner.js';
import { planReport } from '../../plan/report.js';
import { latentShapeOf, sampleShapeOf, sampleShapeReasons } from '../../plan/shapes.js';
import { clipOutputFrames, clipPlan } from '../clip-frames.js';

type Row = [ratio: number, length: number, tile: number, minOverlap: number, starts: number[], overlaps: number[]];
const table = JSON.parse(readFileSync(new URL('./testing/goldens/split-tiles.json', import.meta.url), 'utf8')) as Row[];

test("splitSpans is diffusers' _split_tiles on every length at the class's settings and smaller ones", () => {
  assert.ok(table.length > 200);
  for (const [r, length, tile, minOverlap, starts, overlaps] of table) {
    const spans = splitSpans(length / r, tile / r, minOverlap / r);
    const label = `length ${length}, tile ${tile}, min overlap ${minOverlap} (${r}x)`;
    assert.deepEqual(
      spans.map((s) => s.start * r),
      starts,
      label,
    );
    assert.deepEqual(
      seamOverlaps(spans).map((o) => o * r),
      overlaps,
      label,
    );
    assert.ok(
      overlaps.every((o) => o >= minOverlap),
      label,
    );
  }
});

test('the clip loop: 1 + 4(T−1) − 3⌊(T−1)/5⌋ frames for T ≥ 3 latent frames, none for T = 1, 2 (diffusers raises)', () => {
  const vae = planningVae('minimax-h3');
  const clips = vae.geometry.clips!;
  assert.deepEqual(
    { chunk: clips.chunk, context: clips.context, prePadding: clips.prePadding, blend: clips.blend },
    {
      chunk: 5,
      context: 2,
      prePadding: 3,
      blend: 5,
    },
  );
  assert.equal(clipPlan(clips, 1), null);
  assert.equal(clipPlan(clips, 2), null);
  for (let t = 3; t <= 60; t++) assert.equal(clipOutputFrames(clips, t), 1 + 4 * (t - 1) - 3 * Math.floor((t - 1) / 5), `T = ${t}`);
  // 17·n + 5 frames ↔ 5·n + 2 latent frames (the class docstring), both ways through the planner's shapes.
  for (const n of [1, 2, 7]) {
    const latent = latentShapeOf(vae.geometry, { height: 256, width: 256, frames: 17 * n + 5 });
    assert.equal(latent.frames, 5 * n + 2);
    assert.equal(sampleShapeOf(vae.geometry, latent).frames, 17 * n + 5);
  }
  assert.deepEqual(
    sampleShapeReasons(vae.geometry, { height: 256, width: 256, frames: 21 }).map((r) => r.code),
    ['FRAMES_INVALID'],
  );
  assert.throws(
    () => checkLatents(vae, { dims: [1, 24, 2, 4, 4], data: new Float32Array(24 * 32) }),
    (e: unknown) => isDistVaeError(e) && e.reasons.some((r) => r.code === 'LATENT_SIZE' && r.valid === 'at least 3 latent frames'),
  );
});

test('the published config: tiled by default at 256 / 64 px, seams report the derived overlaps, never a rounded request', () => {
  const vae = planningVae('minimax-h3');
  assert.equal(vae.tiling.enabled, true);
  assert.deepEqual([vae.geometry.spatialRatio, vae.geometry.temporalRatio, vae.geometry.latentChannels], [16, 4, 24]);
  const report = planReport(vae, { height: 720, width: 1280, frames: 22 }, 1);
  assert.equal(report.tiles, 28);
  assert.deepEqual(report.seamOverlaps, { height: [112, 96, 96], width: [96, 96, 80, 80, 80, 80] });
  assert.equal(report.diffusersEquivalent, true);
  // A minimum overlap of 0 on an axis that tiles: the class would crop the tile away.
  assert.deepEqual(
    explainTiling(vae, { window: { height: 256, width: 256 }, overlap: { height: 0, width: 64 } }).map((r) => [r.code, r.field]),
    [['OVERLAP_INVALID', 'overlap.height']],
  );
  // Not whole latent units: refused, never rounded.
  assert.deepEqual(
    explainTiling(vae, { window: { height: 250, width: 256 }, overlap: { height: 64, width: 60 } }).map((r) => r.code),
    ['WINDOW_NOT_WHOLE_LATENT', 'OVERLAP_NOT_WHOLE_LATENT'],
  );
  setTiling(vae, 'off');
  assert.equal(planReport(vae, { height: 720, width: 1280, frames: 22 }, 1).tiled, false);
});
