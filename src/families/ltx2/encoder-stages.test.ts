// The LTX-2 encoder cut into stage graphs: on the difref small config forced into many stages it
// equals the fused graph (within 1e-6 of the largest value; mean and moments) and diffusers'
// golden (within 1e-4, testing/goldens/README.md); at the published size it is cut by its
// parameter list alone (no weight allocated) into stages under 1 GiB, where the fused model
// would embed more than protobuf's 2 GiB.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSession } from '../../runtime/session.js';
import { createStagedSession } from '../../runtime/staged-session.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { syntheticWeights, weightBytes } from '../../weights/synthetic.js';
import { ENCODER_GRAPH_IO } from '../autoencoder-kl/encoder-graph.js';
import { MAX_STAGE_WEIGHT_BYTES } from '../blocks/stages.js';
import { resolveFamilyConfig } from '../registry.js';
import { assertMatchesGolden, goldensBeside } from '../testing/golden-compare.js';
import { buildLtx2EncoderGraph, buildLtx2EncoderStages, ltx2EncoderParams, ltx2EncoderStagePlan } from './encoder-graph.js';
import { ltx2 } from './spec.js';
import { LTX2_DIFREF_SMALL } from './testing/configs.js';

const golden = goldensBeside(import.meta.url);
const PROTOBUF_LIMIT = 2 ** 31;

function maxDifference(a: Tensor, b: Tensor): { maxAbs: number; scale: number } {
  assert.deepEqual(a.dims, b.dims);
  let maxAbs = 0;
  let scale = 0;
  for (let i = 0; i < a.data.length; i++) {
    maxAbs = Math.max(maxAbs, Math.abs(a.data[i]! - b.data[i]!));
    scale = Math.max(scale, Math.abs(b.data[i]!));
  }
  return { maxAbs, scale };
}

test('ltx2 small encoder: staged (one stage per link; a third of its weights per stage) equals the fused graph within 1e-6 and diffusers within 1e-4', async () => {
  const config = resolveFamilyConfig(ltx2, LTX2_DIFREF_SMALL);
  const params = ltx2EncoderParams(config);
  const weights = syntheticWeights(params, 4);
  const video = seededTensor([1, 3, 9, 64, 96], 14);
  const options = { intraOpThreads: 1 };
  const cases = [
    // conv_in, 4 × (resnet + down-sampler), the mid resnet, conv_out: every link its own stage.
    { maxStageBytes: 1, stages: 11, moments: false },
    { maxStageBytes: Math.ceil(weightBytes(params) / 3), stages: 4, moments: true },
  ];
  for (const c of cases) {
    const plan = ltx2EncoderStagePlan(config, c.maxStageBytes);
    assert.equal(plan.length, c.stages);
    for (const s of plan) assert.ok(s.bytes <= c.maxStageBytes || s.links.length === 1, `${s.links.join(', ')}: ${s.bytes} B`);
    assert.equal(
      plan.reduce((sum, s) => sum + s.bytes, 0),
      weightBytes(params),
    );
    const fused = await createSession(buildLtx2EncoderGraph(config, weights, { moments: c.moments }).toModel(), options);
    const stages = buildLtx2EncoderStages(config, weights, { moments: c.moments, maxStageBytes: c.maxStageBytes });
    assert.equal(stages.length, c.stages);
    const staged = await createStagedSession(stages, options);
    try {
      const feeds = { [ENCODER_GRAPH_IO.input]: video };
      const whole = (await fused.run(feeds))[ENCODER_GRAPH_IO.output]!;
      const cut = (await staged.run(feeds))[ENCODER_GRAPH_IO.output]!;
      // Measured when made: bitwise equal (max |Δ| = 0) in both cases.
      const { maxAbs, scale } = maxDifference(cut, whole);
      assert.ok(maxAbs <= 1e-6 * scale, `${c.stages} stages: max |staged − fused| = ${maxAbs} (largest ${scale})`);
      const mean = c.moments ? { dims: [1, 16, ...cut.dims.slice(2)], data: cut.data.subarray(0, cut.data.length / 2) } : cut;
      assertMatchesGolden(mean, golden('small-encode-whole'), `${c.stages} stages`);
    } finally {
      await Promise.all([fused.dispose(), staged.dispose()]);
    }
  }
});

test('ltx2 published encoder: 2.59 GiB of float32 weights, past protobuf’s 2 GiB as one model, cut into three stages under 1 GiB from its parameter list', () => {
  const config = resolveFamilyConfig(ltx2, undefined);
  const total = weightBytes(ltx2EncoderParams(config));
  assert.equal(total, 2_776_395_524);
  assert.ok(total > PROTOBUF_LIMIT);
  const plan = ltx2EncoderStagePlan(config);
  assert.deepEqual(
    plan.map((s) => [s.links[0], s.links[s.links.length - 1], s.bytes]),
    [
      ['encoder.conv_in', 'encoder.down_blocks.3.downsamplers.0', 935_890_176],
      ['encoder.mid_block.resnets.0', 'encoder.mid_block.resnets.0', 905_986_048],
      ['encoder.mid_block.resnets.1', 'encoder.conv_out', 934_519_300],
    ],
  );
  for (const s of plan) assert.ok(s.bytes <= MAX_STAGE_WEIGHT_BYTES);
  // LTX-2.3 (difref `ltx23`: block_out_channels [256, 512, 1024, 1024], layers_per_block [4, 6, 4, 2, 2]): 1.19 GiB, two stages.
  const ltx23 = resolveFamilyConfig(ltx2, {
    ...LTX2_DIFREF_SMALL,
    block_out_channels: [256, 512, 1024, 1024],
    decoder_block_out_channels: [256, 512, 1024],
    latent_channels: 128,
    layers_per_block: [4, 6, 4, 2, 2],
  });
  assert.equal(weightBytes(ltx2EncoderParams(ltx23)), 1_275_747_588);
  assert.equal(ltx2EncoderStagePlan(ltx23).length, 2);
});
