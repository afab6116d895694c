// The memory policy (which plan a budget gets), the refusal when nothing fits, per-tensor limits,
// budget sizes, and the fallback ladder under injected allocation failures.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TINY_KL } from '../ranks/testing/tiny-vae.js';
import { DistVaeError } from '../errors.js';
import { planningVae } from '../families/registry.js';
import { formatBytes, parseMemorySize } from '../runtime/memory-budget.js';
import { isMemoryFailure, ladderRungs, runLadder } from './ladder.js';
import { predictMemory } from './model.js';
import { budgetRefusal, chooseWithinBudget, policyPlans, tileCandidates, toneDrift } from './policy.js';

const kl = () => planningVae('autoencoder-kl', TINY_KL);
const SAMPLE = { height: 96, width: 128 }; // latent 48 x 64 at the tiny VAE's 2x ratio
const HUGE = { bytes: 2 ** 50 };

test('with one rank an ample budget gets the whole decode; with R > 1 ranks the faster exact plan, the whole one taking their threads on shared cores', () => {
  assert.equal(chooseWithinBudget(kl(), SAMPLE, HUGE).choice?.plan.strategy, 'whole');
  // Three ranks of one thread on a 3-core machine: the whole decode on one rank with 3 threads
  // against row sharding on the 3 ranks — the exact class, fastest first.
  const shared = chooseWithinBudget(kl(), SAMPLE, HUGE, { ranks: 3, threads: 1, cores: 3, more: 1 });
  const exact = shared.alternatives.filter((a) => a.class === 'exact');
  assert.deepEqual(exact.map((a) => a.plan.strategy).sort(), ['shard', 'whole']);
  const choice = shared.choice!;
  assert.ok(exact.every((a) => choice.time.seconds <= a.time.seconds));
  assert.deepEqual([choice.plan.strategy, choice.plan.ranks, choice.plan.threads], ['whole', 1, 3]);
  assert.match(choice.reason, /whole decode on one rank with 3 x 1 intra-op threads/);
  // A budget the whole decode does not fit but the shards do: row sharding on the 3 ranks.
  const wholePeak = shared.alternatives.find((a) => a.plan.strategy === 'whole')!.prediction.peakBytes;
  const shardPeak = shared.alternatives.find((a) => a.plan.strategy === 'shard')!.prediction.peakBytes;
  if (shardPeak < wholePeak) {
    const r3 = chooseWithinBudget(kl(), SAMPLE, { bytes: shardPeak }, { ranks: 3, threads: 1, cores: 3 }).choice!;
    assert.deepEqual([r3.plan.strategy, r3.plan.ranks], ['shard', 3]);
    assert.match(r3.reason, /exact: row sharding on 3 ranks/);
  }
});

test('a budget between the whole decode and the smallest tiles gets the fastest tiled plan that fits', () => {
  const vae = kl();
  const whole = predictMemory(vae, { strategy: 'whole', ranks: 1 }, SAMPLE).peakBytes;
  const budget = { bytes: whole - 1 };
  const result = chooseWithinBudget(vae, SAMPLE, budget, { more: 1000 });
  const choice = result.choice!;
  assert.equal(choice.plan.strategy, 'tile');
  assert.ok(choice.prediction.peakBytes <= budget.bytes);
  // Every plan ahead of the choice was evaluated and does not fit; the order is the policy's.
  const ahead = result.alternatives.slice(0, result.alternatives.indexOf(choice));
  assert.ok(ahead.length >= 1 && ahead.every((a) => !a.fits));
  assert.equal(ahead[0]!.plan.strategy, 'whole');
  // Within the class the fastest first: no tiled plan that fits is predicted faster.
  for (const a of result.alternatives.filter((x) => x.fits && x.plan.strategy === 'tile')) assert.ok(a.time.seconds >= choice.time.seconds);
});

test('tile candidates come in the order of expected agreement: shorter window side, then area, then seams, then work', () => {
  const list = tileCandidates(kl(), SAMPLE);
  assert.ok(list.length > 3);
  for (let i = 1; i < list.length; i++) {
    const [a, b] = [list[i - 1]!, list[i]!];
    const key = (c: typeof a) => [-c.side, -c.area, c.seams, c.decoded];
    const [ka, kb] = [key(a), key(b)];
    const cmp = ka.findIndex((v, k) => v !== kb[k]);
    assert.ok(cmp < 0 || ka[cmp]! < kb[cmp]!, `${JSON.stringify(a)} before ${JSON.stringify(b)}`);
  }
});

test('a local decoder (TAESD) tries halo-exact tiles before blended ones; one with GroupNorm (TAEF2) does not', () => {
  const strategies = (vae: ReturnType<typeof planningVae>) => [
    ...new Set([...policyPlans(vae, { height: 512, width: 512 })].map((p) => p.plan.strategy)),
  ];
  assert.deepEqual(strategies(planningVae('tae')), ['whole', 'exact-tile', 'tile']);
  assert.deepEqual(strategies(planningVae('tae', { variant: 'taef2' })), ['whole', 'tile']);
});

