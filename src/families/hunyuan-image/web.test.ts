// The browser build's runtime decodes HunyuanImage: the decoder graph (its channel-repeat Resize,
// depth-to-space upsamplers, 1×1-conv attention) runs on onnxruntime-web's WASM provider — the
// module package.json's `browser` map puts in a page — here in Node, and equals diffusers' golden
// (testing/goldens/tiny-whole.npy) within 1e-4 of the largest value, as the Node session does.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { difference } from '../../graph/testing/compare.js';
import { readNpy } from '../../io/npy.js';
import { configureWebRuntime, createSession } from '../../runtime/web-session.js';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { buildHunyuanImageDecoderGraph, hunyuanImageDecoderParams } from './graph.js';
import { hunyuanImage } from './spec.js';
import { HUNYUAN_IMAGE_TINY } from './testing/configs.js';

test('hunyuan-image on onnxruntime-web (WASM): the whole tiny decode equals diffusers within 1e-4 of the largest value', async () => {
  configureWebRuntime({ threads: 1 });
  const config = resolveFamilyConfig(hunyuanImage, HUNYUAN_IMAGE_TINY);
  const weights = syntheticWeights(hunyuanImageDecoderParams(config), 3);
  const session = await createSession(buildHunyuanImageDecoderGraph(config, weights).toModel(), { provider: 'wasm' });
  try {
    assert.equal(session.provider, 'wasm');
    const out = (await session.run({ latent: seededTensor([1, 64, 12, 18], 9) }))['sample']!;
    const expected = readNpy(fileURLToPath(new URL('./testing/goldens/tiny-whole.npy', import.meta.url)));
    assert.deepEqual(out.dims, expected.dims);
    const { maxAbs, scale } = difference(out, expected);
    assert.ok(maxAbs <= 1e-4 * scale, `max |wasm − diffusers| = ${maxAbs} (largest |value| ${scale})`);
  } finally {
    await session.dispose();
  }
});
