// The op table holds every op the code can emit, each op has a float64 reference, and the three
// agree: for a small graph around every op, the shape inference gives the dims the references
// compute for every value, and the references give what onnxruntime returns.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { seededTensor, type Tensor } from '../tensor.js';
import { attr } from './attributes.js';
import { GraphBuilder, type Scope, type Value } from './builder.js';
import { DataType } from './onnx-proto.js';
import { OPS, type ValueShape } from './ops.js';
import { inferShapes } from './shapes.js';
import { OP_REFERENCES, runReferenceModel } from './testing/op-references.js';
import { toRef } from './testing/reference-ops.js';
import { runGraph } from './testing/run-graph.js';

test('every op in the table has a float64 reference, and every reference an op in the table', () => {
  assert.deepEqual(Object.keys(OP_REFERENCES).sort(), Object.keys(OPS).sort());
});

/** The op names the shipped sources emit: builder calls `op('X'` / `node('X'` and literal `op_type: 'X'`. */
function emittedOps(dir: string, found = new Set<string>()): Set<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'testing') emittedOps(path, found);
    } else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) {
      const text = readFileSync(path, 'utf8');
      for (const m of text.matchAll(/\b(?:op|node)\(\s*'([A-Z][A-Za-z]*)'|op_type: '([A-Z][A-Za-z]*)'/g)) found.add(m[1] ?? m[2]!);
    }
  }
  return found;
}

test('every op the sources can emit is in the op table', () => {
  const emitted = emittedOps(join(import.meta.dirname, '..'));
  assert.ok(
    emitted.has('Conv') && emitted.has('ReduceProd') && emitted.has('Constant'),
    'the scan finds builder, band-model and constant nodes',
  );
  assert.deepEqual(
    [...emitted].filter((op) => !Object.hasOwn(OPS, op)),
    [],
  );
});

interface Case {
  name: string;
  inputs: Record<string, number[]>;
  build: (g: GraphBuilder, x: Record<string, Value>) => Value[];
}

const int64 = (g: Scope, v: number) => g.reshape(g.int64Constant([v]), []);
const param = (g: Scope, name: string, dims: number[], seed: number) => g.param(name, seededTensor(dims, seed, 0.5));
const toFloat = (g: Scope, v: Value) => g.cast(v, DataType.FLOAT);

const CASES: Case[] = [
  {
    name: 'unary ops, Clip, Identity and Cast',
    inputs: { x: [1, 4, 3, 5] },
    build: (g, { x }) => [
      g.identity(g.relu(x!)),
      g.sigmoid(x!),
      g.tanh(x!),
      g.sqrt(g.mul(x!, x!)),
      g.op('Sin', [x!]),
      g.op('Cos', [x!]),
      g.clip(x!, -0.3, 0.4),
      toFloat(g, g.cast(g.mul(x!, 10), DataType.INT64)),
    ],
  },
  {
    name: 'broadcasting arithmetic, Max, Greater and Where',
    inputs: { x: [1, 4, 3, 5], b: [4, 1, 1] },
    build: (g, { x, b }) => [
      g.add(x!, b!),
      g.sub(b!, x!),
      g.mul(x!, b!),
      g.div(x!, g.add(g.mul(b!, b!), 1)),
      g.pow(g.sigmoid(x!), 1.5),
      g.op('Max', [x!, g.scalar(0.1)]),
      g.op('Where', [g.op('Greater', [x!, b!]), x!, g.scalar(-2)]),
      g.add(x!, g.constant(seededTensor([5], 7))),
    ],
  },
  {
    name: 'normalisations and Softmax',
    inputs: { x: [2, 4, 3, 5] },
    build: (g, { x }) => [
      g.softmax(x!, 1),
      g.layerNorm(x!, param(g, 'ln.weight', [3, 5], 1), param(g, 'ln.bias', [3, 5], 2), { epsilon: 1e-5, axis: 2 }),
      g.groupNorm(x!, param(g, 'gn.weight', [4], 3), param(g, 'gn.bias', [4], 4), { groups: 2, epsilon: 1e-5, form: 'native' }),
      g.groupNorm(x!, param(g, 'gn2.weight', [4], 5), param(g, 'gn2.bias', [4], 6), { groups: 2, epsilon: 1e-6, form: 'instance-norm' }),
    ],
  },
  {
    name: 'reductions, and a reshape target computed from Shape, Slice, ReduceProd and Concat',
    inputs: { x: [2, 4, 3, 5] },
    build: (g, { x }) => {
      const lead = g.slice(g.shape(x!), { starts: [0], ends: [2] });
      const target = g.concat([g.int64Constant([1]), g.op('ReduceProd', [lead], [attr.int('keepdims', 1)]), g.int64Constant([-1])], 0);
      return [
        g.reduceMean(x!, [2, 3]),
        g.op('ReduceL2', [x!, g.int64Constant([1])], [attr.int('keepdims', 1)]),
        g.op('ReduceSumSquare', [x!, g.int64Constant([-1])], [attr.int('keepdims', 0)]),
        g.reshape(x!, target),
      ];
    },
  },
  {
    name: 'layout ops',
    inputs: { x: [1, 4, 3, 5] },
    build: (g, { x }) => [
      g.flatten(x!, 2),
      g.transpose(x!, [0, 2, 3, 1]),
      g.unsqueeze(x!, [0, -1]),
      g.reshape(x!, [0, 2, -1]),
      g.concat([x!, g.relu(x!)], 1),
      g.op('Gather', [x!, g.int64Constant([2, 0, -1])], [attr.int('axis', 1)]),
      g.slice(x!, { starts: [1, 4], ends: [-1, 0], axes: [3, 2], steps: [2, -1] }),
      ...g.split(x!, [1, 3], 1),
      ...g.node('Split', [x!], [attr.int('axis', 1), attr.int('num_outputs', 2)], 2),
      g.pad(x!, [0, 0, 1, 2, 0, 0, 2, 1]),
      g.pad(x!, [0, 0, 1, 1, 0, 0, 1, 1], { mode: 'reflect' }),
      g.pad(x!, [0, 0, 1, 0, 0, 0, 0, 1], { mode: 'edge' }),
      g.op('Tile', [x!, g.int64Constant([1, 2, 1, 2])]),
    ],
  },
  {
    name: 'generated values: ConstantOfShape and Range',
    inputs: { x: [1, 4, 3, 5] },
    build: (g, { x }) => [
      g.add(x!, g.op('ConstantOfShape', [g.shape(x!)])),
      toFloat(g, g.op('Range', [int64(g, 1), int64(g, 11), int64(g, 3)])),
    ],
  },
  {
    name: 'matrix products',
    inputs: { a: [2, 3, 4], m: [3, 4] },
    build: (g, { a, m }) => [
      g.matMul(a!, param(g, 'mm.weight', [4, 5], 1)),
      g.gemm(m!, param(g, 'gemm.weight', [6, 4], 2), param(g, 'gemm.bias', [6], 3), { transB: true, alpha: 0.5, beta: 2 }),
    ],
  },
  {
    name: 'convolutions and resampling',
    inputs: { x: [1, 4, 5, 6] },
    build: (g, { x }) => [
      g.conv(x!, param(g, 'conv.weight', [6, 2, 3, 3], 1), param(g, 'conv.bias', [6], 2), { pads: 1, strides: 2, group: 2 }),
      g.convTranspose(x!, param(g, 'up.weight', [4, 3, 3, 3], 3), param(g, 'up.bias', [3], 4), { pads: 1, strides: 2, outputPadding: 1 }),
      g.depthToSpace(x!, 2, 'DCR'),
      g.depthToSpace(x!, 2, 'CRD'),
      g.resizeNearest(x!, [1, 1, 2, 3]),
    ],
  },
];

