// The browser build's runtime decodes MiniMax-H3: the ViT decoder graph of a clip (Split / Concat
// rotary, 4-D MatMul attention, LayerNorm, the 8-D patch unfolding) runs on onnxruntime-web's WASM
// provider — the module package.json's `browser` map puts in a page — here in Node, through the
// family's own clip loop, and equals diffusers' golden (testing/goldens/tiny-whole-frames3.npy,
// two clips) within 1e-4 of the largest value, as the Node session does.

import { test } from 'node:test';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { decodeOnWasm } from '../testing/web.js';
import { buildMiniMaxDecoderGraph, miniMaxDecoderParams } from './graph.js';
import { decodeClips } from './runtime.js';
import { miniMaxH3 } from './spec.js';
import { MINIMAX_H3_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);

test('minimax-h3 on onnxruntime-web (WASM): the whole tiny decode (two clips) equals diffusers within 1e-4 of the largest value', async () => {
  const config = resolveFamilyConfig(miniMaxH3, MINIMAX_H3_TINY);
  const weights = syntheticWeights(miniMaxDecoderParams(config), 3);
  const graph = buildMiniMaxDecoderGraph(config, weights, { frames: 7, height: 6, width: 9 });
  const out = await decodeOnWasm(graph, seededTensor([1, 24, 8, 6, 9], 9), (run, z) => decodeClips(config, z, run));
  // The golden keeps every third frame.
  assertMatchesGolden(out, golden('tiny-whole-frames3'), 'wasm', 1, 3);
});
