// The memory model sizes a float16 graph's tensors at 2 bytes and counts its float32 islands'
// Casts (graph/precision.ts); the Cast of a weight is folded by onnxruntime into the weights, so
// it is no activation. Judged by hand-counted bytes, and a row-sharded prediction against fp32's.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphBuilder } from '../graph/builder.js';
import { modelInPrecision } from '../graph/precision.js';
import { planningVae } from '../families/registry.js';
import { TINY_KL } from '../ranks/testing/tiny-vae.js';
import { activationPeak } from './liveness.js';
import { predictMemory } from './model.js';
import { chooseWithinBudget } from './policy.js';

test('fp16 liveness: 2-byte activations, float32 Casts counted, weight Casts folded', () => {
  const g = new GraphBuilder('conv_norm');
  const x = g.input('x', [1, 2, 8, 8]);
  const h = g.conv(x, g.param('w', { dims: [4, 2, 1, 1], data: new Float32Array(8) }), undefined);
  g.output('y', g.relu(h));
  const model = g.toModel();
  const dims = { x: [1, 2, 8, 8] };
  // fp32: Conv [1,4,8,8] 1024 B, then Relu's 1024 B while the Conv's is read: 2048 B.
  assert.equal(activationPeak(model, dims).peakBytes, 2048);
  // fp16: x:fp16 128 B; Conv 512 B (with x:fp16: 640 B); Relu 512 B (with the Conv's: 1024 B); the
  // output's Identity is a view; its Cast to float32 reads 512 B and writes 1024 B: 1536 B. The weight's Cast is folded.
  const half = modelInPrecision(model, 'fp16');
  const peak = activationPeak(half, dims);
  assert.equal(peak.peakBytes, 1536);
  assert.equal(peak.maxTensorBytes, 1024);
});

// Row sharding in float16: the shard plan is the float32 graph's (the rewrite's Casts would split
// its GroupNorm sync regions, which the plan reads as contiguous runs), each stage's work the
// rewritten stage's. Judged against the fp32 prediction of the same plan: the values held between
// steps stay float32, so only the work shrinks, and no rank's shard term is below half of fp32's.
test('fp16 row sharding: predicted from the float32 plan, each stage sized in float16', () => {
  const sample = { height: 16, width: 16 };
  const plan = { strategy: 'shard', ranks: 2 } as const;
  const full = predictMemory(planningVae('autoencoder-kl', TINY_KL), plan, sample);
  const half = predictMemory({ ...planningVae('autoencoder-kl', TINY_KL), precision: 'fp16' }, plan, sample);
  assert.equal(half.ranks.length, 2);
  half.ranks.forEach((r, i) => {
    const fp32 = full.ranks[i]!.terms.shard;
    assert.ok(r.terms.shard < fp32 && r.terms.shard > fp32 / 2, `rank ${i}: fp16 shard term ${r.terms.shard} vs fp32 ${fp32}`);
  });
});

// `distvae plan --precision fp16 --ranks 2` (and a decode with no plan flags) weighs row sharding
// among its plans: the policy predicts every alternative, so one refusal refused them all.
test('fp16 plans: the policy weighs row sharding on 2 ranks with the rest', () => {
  const vae = { ...planningVae('autoencoder-kl', TINY_KL), precision: 'fp16' as const };
  const { alternatives } = chooseWithinBudget(vae, { height: 64, width: 64 }, { bytes: 2 ** 40 }, { ranks: 2 });
  assert.ok(
    alternatives.some((a) => a.plan.strategy === 'shard' && a.plan.ranks === 2),
    alternatives.map((a) => a.plan.strategy).join(', '),
  );
});