function refuse(node: { name?: string; op_type?: string }, why: string): never {
  throw new Error(`${node.name} (${node.op_type}): ${why}`);
}

test('the cases below hold every op of the table', () => {
  const held = new Set(
    CASES.flatMap((c) => {
      const g = new GraphBuilder('case');
      const x = Object.fromEntries(Object.entries(c.inputs).map(([name, dims]) => [name, g.input(name, dims)]));
      c.build(g, x).forEach((v, i) => g.output(`y${i}`, v));
      return g.toModel().graph!.node!.map((n) => n.op_type!);
    }),
  );
  assert.deepEqual(
    Object.keys(OPS).filter((op) => !held.has(op)),
    [],
  );
});

for (const c of CASES) {
  test(`${c.name}: shape inference, the references and onnxruntime agree`, async () => {
    const g = new GraphBuilder('case');
    const x = Object.fromEntries(Object.entries(c.inputs).map(([name, dims]) => [name, g.input(name, dims)]));
    const outputs = c.build(g, x);
    outputs.forEach((v, i) => g.output(`y${i}`, v));
    const feeds: Record<string, Tensor> = Object.fromEntries(
      Object.entries(c.inputs).map(([name, dims], i) => [name, seededTensor(dims, 11 + i, 1)]),
    );
    const model = g.toModel();
    const reference = runReferenceModel(model, Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, toRef(t)])));
    const shapes = inferShapes(
      model,
      new Map(Object.entries(c.inputs).map(([name, dims]): [string, ValueShape] => [name, { dims, itemBytes: 4 }])),
      refuse,
    );
    for (const node of model.graph!.node!)
      for (const name of node.output!) assert.deepEqual(shapes.get(name)?.dims, [...reference.get(name)!.dims], `${node.op_type} ${name}`);
    const run = await runGraph(g, feeds);
    outputs.forEach((_, i) => {
      const name = `y${i}`;
      const [want, got] = [reference.get(name)!, run[name]!];
      assert.deepEqual(got.dims, [...want.dims], name);
      const worst = Math.max(0, ...Array.from(got.data, (v, k) => Math.abs(v - want.data[k]!) / (1 + Math.abs(want.data[k]!))));
      assert.ok(worst < 1e-4, `${name} (${model.graph!.node!.find((n) => n.output!.includes(name))?.op_type}): off by ${worst}`);
    });
  });
}
