// MiniMax-H3's encoder on onnxruntime-web's WASM provider (what a page's loadWebEncoder runs,
// through the browser map's session module), here in Node: the family's own clip runner
// (`clipEncoderRunner`, handed the web session) under the encode engine a WebEncoder is
// (BoundEncoder), planned as the Node encoder is — whole (`setTiling(encoder, 'off')`, the CLI's
// --full) and at 32 px tiles with a minimum overlap of 8 px — equals the Node encoder within 1e-5
// of the largest value and diffusers' goldens (testing/goldens/README.md) within 1e-4; with the
// moments, the std equals difref's --save-std within 1e-4 relative, as `encode --sample` needs.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BoundEncoder } from '../../encode/bound-encoder.js';
import { loadEncoder } from '../../encode/encoder.js';
import { difference } from '../../graph/testing/compare.js';
import { latentMean, latentStd } from '../../io/latent-sample.js';
import { setTiling } from '../../plan/planner.js';
import { configureWebRuntime, createSession } from '../../runtime/web-session.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { assertMatchesGolden, goldensBeside, subsample } from '../testing/golden-compare.js';
import { clipEncoderRunner, miniMaxEncoderParams, miniMaxH3Encoder } from './encoder.js';
import { miniMaxH3 } from './spec.js';
import { MINIMAX_H3_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);
configureWebRuntime({ threads: 1 });

const config = resolveFamilyConfig(miniMaxH3, MINIMAX_H3_TINY);
const weights = syntheticWeights(miniMaxEncoderParams(config), 4);
// Two clips of 17 (the second padded by repeating the last frame), 3 latent frames dropped.
const video = seededTensor([1, 3, 20, 48, 72], 11);
const TILES = { window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } };

/** The encode on WASM (`tiled`: the 32 / 8 px plan; else whole) and on onnxruntime-node, same weights and plan. */
async function bothWays(tiled: boolean, moments: boolean): Promise<{ wasm: Tensor; node: Tensor }> {
  const runner = clipEncoderRunner(config, weights, { provider: 'wasm' }, { moments }, async (model, options) => {
    const session = await createSession(model, options);
    assert.equal(session.provider, 'wasm');
    return session;
  });
  const web = new BoundEncoder(miniMaxH3, config, runner, miniMaxH3Encoder);
  const node = await loadEncoder({ config: MINIMAX_H3_TINY, weights: 'synthetic', seed: 4 }, { threads: 1, moments });
  try {
    for (const e of [web, node]) setTiling(e, tiled ? TILES : 'off');
    return { wasm: await web.encode(video), node: await node.encode(video) };
  } finally {
    await web.dispose();
    await node.dispose();
  }
}

function assertNear(wasm: Tensor, node: Tensor, label: string): void {
  assert.deepEqual(wasm.dims, node.dims, label);
  const { maxAbs, scale } = difference(wasm, node);
  assert.ok(maxAbs <= 1e-5 * scale, `${label}: max |wasm − node| = ${maxAbs} (largest |value| ${scale})`);
}

test('minimax-h3 encoder on WASM, whole (two clips, token_drop): the Node encode within 1e-5, diffusers within 1e-4', async () => {
  const { wasm, node } = await bothWays(false, false);
  assert.deepEqual(wasm.dims, [1, 24, 7, 12, 18]);
  assertNear(wasm, node, 'whole');
  assertMatchesGolden(wasm, golden('encode-tiny-whole-every2'), 'wasm whole', 2);
});

test("minimax-h3 encoder on WASM, tiled (32 / 8 px) with the moments: the Node moments within 1e-5, diffusers' mean and std within 1e-4", async () => {
  const { wasm, node } = await bothWays(true, true);
  assert.deepEqual(wasm.dims, [1, 48, 7, 12, 18]);
  assertNear(wasm, node, 'tiled moments');
  assertMatchesGolden(latentMean(wasm), golden('encode-tiny-tiled-every2'), 'wasm tiled mean', 2);
  const std = subsample(latentStd(wasm), 2);
  const expected = golden('encode-tiny-std-tiled-every2');
  let worst = 0;
  for (let i = 0; i < expected.data.length; i++) worst = Math.max(worst, Math.abs(std.data[i]! - expected.data[i]!) / expected.data[i]!);
  assert.ok(worst <= 1e-4, `wasm std relative error ${worst}`);
});
