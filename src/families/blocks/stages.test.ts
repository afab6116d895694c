// Cutting a chain by weight bytes: greedy in link order, a link over the budget alone, every
// parameter owned by a link (a prefix that is only a name's start does not own it), and stage
// sizes that do not cut the links refused. Running a cut chain is tested where a family uses it
// (ltx2/encoder-stages.test.ts: staged equals fused).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import type { ParamSpec } from '../../weights/synthetic.js';
import { Module } from './blocks.js';
import { buildChain, planStages, type Chain, type ChainLink } from './stages.js';

/** A float32 vector of `n` elements: 4n bytes. */
const vector = (name: string, n: number): ParamSpec => ({ name, dims: [n], init: 'bias' });

test('planStages: consecutive links while they fit, a link over the budget alone, bytes from the parameter list', () => {
  const paths = ['m.a', 'm.b', 'm.c', 'm.d', 'm.e'];
  // 40, 40, 200, 8 + 12 (two parameters), 40 bytes.
  const params = [
    vector('m.a.w', 10),
    vector('m.b.w', 10),
    vector('m.c.w', 50),
    vector('m.d.w', 2),
    vector('m.d.b', 3),
    vector('m.e.w', 10),
  ];
  assert.deepEqual(planStages(paths, params, 100), [
    { links: ['m.a', 'm.b'], bytes: 80 },
    { links: ['m.c'], bytes: 200 },
    { links: ['m.d', 'm.e'], bytes: 60 },
  ]);
  assert.deepEqual(
    planStages(paths, params, 1000).map((s) => s.links.length),
    [5],
  );
  assert.throws(
    () => planStages(['m.a'], [vector('m.ab.w', 1)], 100),
    (e: unknown) => e instanceof DistVaeError && /m\.ab\.w lies under no link/.test(e.message),
  );
  assert.throws(() => planStages(paths, params, 0), /must be positive, got 0/);
});

test('buildChain: stage k hands after.<last link> to stage k + 1; sizes that do not cut the links are refused', () => {
  const link = (path: string): ChainLink => ({ path, channels: 2, apply: (_root: Module, x) => x });
  const chain: Omit<Chain, 'stageSizes'> = {
    name: 'toy',
    docString: 'toy chain',
    input: { name: 'x', dims: [1, 2] },
    links: [link('a'), link('b'), link('c')],
    activationDims: (c: number) => [1, c],
    finish: (g, x) => g.output('y', x, [1, 2]),
  };
  const source = { take: () => assert.fail('no parameters') };
  const stages = buildChain({ ...chain, stageSizes: [2, 1] }, source);
  assert.deepEqual(
    stages.map((g) => {
      const graph = g.toModel().graph!;
      return [g.name, graph.input!.map((v) => v.name), graph.output!.map((v) => v.name)];
    }),
    [
      ['toy stage 1/2 (a … b)', ['x'], ['after.b']],
      ['toy stage 2/2 (c … c)', ['after.b'], ['y']],
    ],
  );
  assert.equal(buildChain({ ...chain, stageSizes: [3] }, source)[0]!.name, 'toy');
  assert.throws(() => buildChain({ ...chain, stageSizes: [2, 2] }, source), /do not cut 3 links/);
});
