// The browser build's runtime decodes HunyuanVideo 1.5: the decoder graph (5-D causal convs, the
// RMS norm's ReduceL2, the channel-repeat Resize, the 8-D packed-to-space transposes, the
// frame-causal attention) runs on onnxruntime-web's WASM provider — the module package.json's
// `browser` map puts in a page — here in Node, and equals diffusers' golden
// (testing/goldens/tiny-whole-every2.npy, 2 latent frames) within 1e-4 of the largest value.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { difference } from '../../graph/testing/compare.js';
import { readNpy } from '../../io/npy.js';
import { configureWebRuntime, createSession } from '../../runtime/web-session.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { buildHunyuanVideo15DecoderGraph, hunyuanVideo15DecoderParams } from './graph.js';
import { hunyuanVideo15 } from './spec.js';
import { HUNYUAN_VIDEO_15_TINY } from './testing/configs.js';

/** Every second row and column of a (…, H, W) tensor, as the golden is stored. */
function everySecond(t: Tensor): Tensor {
  const [h, w] = t.dims.slice(-2) as [number, number];
  const planes = t.data.length / (h * w);
  const [oh, ow] = [Math.ceil(h / 2), Math.ceil(w / 2)];
  const data = new Float32Array(planes * oh * ow);
  for (let p = 0; p < planes; p++)
    for (let y = 0; y < oh; y++) for (let x = 0; x < ow; x++) data[(p * oh + y) * ow + x] = t.data[(p * h + 2 * y) * w + 2 * x]!;
  return { dims: [...t.dims.slice(0, -2), oh, ow], data };
}

test('hunyuan-video-1.5 on onnxruntime-web (WASM): the whole tiny decode equals diffusers within 1e-4 of the largest value', async () => {
  configureWebRuntime({ threads: 1 });
  const config = resolveFamilyConfig(hunyuanVideo15, HUNYUAN_VIDEO_15_TINY);
  const weights = syntheticWeights(hunyuanVideo15DecoderParams(config), 3);
  const session = await createSession(buildHunyuanVideo15DecoderGraph(config, weights).toModel(), { provider: 'wasm' });
  try {
    assert.equal(session.provider, 'wasm');
    const out = everySecond((await session.run({ latent: seededTensor([1, 32, 2, 12, 18], 9) }))['sample']!);
    const expected = readNpy(fileURLToPath(new URL('./testing/goldens/tiny-whole-every2.npy', import.meta.url)));
    assert.deepEqual(out.dims, expected.dims);
    const { maxAbs, scale } = difference(out, expected);
    assert.ok(maxAbs <= 1e-4 * scale, `max |wasm − diffusers| = ${maxAbs} (largest |value| ${scale})`);
  } finally {
    await session.dispose();
  }
});
