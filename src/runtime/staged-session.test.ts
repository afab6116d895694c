// A staged model computes what the same ops in one graph compute: later stages read earlier
// stages' outputs and the caller's feeds by name; a stage input nobody provides is refused.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphBuilder } from '../graph/builder.js';
import { seededTensor } from '../tensor.js';
import { createStagedSession } from './staged-session.js';

test('three stages: y = (x·2 + s)·w, with s a feed of the last stage and w read from stage 0', async () => {
  const x = seededTensor([2, 3], 1);
  const s = seededTensor([2, 3], 2);
  const a = new GraphBuilder('a');
  const ax = a.input('x', [2, 3]);
  a.output('doubled', a.mul(ax, 2), [2, 3]);
  a.output('w', a.add(a.mul(ax, 0), 3), [2, 3]);
  const b = new GraphBuilder('b');
  b.output('shifted', b.add(b.input('doubled', [2, 3]), b.input('s', [2, 3])), [2, 3]);
  const c = new GraphBuilder('c');
  c.output('y', c.mul(c.input('shifted', [2, 3]), c.input('w', [2, 3])), [2, 3]);
  const staged = await createStagedSession([a, b, c], { intraOpThreads: 1 });
  try {
    const { y } = await staged.run({ x, s });
    assert.deepEqual(y!.dims, [2, 3]);
    y!.data.forEach((v, i) => assert.ok(Math.abs(v - (x.data[i]! * 2 + s.data[i]!) * 3) < 1e-6));
    await assert.rejects(staged.run({ x }), /stage 1 of b needs s/);
  } finally {
    await staged.dispose();
  }
});
