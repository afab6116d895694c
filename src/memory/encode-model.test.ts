// The memory model of an encode (VaeSpec.part 'encoder'): the encoder's own graphs sized at the
// image tile (not the decoder's at the latent), the image as the assembling process's input, the
// latents as its output (the moments when it samples), read band by band when tiled; a row-sharded
// encode's ranks walk their bands of image rows; and the policy offers an encode every class.

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

test('the policy offers an encode every class, as a decode: exact (whole, row sharding), halo-exact tiles of a local encoder, blended tiles', () => {
  const vae = encoderOf('tae', { variant: 'taesd' });
  const size = { height: 256, width: 256 };
  const plans = [...policyPlans(vae, size, { ranks: 2 })];
  const offered = plans.map((p) => p.plan.strategy);
  for (const s of ['whole', 'shard', 'exact-tile', 'tile'] as const) assert.ok(offered.includes(s), `${s} offered`);
  // By class: exact first, then halo-exact, then blended.
  const order = { exact: 0, 'halo-exact': 1, blended: 2 };
  assert.deepEqual(
    plans.map((p) => order[p.class]),
    plans.map((p) => order[p.class]).sort((a, b) => a - b),
  );
  // What the session asks for an encode that samples (or a video encoder's): blended tiles and the whole encode only.
  const tiles = [...policyPlans(vae, size, { ranks: 2, strategies: ['tile'] })].map((p) => p.plan.strategy);
  assert.ok(tiles.includes('whole') && tiles.includes('tile'));
  assert.ok(!tiles.includes('shard') && !tiles.includes('exact-tile'));
  // A GroupNorm encoder: row sharding (its statistics merged) but no halo-exact tiles (not local).
  const kl = [...policyPlans(encoderOf('autoencoder-kl', SMALL_KL), { height: 64, width: 64 }, { ranks: 2 })].map((p) => p.plan.strategy);
  assert.ok(kl.includes('shard') && !kl.includes('exact-tile'));
  // A budget under the whole encode's bound, in this process: the first plan in the policy's order
  // that fits, of the most exact class that has one.
  const whole = predictMemory(vae, { strategy: 'whole', ranks: 1 }, size, { threads: 1 });
  const result = chooseWithinBudget(vae, size, { bytes: whole.boundBytes - 1 }, { ranks: 1, threads: 1, more: 100 });
  assert.equal(
    result.choice,
    result.alternatives.find((a) => a.fits),
  );
  assert.ok(result.choice && result.choice.plan.strategy !== 'whole');
  const fitting = result.alternatives.filter((a) => a.fits).map((a) => order[a.class]);
  assert.equal(order[result.choice.class], Math.min(...fitting));
});

test("a row-sharded encode's rank walks its band of image rows (input rows, not latent rows): about half the one-rank walk", () => {
  const vae = encoderOf('autoencoder-kl', SMALL_KL);
  const size = { height: 128, width: 64 };
  const one = predictMemory(vae, { strategy: 'shard', ranks: 1 }, size, { threads: 1 }).ranks[0]!.terms.shard;
  const two = predictMemory(vae, { strategy: 'shard', ranks: 2 }, size, { threads: 1 });
  const whole = predictMemory(vae, { strategy: 'whole', ranks: 1 }, size, { threads: 1 }).coordinator.terms.encoderActivation;
  // One band over every image row walks what the whole encode holds (the same graph, staged); two
  // bands each about half plus their halos — a walk over latent rows read 1/r of the band.
  assert.ok(one >= 0.8 * whole, `${one} vs whole ${whole}`);
  for (const r of two.ranks) {
    assert.ok(r.terms.shard > 0.4 * one && r.terms.shard < 0.75 * one, `rank ${r.rank}: ${r.terms.shard} of ${one}`);
  }
  // The image is read whole by the coordinator (the bands are cut from it).
  assert.equal(two.coordinator.terms.inputImage, 4 * 3 * 128 * 64);
});

test('an encode that samples returns the moments: twice the latents out, and the sample drawn from them', () => {
  const vae = encoderOf('autoencoder-kl', SMALL_KL);
  const size = { height: 64, width: 96 };
  const latent = 4 * 4 * 32 * 48;
  const plan: MemoryPlan = { strategy: 'tile', ranks: 2, window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } };
  const mean = predictMemory(vae, plan, size, { threads: 1 });
  const moments = predictMemory(vae, plan, size, { threads: 1, moments: true });
  assert.equal(mean.coordinator.terms.output, latent);
  assert.equal(moments.coordinator.terms.output, 2 * latent);
  assert.equal(moments.coordinator.terms.buffers - mean.coordinator.terms.buffers, latent);
  // Each rank returns its tiles' moments: twice the latent bytes it owns.
  mean.ranks.forEach((r, i) => {
    const image = 4 * 3 * 32 * 32;
    assert.equal(moments.ranks[i]!.terms.buffers - image, 2 * (r.terms.buffers - image));
  });
});

test('tiles encoded in this process with several threads add no thread arenas (measured: bench/results/encode-sd.md)', () => {
  const vae = encoderOf('autoencoder-kl', SMALL_KL);
  const plan: MemoryPlan = { strategy: 'tile', ranks: 1, window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } };
  const size = { height: 64, width: 96 };
  const two = predictMemory(vae, plan, size, { threads: 2 });
  assert.equal(two.coordinator.terms.threadArena, 0);
  assert.equal(two.peakBytes, predictMemory(vae, plan, size, { threads: 1 }).peakBytes);
  // A decode's tiles in this process still count them.
  const decoder = planningVae('autoencoder-kl', SMALL_KL);
  const decoded = predictMemory(
    decoder,
    { ...plan, window: { height: 64, width: 64 }, overlap: { height: 16, width: 16 } },
    { height: 128, width: 192 },
    { threads: 2 },
  );
  assert.ok(decoded.coordinator.terms.threadArena > 0);
});
