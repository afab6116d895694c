// Every registered family's row-sharding answer (families/registry.ts `rowShardingOf`, what the
// docs' families table shows) against what row sharding actually does on the family's tiny
// config: a family said to shard has a fused decoder graph whose shard plan the locality
// analysis accepts (shardedDecodeFor builds the same plan before any rank starts), exchanging
// what its runtime declares (halo rows, GroupNorm statistics, attention keys/values…); a family
// said not to is refused NO_DECODER_GRAPH, the message naming the family and the reason the
// table gives. A new family must appear here, so the table cannot drift from the code. The same
// for each family's encoder (`encoderRowShardingOf`): its shard plan builds on the tiny encoder,
// or `encoderModel()` — what the sharded encode reads before any rank starts — is refused
// NO_ENCODER_GRAPH with the reason the table gives.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { architectureModel } from '../../decode/decoder-model.js';
import { isDistVaeError } from '../../errors.js';
import { loadEncoder } from '../../encode/encoder.js';
import { encoderRowShardingOf, FAMILY_NAMES, planningVae, rowShardingOf, runtimeOf } from '../../families/registry.js';
import type { RawConfig } from '../../families/types.js';
import { KL_SMALL, TAE_SMALL } from '../../families/testing/config-files.js';
import { DCAE_TINY } from '../../families/dc-ae/testing/configs.js';
import { HUNYUAN_IMAGE_TINY } from '../../families/hunyuan-image/testing/configs.js';
import { HUNYUAN_VIDEO_15_TINY } from '../../families/hunyuan-video-15/testing/configs.js';
import { LTX2_DIFREF_TINY } from '../../families/ltx2/testing/configs.js';
import { MINIMAX_H3_TINY } from '../../families/minimax-h3/testing/configs.js';
import { HUNYUAN_VIDEO_TINY, LTX2_TINY, QWEN_IMAGE_TINY, WAN21_TINY } from '../../families/testing/video-configs.js';
import { shardExchanges, shardPlan } from './plan.js';

const { _class_name: _kl, ...KL_FIELDS } = KL_SMALL;
const TINY: Record<string, RawConfig> = {
  'autoencoder-kl': KL_SMALL,
  flux2: { ...KL_FIELDS, _class_name: 'AutoencoderKLFlux2', latent_channels: 8 },
  tae: TAE_SMALL,
  wan: WAN21_TINY,
  'qwen-image': QWEN_IMAGE_TINY,
  'hunyuan-video': HUNYUAN_VIDEO_TINY,
  ltx2: LTX2_TINY,
  'hunyuan-image': HUNYUAN_IMAGE_TINY,
  'dc-ae': DCAE_TINY,
  'hunyuan-video-1.5': HUNYUAN_VIDEO_15_TINY,
  'minimax-h3': MINIMAX_H3_TINY,
};

/** Where the decoder's tiny config has no buildable encoder (LTX2_TINY's ratios), the encoder's. */
const ENCODER_TINY: Record<string, RawConfig> = { ...TINY, ltx2: LTX2_DIFREF_TINY };

test('every family has a tiny config here (a new family must be checked too)', () => {
  assert.deepEqual(Object.keys(TINY).sort(), [...FAMILY_NAMES].sort());
});

for (const name of FAMILY_NAMES) {
  test(`${name}: the families table's row-sharding answer is what the locality analysis and the refusal say`, () => {
    const vae = planningVae(name, TINY[name]);
    const runtime = runtimeOf(vae.family);
    const answer = rowShardingOf(vae.family);
    const plan = () => shardPlan(architectureModel(vae.family, runtime, vae.config));
    if (answer.sharded) {
      assert.deepEqual([...answer.exchanges].sort(), shardExchanges(plan()).sort(), `${name}: FamilyRuntime.shardExchanges`);
      return;
    }
    assert.ok(runtime.graphWithheld, `${name} declares why it has no fused graph (FamilyRuntime.graphWithheld)`);
    assert.throws(
      plan,
      (e: unknown) =>
        isDistVaeError(e) &&
        e.code === 'UNSUPPORTED' &&
        e.reasons.some((r) => r.code === 'NO_DECODER_GRAPH') &&
        e.message.includes(`the ${name} family`) &&
        e.message.includes(answer.why),
    );
  });
}

test('Wan, Qwen-Image and LTX-2 are refused naming why: frame-by-frame with a causal cache, or a chain of stage graphs', () => {
  for (const name of ['wan', 'qwen-image'] as const) {
    const answer = rowShardingOf(planningVae(name, TINY[name]).family);
    assert.ok(!answer.sharded && /frame by frame/.test(answer.why) && /causal cache/.test(answer.why), name);
  }
  const ltx = rowShardingOf(planningVae('ltx2', LTX2_TINY).family);
  assert.ok(!ltx.sharded && /stage graphs/.test(ltx.why) && /timestep/.test(ltx.why));
});

for (const name of FAMILY_NAMES) {
  test(`${name}: the families table's encoder row-sharding answer is what the shard plan and the refusal say`, async () => {
    const family = planningVae(name, ENCODER_TINY[name]).family;
    const answer = encoderRowShardingOf(family);
    if (!answer) return;
    const encoder = await loadEncoder({ family: name, config: ENCODER_TINY[name]!, weights: 'synthetic', seed: 1 }, { threads: 1 });
    try {
      if (answer.sharded) {
        assert.ok(shardPlan(encoder.encoderModel()).steps.length > 0);
        return;
      }
      assert.throws(
        () => encoder.encoderModel(),
        (e: unknown) =>
          isDistVaeError(e) &&
          e.reasons.some((r) => r.code === 'NO_ENCODER_GRAPH') &&
          e.message.includes(`the ${name} encoder`) &&
          e.message.includes(answer.why),
      );
    } finally {
      await encoder.dispose();
    }
  });
}
