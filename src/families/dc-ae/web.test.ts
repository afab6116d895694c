// The browser build's runtime decodes DC-AE: the decoder graph (its channel-repeat Resize, pixel
// shuffles, RMS norms, grouped convs and linear attention) runs on onnxruntime-web's WASM provider — the
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
import { buildDcaeDecoderGraph, dcaeDecoderParams } from './graph.js';
import { dcae } from './spec.js';
import { DCAE_TINY } from './testing/configs.js';

test('dc-ae on onnxruntime-web (WASM): the whole tiny decode equals diffusers within 1e-4 of the largest value', async () => {
  configureWebRuntime({ threads: 1 });
  const config = resolveFamilyConfig(dcae, DCAE_TINY);
  const weights = syntheticWeights(dcaeDecoderParams(config), 3);
  const session = await createSession(buildDcaeDecoderGraph(config, weights).toModel(), { provider: 'wasm' });
  try {
    assert.equal(session.provider, 'wasm');
    const out = (await session.run({ latent: seededTensor([1, 32, 12, 18], 9) }))['sample']!;
    const expected = readNpy(fileURLToPath(new URL('./testing/goldens/tiny-whole.npy', import.meta.url)));
    assert.deepEqual(out.dims, expected.dims);
    const { maxAbs, scale } = difference(out, expected);
    assert.ok(maxAbs <= 1e-4 * scale, `max |wasm − diffusers| = ${maxAbs} (largest |value| ${scale})`);
  } finally {
    await session.dispose();
  }
});