test('a per-tensor limit moves the choice to tiles even when the total fits', () => {
  const vae = kl();
  const whole = predictMemory(vae, { strategy: 'whole', ranks: 1 }, SAMPLE);
  const choice = chooseWithinBudget(vae, SAMPLE, { bytes: 2 ** 50, maxTensorBytes: whole.maxTensorBytes - 1 }).choice!;
  assert.equal(choice.plan.strategy, 'tile');
  assert.ok(choice.prediction.maxTensorBytes < whole.maxTensorBytes);
});

test('a budget nothing fits is refused, naming the smallest achievable peak and its plan', () => {
  const result = chooseWithinBudget(kl(), SAMPLE, { bytes: 1024 });
  assert.equal(result.choice, null);
  const smallest = Math.min(...result.alternatives.map((a) => a.prediction.peakBytes));
  assert.equal(result.smallest.prediction.peakBytes, smallest);
  const e = budgetRefusal(result);
  assert.equal(e.code, 'BUDGET_EXCEEDED');
  assert.equal(e.reasons[0]!.field, 'max-memory');
  assert.ok(e.message.includes(formatBytes(smallest)), e.message);
  assert.match(e.message, /tile \d+x\d+/);
});

test('the prediction grows with the sample and splits over ranks: each tile rank holds less than the whole decode', () => {
  const vae = kl();
  const small = predictMemory(vae, { strategy: 'whole', ranks: 1 }, { height: 64, width: 64 });
  const large = predictMemory(vae, { strategy: 'whole', ranks: 1 }, { height: 128, width: 128 });
  // Convolutions grow with the area (4x), the attention matrix with its square (16x).
  assert.ok(large.peakBytes > small.peakBytes && large.maxTensorBytes >= 4 * small.maxTensorBytes);
  const tiles = predictMemory(
    vae,
    { strategy: 'tile', ranks: 2, window: { height: 64, width: 64 }, overlap: { height: 16, width: 16 } },
    { height: 128, width: 128 },
  );
  assert.equal(tiles.ranks.length, 2);
  assert.ok(tiles.ranks.every((r) => r.terms.activation < large.coordinator.terms.activation));
  assert.equal(tiles.peakBytes, tiles.coordinatorBytes + tiles.ranks[0]!.peakBytes + tiles.ranks[1]!.peakBytes);
});

test('memory sizes: GiB, MiB, GB and bytes; anything else refused with the forms', () => {
  assert.equal(parseMemorySize('1.5GiB'), 1.5 * 2 ** 30);
  assert.equal(parseMemorySize('800MiB'), 800 * 2 ** 20);
  assert.equal(parseMemorySize('2GB'), 2e9);
  assert.equal(parseMemorySize('123456'), 123456);
  for (const bad of ['', '-1GiB', '1.5 parsecs', '0', 'GiB'])
    assert.throws(
      () => parseMemorySize(bad),
      (e: DistVaeError) => e.code === 'INVALID_ARGUMENT' && /1\.5GiB|> 0 bytes/.test(e.reasons[0]!.valid),
      bad,
    );
});

const allocationError = () =>
  new DistVaeError(
    'RANK_FAILED',
    'rank 0 failed: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Failed to allocate memory for requested buffer of size 1073741824',
  );

test('the ladder retries an allocation failure with the next plan that fits and reports every attempt', async () => {
  const result = chooseWithinBudget(kl(), SAMPLE, HUGE, { more: 10 });
  const rungs = ladderRungs(result.alternatives, result.choice!);
  assert.equal(rungs[0]!.plan.strategy, 'whole');
  const tried: string[] = [];
  const seen: string[] = [];
  const out = await runLadder(
    rungs,
    async (alt, i) => {
      tried.push(alt.plan.strategy);
      if (i === 0) throw allocationError();
      if (i === 1) throw new DistVaeError('RANK_FAILED', 'rank 0 was lost: process killed by SIGKILL');
      return 'decoded';
    },
    (a) => seen.push(a.outcome),
  );
  assert.equal(out.result, 'decoded');
  assert.deepEqual(
    out.attempts.map((a) => a.outcome),
    ['out-of-memory', 'out-of-memory', 'decoded'],
  );
  assert.deepEqual(seen, ['out-of-memory', 'out-of-memory', 'decoded']);
  assert.equal(out.rung, rungs[2]);
  assert.match(out.attempts[0]!.error!, /Failed to allocate/);
  assert.equal(out.attempts[0]!.predictedPeakBytes, rungs[0]!.prediction.peakBytes);
});

