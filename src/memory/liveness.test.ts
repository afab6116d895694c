// The memory model's graph reading: inferred shapes against what onnxruntime actually returns
// (every op of the builder's subset, and whole decoder graphs), and the liveness peak against
// hand-counted buffers.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { architectureModel } from '../decode/decoder-model.js';
import { TINY_KL } from '../ranks/testing/tiny-vae.js';
import { planningVae, runtimeOf } from '../families/registry.js';
import { GraphBuilder } from '../graph/builder.js';
import { decodeModel } from '../graph/onnx-proto.js';
import { seededTensor } from '../tensor.js';
import { runGraph } from '../graph/testing/run-graph.js';
import { createSession } from '../runtime/session.js';
import { encodeModel } from '../graph/onnx-proto.js';
import { activationPeak, heapServedBytes, MMAP_THRESHOLD_START } from './liveness.js';
import { inferShapes } from './shapes.js';

test('inferred shapes of every op in the subset equal the ones onnxruntime returns', async () => {
  const g = new GraphBuilder('ops');
  const x = g.input('x', [1, 8, 6, 10]);
  const w = g.param('w', seededTensor([4, 8, 3, 3], 1));
  const c = g.conv(x, w, undefined, { pads: [1, 0, 2, 1], strides: [2, 1] });
  const t = g.transpose(g.reshape(c, [0, 4, -1]), [0, 2, 1]);
  const m = g.matMul(t, g.transpose(t, [0, 2, 1]));
  const up = g.resizeNearest(x, [1, 1, 2, 2]);
  const d = g.depthToSpace(x, 2, 'DCR');
  const cat = g.concat([d, d], 1);
  const sl = g.slice(cat, { starts: [1, 2], ends: [3, -1], axes: [2, 3] });
  const p = g.pad(sl, [0, 0, 1, 2, 0, 0, 3, 4]);
  const [s0, s1] = g.split(x, [3, 5], 1);
  const r = g.reduceMean(x, [2, 3], true);
  const sh = g.reshape(x, g.concat([g.shape(x), g.int64Constant([1])], 0));
  const outputs = { c, t, m, up, d, cat, sl, p, s0: s0!, s1: s1!, r, sh, soft: g.softmax(m), un: g.unsqueeze(r, [0]) };
  for (const [name, v] of Object.entries(outputs)) g.output(name, v);
  const model = g.toModel();
  const shapes = inferShapes(model, { x: [1, 8, 6, 10] });
  const actual = await runGraph(g, { x: seededTensor([1, 8, 6, 10], 2) });
  for (const name of Object.keys(outputs)) assert.deepEqual(shapes.get(name)?.dims, actual[name]!.dims, name);
});

for (const [family, config] of [
  ['autoencoder-kl', TINY_KL],
  ['tae', undefined],
] as const) {
  test(`the ${family} decoder's inferred output shape is onnxruntime's for a rectangular latent`, async () => {
    const vae = planningVae(family, config);
    const model = architectureModel(vae.family, runtimeOf(vae.family), vae.config);
    const input = model.graph!.input![0]!.name!;
    const output = model.graph!.output![0]!.name!;
    const dims = [1, vae.geometry.latentChannels, 5, 7];
    const shapes = inferShapes(model, { [input]: dims });
    const session = await createSession(encodeModel(model), { intraOpThreads: 1 });
    try {
      const out = await session.run({ [input]: seededTensor(dims, 3) });
      assert.deepEqual(shapes.get(output)!.dims, out[output]!.dims);
    } finally {
      await session.dispose();
    }
  });
}

test('the liveness peak counts the buffers live together; views share their input; graph inputs are not counted', () => {
  const g = new GraphBuilder('chain');
  const x = g.input('x', [1, 1, 4, 4]);
  const a = g.relu(x); // 64 B, live until the Add
  const b = g.sigmoid(a); // 64 B
  const v = g.reshape(b, [0, -1]); // a view of b
  const sum = g.add(g.reshape(a, [0, -1]), v); // 64 B: a, b and sum live together
  const big = g.tanh(g.concat([sum, sum], 1)); // concat 128 B, then tanh 128 B with concat still live
  g.output('y', big);
  const model = decodeModel(g.toModelBytes());
  const peak = activationPeak(model, { x: [1, 1, 4, 4] });
  assert.equal(peak.peakBytes, 256);
  assert.equal(peak.maxTensorBytes, 128);
  assert.equal(peak.outputBytes, 128);
  assert.equal(peak.inputBytes, 64);
  // The peak scales with the input: twice the rows, twice every buffer.
  assert.equal(activationPeak(model, { x: [1, 1, 8, 4] }).peakBytes, 512);
});

test('an op outside the subset is refused by name, not guessed', () => {
  const g = new GraphBuilder('odd');
  const x = g.input('x', [1, 2]);
  g.output('y', x);
  const m = g.toModel();
  m.graph!.node!.push({ name: 'mystery', op_type: 'Mystery', input: ['x'], output: ['z'], attribute: [] });
  assert.throws(
    () => inferShapes(m, { x: [1, 2] }),
    (e: Error & { code?: string }) => e.code === 'UNSUPPORTED' && /mystery \(Mystery\)/.test(e.message),
  );
  assert.throws(
    () => inferShapes(m, {}),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && /x/.test(e.message),
  );
});

test("glibc's heap serves the tensors under its dynamic mmap threshold: after the first free of a size under 32 MiB, that size comes from the heap", () => {
  // A chain of four tensors of one size, then the output (the caller's buffer, not counted).
  const chain = (rows: number) => {
    const g = new GraphBuilder('chain');
    const x = g.input('x', [1, 1, rows, 1024]);
    g.output('y', g.tanh(g.relu(g.sigmoid(g.relu(g.sigmoid(x))))));
    return { model: decodeModel(g.toModelBytes()), dims: [1, 1, rows, 1024] };
  };
  // 27.5 MiB tensors (TAEF2's half resolution on an edge rank at 1024² on 3 ranks): the first two
  // are mapped, the first's free raises the threshold to its size, the next two come from the heap.
  const under = chain(7040);
  const threshold = { bytes: MMAP_THRESHOLD_START };
  assert.equal(heapServedBytes(under.model, inferShapes(under.model, { x: under.dims }), threshold), 2 * 7040 * 4096);
  assert.ok(threshold.bytes > 7040 * 4096 && threshold.bytes <= 32 * 2 ** 20);
  // The raised threshold carries over to the next run: every tensor of the size from the heap.
  assert.equal(heapServedBytes(under.model, inferShapes(under.model, { x: under.dims }), threshold), 4 * 7040 * 4096);
  // 33.5 MiB tensors (the middle rank's): over the 32 MiB cap, always mapped, nothing left on the heap.
  const over = chain(8576);
  assert.equal(heapServedBytes(over.model, inferShapes(over.model, { x: over.dims }), { bytes: MMAP_THRESHOLD_START }), 0);
});
