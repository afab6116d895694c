// The browser build's runtime decodes HunyuanVideo 1.5: the decoder graph (5-D causal convs, the
// RMS norm's ReduceL2, the channel-repeat Resize, the 8-D packed-to-space transposes, the
// frame-causal attention) runs on onnxruntime-web's WASM provider — the module package.json's
// `browser` map puts in a page — here in Node, and equals diffusers' golden
// (testing/goldens/tiny-whole-every2.npy, 2 latent frames) within 1e-4 of the largest value.

import { test } from 'node:test';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { decodeOnWasm } from '../testing/web.js';
import { buildHunyuanVideo15DecoderGraph, hunyuanVideo15DecoderParams } from './graph.js';
import { hunyuanVideo15 } from './spec.js';
import { HUNYUAN_VIDEO_15_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);

test('hunyuan-video-1.5 on onnxruntime-web (WASM): the whole tiny decode equals diffusers within 1e-4 of the largest value', async () => {
  const config = resolveFamilyConfig(hunyuanVideo15, HUNYUAN_VIDEO_15_TINY);
  const weights = syntheticWeights(hunyuanVideo15DecoderParams(config), 3);
  const out = await decodeOnWasm(buildHunyuanVideo15DecoderGraph(config, weights), seededTensor([1, 32, 2, 12, 18], 9));
  // The golden keeps every second row and column.
  assertMatchesGolden(out, golden('tiny-whole-every2'), 'wasm', 2);
});
