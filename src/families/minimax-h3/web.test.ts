// The browser build's runtime decodes MiniMax-H3: the ViT decoder graph of a clip (Split / Concat
// rotary, 4-D MatMul attention, LayerNorm, the 8-D patch unfolding) runs on onnxruntime-web's WASM
// provider — the module package.json's `browser` map puts in a page — here in Node, through the
// family's own clip loop, and equals diffusers' golden (testing/goldens/tiny-whole-frames3.npy,
// two clips) within 1e-4 of the largest value, as the Node session does.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { difference } from '../../graph/testing/compare.js';
import { readNpy } from '../../io/npy.js';
import { configureWebRuntime, createSession } from '../../runtime/web-session.js';
import { seededTensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { buildMiniMaxDecoderGraph, miniMaxDecoderParams } from './graph.js';
import { decodeClips } from './runtime.js';
import { miniMaxH3 } from './spec.js';
import { MINIMAX_H3_TINY } from './testing/configs.js';

test('minimax-h3 on onnxruntime-web (WASM): the whole tiny decode (two clips) equals diffusers within 1e-4 of the largest value', async () => {
  configureWebRuntime({ threads: 1 });
  const config = resolveFamilyConfig(miniMaxH3, MINIMAX_H3_TINY);
  const weights = syntheticWeights(miniMaxDecoderParams(config), 3);
  const session = await createSession(buildMiniMaxDecoderGraph(config, weights, { frames: 7, height: 6, width: 9 }).toModel(), {
    provider: 'wasm',
  });
  try {
    assert.equal(session.provider, 'wasm');
    const out = await decodeClips(
      config,
      seededTensor([1, 24, 8, 6, 9], 9),
      async (clip) => (await session.run({ latent: clip }))['sample']!,
    );
    // The golden keeps every third frame.
    const [, c, f, h, w] = out.dims as [number, number, number, number, number];
    const kept = Math.ceil(f / 3);
    const data = new Float32Array(c * kept * h * w);
    for (let ch = 0; ch < c; ch++)
      for (let k = 0; k < kept; k++)
        data.set(out.data.subarray((ch * f + 3 * k) * h * w, (ch * f + 3 * k + 1) * h * w), (ch * kept + k) * h * w);
    const expected = readNpy(fileURLToPath(new URL('./testing/goldens/tiny-whole-frames3.npy', import.meta.url)));
    assert.deepEqual([1, c, kept, h, w], expected.dims);
    const { maxAbs, scale } = difference({ dims: [1, c, kept, h, w], data }, expected);
    assert.ok(maxAbs <= 1e-4 * scale, `max |wasm − diffusers| = ${maxAbs} (largest |value| ${scale})`);
  } finally {
    await session.dispose();
  }
});
