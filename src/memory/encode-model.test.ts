// The memory model of an encode (VaeSpec.part 'encoder'): the encoder's own graphs sized at the
// image tile (not the decoder's at the latent), the image as the assembling process's input, the
// latents as its output, read band by band when tiled; and the policy offers an encode only the
// strategies its engine runs.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae, runtimeOf } from '../families/registry.js';
import type { VaeSpec } from '../families/types.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { activationPeak } from './liveness.js';
import { predictMemory, type MemoryPlan } from './model.js';
import { chooseWithinBudget, policyPlans } from './policy.js';

const SMALL_KL = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [16, 32],
  layers_per_block: 1,
  norm_num_groups: 8,
  latent_channels: 4,
};

function encoderOf(family: string, config?: Record<string, unknown>): VaeSpec {
  return { ...planningVae(family, config), part: 'encoder' };
}

test("an encode's activation is its encoder graph's liveness peak at the image tile", () => {
  const vae = encoderOf('autoencoder-kl', SMALL_KL);
  const encoder = runtimeOf(vae.family).encoder!;
  const graph = encoder.graph!(vae.config, syntheticWeights(encoder.params(vae.config), 1)).toModel();
  const size = { height: 64, width: 96 };
  const whole = predictMemory(vae, { strategy: 'whole', ranks: 1 }, size, { threads: 1 });
  // One session run over the whole image (B, 3, 64, 96): no attention chunking at a 32x48 latent.
  assert.equal(whole.coordinator.terms.encoderActivation, activationPeak(graph, { image: [1, 3, 64, 96] }).peakBytes);
  assert.equal(whole.coordinator.terms.activation, 0);
  // Inputs and outputs: the float image in (held whole), the latents (4 x 32 x 48) out.
  assert.equal(whole.coordinator.terms.output, 4 * 4 * 32 * 48);
  assert.equal(whole.coordinator.terms.inputImage, 4 * 3 * 64 * 96);

  // Tiles of 32 px: each run's peak is the graph's at the tile; read band by band, the image is two bands' rows.
  const plan: MemoryPlan = { strategy: 'tile', ranks: 1, window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } };
  const tiled = predictMemory(vae, plan, size, { threads: 1, bands: true });
  assert.equal(tiled.coordinator.terms.encoderActivation, activationPeak(graph, { image: [1, 3, 32, 32] }).peakBytes);
  assert.equal(tiled.coordinator.terms.buffers, 2 * 4 * 3 * 32 * 96);
  assert.equal(tiled.coordinator.terms.inputImage, 0);
  assert.equal(predictMemory(vae, plan, size, { threads: 1 }).coordinator.terms.inputImage, 4 * 3 * 64 * 96);
  // On 2 process ranks: each rank holds its tiles' latents and the largest image tile it receives.
  const ranks = predictMemory(vae, { ...plan, ranks: 2 }, size, { threads: 1 });
  assert.equal(ranks.ranks.length, 2);
  for (const r of ranks.ranks) assert.ok(r.terms.buffers >= 4 * 3 * 32 * 32);
});

test('the policy offers an encode the strategies it has: whole and blended tiles, no row sharding or halo-exact tiles', () => {
  const vae = encoderOf('tae', { variant: 'taesd' });
  const size = { height: 256, width: 256 };
  const offered = [...policyPlans(vae, size, { ranks: 2, strategies: ['tile'] })].map((p) => p.plan.strategy);
  assert.ok(offered.includes('whole') && offered.includes('tile'));
  assert.ok(!offered.includes('shard') && !offered.includes('exact-tile'));
  const all = [...policyPlans(planningVae('tae', { variant: 'taesd' }), size, { ranks: 2 })].map((p) => p.plan.strategy);
  assert.ok(all.includes('shard') && all.includes('exact-tile'));
  // A budget under the whole encode's bound: tiles (in this process: rank processes would each add a runtime).
  const whole = predictMemory(vae, { strategy: 'whole', ranks: 1 }, size, { threads: 1 });
  const choice = chooseWithinBudget(vae, size, { bytes: whole.boundBytes - 1 }, { ranks: 1, threads: 1, strategies: ['tile'] }).choice;
  assert.equal(choice?.plan.strategy, 'tile');
});
