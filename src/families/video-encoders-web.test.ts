// The browser build's runtime encodes with the causal-3-D video encoders: the HunyuanVideo
// (strided causal convs, frame-causal attention), HunyuanVideo 1.5 (8-D space-to-packed
// transposes, channel-group means, RMS norms) and LTX-2 (width-first patchify, packing
// down-samplers) encoder graphs run on onnxruntime-web's WASM provider — the module
// package.json's `browser` map puts in a page — here in Node, and equal diffusers' goldens
// (each family's testing/goldens/*-encode-whole.npy) within 1e-4 of the largest value.

import { test } from 'node:test';
import { ENCODER_GRAPH_IO } from './autoencoder-kl/encoder-graph.js';
import { buildHunyuanVideoEncoderGraph, hunyuanVideoEncoderParams } from './hunyuan-video/encoder-graph.js';
import { hunyuanVideo } from './hunyuan-video/spec.js';
import { HUNYUAN_VIDEO_DIFREF_TINY } from './hunyuan-video/testing/configs.js';
import { buildHunyuanVideo15EncoderGraph, hunyuanVideo15EncoderParams } from './hunyuan-video-15/encoder-graph.js';
import { hunyuanVideo15 } from './hunyuan-video-15/spec.js';
import { HUNYUAN_VIDEO_15_TINY } from './hunyuan-video-15/testing/configs.js';
import { buildLtx2EncoderGraph, ltx2EncoderParams } from './ltx2/encoder-graph.js';
import { ltx2 } from './ltx2/spec.js';
import { LTX2_DIFREF_TINY } from './ltx2/testing/configs.js';
import { resolveFamilyConfig } from './registry.js';
import { assertMatchesGolden, goldensBeside } from './testing/golden-compare.js';
import { configureWebRuntime, createSession } from '../runtime/web-session.js';
import { seededTensor } from '../tensor.js';
import { syntheticWeights } from '../weights/synthetic.js';

/** A family folder's goldens: goldensBeside resolves testing/goldens/ beside the URL it is given. */
const goldensOf = (folder: string) => goldensBeside(new URL(`./${folder}/`, import.meta.url).href);

const CASES = [
  {
    name: 'hunyuan-video',
    build: () => {
      const config = resolveFamilyConfig(hunyuanVideo, HUNYUAN_VIDEO_DIFREF_TINY);
      return buildHunyuanVideoEncoderGraph(config, syntheticWeights(hunyuanVideoEncoderParams(config), 4));
    },
    video: [1, 3, 9, 32, 48],
    golden: goldensOf('hunyuan-video'),
  },
  {
    name: 'hunyuan-video-1.5',
    build: () => {
      const config = resolveFamilyConfig(hunyuanVideo15, HUNYUAN_VIDEO_15_TINY);
      return buildHunyuanVideo15EncoderGraph(config, syntheticWeights(hunyuanVideo15EncoderParams(config), 4));
    },
    video: [1, 3, 9, 32, 48],
    golden: goldensOf('hunyuan-video-15'),
  },
  {
    name: 'ltx2',
    build: () => {
      const config = resolveFamilyConfig(ltx2, LTX2_DIFREF_TINY);
      return buildLtx2EncoderGraph(config, syntheticWeights(ltx2EncoderParams(config), 4));
    },
    video: [1, 3, 9, 64, 96],
    golden: goldensOf('ltx2'),
  },
];

// onnxruntime-web is configured once per process, before its first session.
configureWebRuntime({ threads: 1 });

for (const c of CASES) {
  test(`${c.name} encoder on onnxruntime-web (WASM) equals diffusers within 1e-4 of the largest value`, async () => {
    const session = await createSession(c.build().toModel(), { provider: 'wasm' });
    try {
      const out = (await session.run({ [ENCODER_GRAPH_IO.input]: seededTensor(c.video, 11) }))[ENCODER_GRAPH_IO.output]!;
      assertMatchesGolden(out, c.golden('tiny-encode-whole'), `${c.name} on wasm`);
    } finally {
      await session.dispose();
    }
  });
}
