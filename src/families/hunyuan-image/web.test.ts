// The browser build's runtime decodes HunyuanImage: the decoder graph (its channel-repeat Resize,
// depth-to-space upsamplers, 1×1-conv attention) runs on onnxruntime-web's WASM provider — the
// module package.json's `browser` map puts in a page — here in Node, and equals diffusers' golden
// (testing/goldens/tiny-whole.npy) within 1e-4 of the largest value, as the Node session does.

import { test } from 'node:test';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { decodeOnWasm } from '../testing/web.js';
import { buildHunyuanImageDecoderGraph, hunyuanImageDecoderParams } from './graph.js';
import { hunyuanImage } from './spec.js';
import { HUNYUAN_IMAGE_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);

test('hunyuan-image on onnxruntime-web (WASM): the whole tiny decode equals diffusers within 1e-4 of the largest value', async () => {
  const config = resolveFamilyConfig(hunyuanImage, HUNYUAN_IMAGE_TINY);
  const weights = syntheticWeights(hunyuanImageDecoderParams(config), 3);
  const out = await decodeOnWasm(buildHunyuanImageDecoderGraph(config, weights), seededTensor([1, 64, 12, 18], 9));
  assertMatchesGolden(out, golden('tiny-whole'), 'wasm');
});
