// The browser build's runtime encodes with every family's encoder graph: the AutoencoderKL
// encoder (stride-2 downsamplers with asymmetric pads), the HunyuanImage one (space-to-depth
// as stride-2 convs, the group-mean residual) and DC-AE's (RMS norms, linear attention) run on onnxruntime-web's WASM provider — the module
// package.json's `browser` map puts in a page — here in Node, and equal diffusers' goldens within
// 1e-4 of the largest value, as the Node sessions do.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildKlEncoderGraph, ENCODER_GRAPH_IO, klEncoderParams } from '../families/autoencoder-kl/encoder-graph.js';
import { autoencoderKl } from '../families/autoencoder-kl/spec.js';
import { buildHunyuanImageEncoderGraph, hunyuanImageEncoderParams } from '../families/hunyuan-image/encoder-graph.js';
import { hunyuanImage } from '../families/hunyuan-image/spec.js';
import { buildDcaeEncoderGraph, dcaeEncoderParams } from '../families/dc-ae/encoder-graph.js';
import { dcae } from '../families/dc-ae/spec.js';
import { DCAE_TINY } from '../families/dc-ae/testing/configs.js';
import { HUNYUAN_IMAGE_TINY } from '../families/hunyuan-image/testing/configs.js';
import { resolveFamilyConfig } from '../families/registry.js';
import { difference } from '../graph/testing/compare.js';
import { readNpy } from '../io/npy.js';
import { configureWebRuntime, createSession } from '../runtime/web-session.js';
import { seededTensor } from '../tensor.js';
import { syntheticWeights } from '../weights/synthetic.js';

const KL_TINY = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [16, 32],
  layers_per_block: 1,
  norm_num_groups: 8,
  sample_size: 128,
  latent_channels: 4,
};

const CASES = [
  {
    name: 'autoencoder-kl',
    build: () => {
      const config = resolveFamilyConfig(autoencoderKl, KL_TINY);
      return buildKlEncoderGraph(config, syntheticWeights(klEncoderParams(config), 4));
    },
    golden: new URL('../families/testing/goldens/kl-encode-whole.npy', import.meta.url),
  },
  {
    name: 'hunyuan-image',
    build: () => {
      const config = resolveFamilyConfig(hunyuanImage, HUNYUAN_IMAGE_TINY);
      return buildHunyuanImageEncoderGraph(config, syntheticWeights(hunyuanImageEncoderParams(config), 4));
    },
    golden: new URL('../families/hunyuan-image/testing/goldens/tiny-encode-whole.npy', import.meta.url),
  },
  {
    name: 'dc-ae',
    build: () => {
      const config = resolveFamilyConfig(dcae, DCAE_TINY);
      return buildDcaeEncoderGraph(config, syntheticWeights(dcaeEncoderParams(config), 4));
    },
    golden: new URL('../families/dc-ae/testing/goldens/encode-tiny-whole.npy', import.meta.url),
    image: [1, 3, 48, 72],
  },
];

// onnxruntime-web is configured once per process, before its first session.
configureWebRuntime({ threads: 1 });

for (const c of CASES) {
  test(`${c.name} encoder on onnxruntime-web (WASM) equals diffusers within 1e-4 of the largest value`, async () => {
    const session = await createSession(c.build().toModel(), { provider: 'wasm' });
    try {
      const image = seededTensor(('image' in c ? c.image : undefined) ?? [1, 3, 32, 48], 11);
      const out = (await session.run({ [ENCODER_GRAPH_IO.input]: image }))[ENCODER_GRAPH_IO.output]!;
      const expected = readNpy(fileURLToPath(c.golden));
      assert.deepEqual(out.dims, expected.dims);
      const { maxAbs, scale } = difference(out, expected);
      assert.ok(maxAbs <= 1e-4 * scale, `max |wasm − diffusers| = ${maxAbs} (largest |value| ${scale})`);
    } finally {
      await session.dispose();
    }
  });
}