test('an exhausted ladder fails with LADDER_EXHAUSTED naming the plans; other failures are not retried', async () => {
  const result = chooseWithinBudget(kl(), SAMPLE, HUGE, { more: 10 });
  const rungs = ladderRungs(result.alternatives, result.choice!);
  await assert.rejects(
    runLadder(rungs, async () => {
      throw allocationError();
    }),
    (e: DistVaeError & { attempts?: unknown[] }) =>
      e.code === 'LADDER_EXHAUSTED' && e.attempts?.length === rungs.length && /whole, then tile/.test(e.message),
  );
  let calls = 0;
  await assert.rejects(
    runLadder(rungs, async () => {
      calls++;
      throw new DistVaeError('TENSOR_INVALID', 'tile 3 arrived with the wrong shape');
    }),
    (e: DistVaeError) => e.code === 'TENSOR_INVALID',
  );
  assert.equal(calls, 1);
  assert.equal(isMemoryFailure(new Error('ENOENT: no such file')), false);
  assert.equal(isMemoryFailure(new Error('outer', { cause: new RangeError('Array buffer allocation failed') })), true);
});

test('blended tiles on a decoder with GroupNorm and attention announce tone drift and name the fastest exact plan that fits', () => {
  const vae = kl();
  const drift = toneDrift(vae, SAMPLE, HUGE, { ranks: 2, threads: 1, cores: 2 })!;
  // The tiny KL decoder: GroupNorm in every resnet and one mid-block attention (its locality analysis).
  assert.ok((drift.ops['GroupNorm'] ?? 0) > 0 && drift.ops['Attention'] === 1, JSON.stringify(drift.ops));
  const alt = drift.alternative!;
  assert.ok(['whole', 'shard'].includes(alt.plan.strategy));
  assert.equal(alt.predictedPeakBytes, predictMemory(vae, alt.plan, SAMPLE).peakBytes);
  assert.match(drift.message, /may shift tone at their seams/);
  assert.ok(drift.message.includes(alt.options), drift.message);
  assert.match(alt.options, alt.plan.strategy === 'shard' ? /^--strategy shard --ranks \d$/ : /^--full/);
  // Under a budget only the shards fit, the note names row sharding; under one no exact plan fits, it says so.
  const wholePeak = predictMemory(vae, { strategy: 'whole', ranks: 1 }, SAMPLE).peakBytes;
  const shard4 = predictMemory(vae, { strategy: 'shard', ranks: 4 }, SAMPLE).peakBytes;
  const exactPeaks = [wholePeak, ...[2, 3, 4].map((r) => predictMemory(vae, { strategy: 'shard', ranks: r }, SAMPLE).peakBytes)];
  const none = toneDrift(vae, SAMPLE, { bytes: Math.min(...exactPeaks) - 1 }, { ranks: 2 })!;
  assert.equal(none.alternative, null);
  assert.match(none.message, /no exact plan .* fits a budget of/);
  if (shard4 < wholePeak) assert.equal(toneDrift(vae, SAMPLE, { bytes: wholePeak - 1 }, { ranks: 2 })!.alternative?.plan.strategy, 'shard');
});

test('a local decoder (TAESD) has no tone-drift note: its blended tiles differ only by the blend', () => {
  assert.equal(toneDrift(planningVae('tae'), { height: 512, width: 512 }, HUGE), null);
});

test('the bound a budget is compared with is at least the predicted median, for every plan of the policy', () => {
  const vae = kl();
  let plans = 0;
  for (const { plan } of policyPlans(vae, SAMPLE, { ranks: 2 })) {
    const p = predictMemory(vae, plan, SAMPLE);
    assert.ok(p.boundBytes >= p.peakBytes, `${JSON.stringify(plan)}: bound ${p.boundBytes} < median ${p.peakBytes}`);
    if (++plans >= 12) break;
  }
  assert.ok(plans >= 3);
});

test('the policy picks against the bound: a budget between the median and the bound of the whole decode gets tiles', () => {
  const vae = kl();
  const whole = predictMemory(vae, { strategy: 'whole', ranks: 1 }, SAMPLE);
  assert.ok(whole.boundBytes > whole.peakBytes);
  // The median fits this budget, the bound does not: a median policy would take the whole decode.
  const budget = { bytes: Math.floor((whole.peakBytes + whole.boundBytes) / 2) };
  const result = chooseWithinBudget(vae, SAMPLE, budget);
  assert.equal(result.alternatives[0]!.plan.strategy, 'whole');
  assert.equal(result.alternatives[0]!.fits, false);
  assert.notEqual(result.choice!.plan.strategy, 'whole');
  assert.ok(result.choice!.prediction.boundBytes <= budget.bytes);
  // At the bound itself the whole decode fits.
  assert.equal(chooseWithinBudget(vae, SAMPLE, { bytes: whole.boundBytes }).choice!.plan.strategy, 'whole');
});
