// The browser build's runtime decodes DC-AE: the decoder graph (its channel-repeat Resize, pixel
// shuffles, RMS norms, grouped convs and linear attention) runs on onnxruntime-web's WASM provider — the
// module package.json's `browser` map puts in a page — here in Node, and equals diffusers' golden
// (testing/goldens/tiny-whole.npy) within 1e-4 of the largest value, as the Node session does.

import { test } from 'node:test';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { decodeOnWasm } from '../testing/web.js';
import { buildDcaeDecoderGraph, dcaeDecoderParams } from './graph.js';
import { dcae } from './spec.js';
import { DCAE_TINY } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);

test('dc-ae on onnxruntime-web (WASM): the whole tiny decode equals diffusers within 1e-4 of the largest value', async () => {
  const config = resolveFamilyConfig(dcae, DCAE_TINY);
  const weights = syntheticWeights(dcaeDecoderParams(config), 3);
  const out = await decodeOnWasm(buildDcaeDecoderGraph(config, weights), seededTensor([1, 32, 12, 18], 9));
  assertMatchesGolden(out, golden('tiny-whole'), 'wasm');
});
