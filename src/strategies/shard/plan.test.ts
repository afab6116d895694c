// The shard plan's band models: which stages output band statistics and which apply a
// GroupNorm in-graph, their feeds, and the refusal of a GroupNorm that no stage computes (whose
// statistics would have to run in JS).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphBuilder, type Value } from '../../graph/builder.js';
import { DistVaeError } from '../../errors.js';
import { seededTensor } from '../../tensor.js';
import { bandName } from './band-models.js';
import { shardPlan, type ShardPlan } from './plan.js';

/** x → conv → GroupNorm → SiLU → conv (→ GroupNorm when `trailingNorm`) → y. */
function chain(options: { leadingConv: boolean; trailingNorm: boolean }): GraphBuilder {
  const g = new GraphBuilder('chain');
  const p = (name: string, dims: number[], seed: number) => g.param(name, seededTensor(dims, seed, 0.4));
  let x: Value = g.input('x', [1, 4, 'h', 'w']);
  if (options.leadingConv) x = g.conv(x, p('c1.weight', [4, 4, 3, 3], 1), p('c1.bias', [4], 2), { pads: 1 });
  const n1 = g.scope('norm1');
  x = g.silu(
    n1.groupNorm(x, n1.param('weight', seededTensor([4], 3)), n1.param('bias', seededTensor([4], 4)), { groups: 2, epsilon: 1e-6 }),
  );
  x = g.conv(x, p('c2.weight', [4, 4, 3, 3], 5), p('c2.bias', [4], 6), { pads: 1 });
  if (options.trailingNorm) {
    const n2 = g.scope('norm2');
    x = n2.groupNorm(x, n2.param('weight', seededTensor([4], 7)), n2.param('bias', seededTensor([4], 8)), { groups: 2, epsilon: 1e-6 });
  }
  g.output('y', x);
  return g;
}

type Step = ShardPlan['steps'][number];
/** The stage before a chain's GroupNorm, the norm step, the stage after it, and the norm's input and output. */
function aroundNorm(plan: ShardPlan) {
  const [before, norm, after] = plan.steps as [
    Extract<Step, { kind: 'stage' }>,
    Extract<Step, { kind: 'group-norm' }>,
    Extract<Step, { kind: 'stage' }>,
  ];
  return { before, norm, after, x: norm.region.input, y: norm.region.output };
}

test('band models: the stage before a GroupNorm outputs its band statistics, the stage after applies it', () => {
  const plan = shardPlan(chain({ leadingConv: true, trailingNorm: false }).toModel());
  assert.deepEqual(
    plan.steps.map((s) => s.kind),
    ['stage', 'group-norm', 'stage'],
  );
  const { before, norm, after, x, y } = aroundNorm(plan);
  assert.deepEqual(
    before.band.stats.map((r) => r.name),
    [norm.region.name],
  );
  assert.deepEqual(
    after.band.applies.map((r) => r.name),
    [norm.region.name],
  );
  assert.deepEqual(after.band.inputs, [x], 'the stage after reads the GroupNorm input, not its output');
  const names = (values: { name?: string }[] | undefined) => (values ?? []).map((v) => v.name);
  // Both stages have a halo (3×3 convolutions): inputs come as above / band / below, outputs are cropped.
  assert.deepEqual(names(before.band.model.graph!.input), [bandName.above('x'), bandName.band('x'), bandName.below('x'), bandName.crop(x)]);
  assert.deepEqual(names(before.band.model.graph!.output), [bandName.cropped(x), bandName.mean(x), bandName.m2(x)]);
  assert.deepEqual(names(after.band.model.graph!.input), [
    bandName.above(x),
    bandName.band(x),
    bandName.below(x),
    bandName.scale(y),
    bandName.shift(y),
    bandName.zero(y),
    bandName.one(y),
    bandName.crop('y'),
  ]);
  // The merge step reads the statistics and the band (for its count); nothing reads y's GroupNorm output outside the stage.
  assert.equal(plan.lastUse.get(bandName.mean(x)), 1);
  assert.equal(plan.lastUse.get(x), 2);
  assert.equal(plan.lastUse.has(y), false);
});

test('a GroupNorm of the graph input (no stage computes its statistics) is refused by name', () => {
  assert.throws(
    () => shardPlan(chain({ leadingConv: false, trailingNorm: false }).toModel()),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'UNSUPPORTED' &&
      /GroupNorm norm1 reads the graph input or a sync region directly/.test(e.message) &&
      e.reasons[0]!.code === 'GROUP_NORM_UNSTAGED',
  );
  // A GroupNorm just before the graph output is fine: the output is an Identity stage after it.
  assert.deepEqual(
    shardPlan(chain({ leadingConv: true, trailingNorm: true }).toModel()).steps.map((s) => s.kind),
    ['stage', 'group-norm', 'stage', 'group-norm', 'stage'],
  );
});

test('one band over the whole image (halos off): band models read and write whole values, with no halo joins or crops', () => {
  const plan = shardPlan(chain({ leadingConv: true, trailingNorm: false }).toModel(), { halos: false });
  assert.equal(plan.halos, false);
  const { before, after, x, y } = aroundNorm(plan);
  const names = (values: { name?: string }[] | undefined) => (values ?? []).map((v) => v.name);
  assert.ok(before.halo.num > 0, 'the stage still records its halo (for the analysis and the collectives)');
  assert.equal(before.band.halo, false);
  assert.deepEqual(names(before.band.model.graph!.input), ['x']);
  assert.deepEqual(names(before.band.model.graph!.output), [x, bandName.mean(x), bandName.m2(x)]);
  assert.deepEqual(names(after.band.model.graph!.input), [x, bandName.scale(y), bandName.shift(y), bandName.zero(y), bandName.one(y)]);
  assert.deepEqual(names(after.band.model.graph!.output), ['y']);
  assert.ok(!before.band.model.graph!.node!.some((n) => n.op_type === 'Concat' || n.op_type === 'Slice'));
});
