// The Wan encoder's chunk graphs on onnxruntime-web's WASM provider (what a page's
// loadWebEncoder runs, through the browser map's session module): the runner with web sessions
// equals diffusers' goldens within 1e-4 of the largest value — Wan 2.1's 9 frames (`first`, then
// two `next` chunks with the caches threaded) and a Qwen-Image image (`only`).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { difference } from '../../graph/testing/compare.js';
import { readNpy } from '../../io/npy.js';
import { configureWebRuntime, createSession } from '../../runtime/web-session.js';
import { seededTensor } from '../../tensor.js';
import { bindWeights } from '../../weights/bind.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import { qwenImage } from '../qwen-image/spec.js';
import type { FamilySpec, RawConfig } from '../types.js';
import { buildWanEncoderGraph, wanEncoderParams } from './encoder-graph.js';
import { ChunkEncoderRunner } from './encoder-runner.js';
import { wan } from './spec.js';

configureWebRuntime({ threads: 1 });

const CASES: { label: string; family: FamilySpec; config: RawConfig; dims: number[]; golden: string }[] = [
  {
    label: 'Wan 2.1, 9 frames',
    family: wan,
    config: {
      base_dim: 8,
      dim_mult: [1, 2],
      num_res_blocks: 1,
      temperal_downsample: [true],
      z_dim: 16,
      scale_factor_spatial: 2,
      scale_factor_temporal: 2,
    },
    dims: [1, 3, 9, 40, 24],
    golden: 'wan-encode-whole.npy',
  },
  {
    label: 'Qwen-Image, one frame',
    family: qwenImage,
    config: { base_dim: 8, dim_mult: [1, 2], num_res_blocks: 1, temperal_downsample: [true], z_dim: 16 },
    dims: [1, 3, 1, 40, 24],
    golden: 'qwenimage-encode-whole.npy',
  },
];

for (const c of CASES) {
  test(`${c.label}: the encoder on onnxruntime-web (WASM) equals diffusers within 1e-4 of the largest value`, async () => {
    const config = resolveFamilyConfig(c.family, c.config);
    const weights = bindWeights(wanEncoderParams(config), syntheticWeights(wanEncoderParams(config), 4), { source: 'test' });
    const runner = new ChunkEncoderRunner(
      (step) => buildWanEncoderGraph(config, weights, step).toModel(),
      { provider: 'wasm' },
      1,
      createSession,
    );
    try {
      const latents = await runner.decode(seededTensor(c.dims, 11));
      const expected = readNpy(fileURLToPath(new URL(`testing/goldens/${c.golden}`, import.meta.url)));
      assert.deepEqual(latents.dims, expected.dims);
      const { maxAbs, scale } = difference(latents, expected);
      assert.ok(maxAbs <= 1e-4 * scale, `max |wasm − diffusers| = ${maxAbs} (largest |value| ${scale})`);
    } finally {
      await runner.dispose();
    }
  });
}
