// The linear attention core (Scope.linearAttention) against float64 references of both of
// diffusers' forms: the linear one, and the "quadratic" one it switches to when H·W ≤ head dim.
// The two forms agree to rounding — which is why one core serves the whole decode, thin tiles and
// thin shard bands alike — and the graph's float32 core matches them, heads read from channel
// blocks of d, queries given token-major, at a token count on either side of the switch.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GraphBuilder } from '../../graph/builder.js';
import { runGraph } from '../../graph/testing/run-graph.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { linearForm, quadraticForm } from './testing/reference.js';

const EPS = 1e-15;

/** ReLU of a seeded tensor: the core's q and k arrive through ReLU (some entries exactly 0). */
function relu(t: Tensor): Tensor {
  return { dims: t.dims, data: t.data.map((x) => Math.max(0, x)) };
}

for (const n of [6, 40]) {
  test(`linear attention core, 3 heads of 4, ${n} positions: the graph matches diffusers' linear and quadratic forms in float64`, async () => {
    const [b, heads, d] = [2, 3, 4];
    const c = heads * d;
    const q = relu(seededTensor([b, n, c], 1)); // token-major, as the region takes it
    const k = relu(seededTensor([b, c, n], 2));
    const v = seededTensor([b, c, n], 3);
    const g = new GraphBuilder('core');
    const out = g.linearAttention(g.input('q', [b, n, c]), g.input('k', [b, c, n]), g.input('v', [b, c, n]), {
      heads,
      headDim: d,
      epsilon: EPS,
    });
    g.output('out', out);
    const ours = (await runGraph(g, { q, k, v }))['out']!;
    assert.deepEqual(ours.dims, [b, c, n]);
    let worst = 0;
    let worstForms = 0;
    for (let s = 0; s < b; s++)
      for (let h = 0; h < heads; h++) {
        const head = (t: Tensor, tokenMajor: boolean) =>
          Float64Array.from({ length: d * n }, (_, e) => {
            const [i, m] = [Math.floor(e / n), e % n];
            return tokenMajor ? t.data[(s * n + m) * c + h * d + i]! : t.data[(s * c + h * d + i) * n + m]!;
          });
        const operands = { q: head(q, true), k: head(k, false), v: head(v, false), d, n };
        const linear = linearForm(operands, EPS);
        const quadratic = quadraticForm(operands, EPS);
        for (let e = 0; e < d * n; e++) {
          const [i, m] = [Math.floor(e / n), e % n];
          worst = Math.max(worst, Math.abs(ours.data[(s * c + h * d + i) * n + m]! - linear[e]!));
          worstForms = Math.max(worstForms, Math.abs(linear[e]! - quadratic[e]!));
        }
      }
    assert.ok(worstForms <= 1e-12, `the two forms differ by ${worstForms}`);
    assert.ok(worst <= 1e-5, `graph vs float64: ${worst}`);
  });
}
