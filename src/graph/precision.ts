// Half precision: a built float32 graph rewritten to compute in float16, for GPU providers whose
// adapter runs float16 shaders. The rewrite is generic — it reads what the op table (ops.ts)
// declares per op and the sync regions the builder recorded, never a family — and keeps in
// float32 exactly what overflows or loses its sums in float16:
// - every node of a sync region (GroupNorm: its statistics, normalisation and affine;
//   attention: q·k, softmax and the weighted sum), so a GroupNorm's mean and variance and an
//   attention's scores are float32 sums of float32 squares whatever the activations' magnitude;
// - ops the table marks `precision: 'float32'` (the normalisations, softmax, reductions, Range);
// - cheap position-wise ops all of whose float consumers run in float32 (the x·x of an RMS norm
//   spelt as Mul → ReduceMean): their float16 result would overflow (|x| > 256) before the
//   float32 op sees it. Convolutions and matrix products are never pulled in: they are the cost;
// - cheap ops of statistics alone (a reduction's output with constants: the + ε and √ after a
//   mean of squares), whose values are squares of activations.
// Everything else (convolutions, resamples, activations, residual adds) runs in float16.
//
// Casts are inserted where a value's type differs from what its consumer computes in, once per
// value and type. Graph inputs and outputs stay float32 (feeds and the writers are float32), so
// a converted graph is a drop-in replacement for the original. Weights stay float32 initializers
// (external data in the checkpoint as before) behind a Cast node: onnxruntime's constant folding
// (graph optimisation level basic and up) turns each into a float16 initializer while the session
// is created, so weights are converted at load, one tensor at a time, and the float32 originals
// are released once folded.

import { attr, intAttribute, tensorAttribute } from './attributes.js';
import { DataType, type ModelProto, type NodeProto } from './onnx-proto.js';
import { opRule, type LocalityRule } from './ops.js';
import { syncRegionsOf } from './sync.js';

/** The precision a graph computes in: float32 (the default, everywhere) or float16 (GPU providers with shader-f16). */
export type Precision = 'fp32' | 'fp16';

/** Every precision, in the order they are listed to users. */
export const PRECISIONS: readonly Precision[] = ['fp32', 'fp16'];

/** Ops cheap enough to compute in float32 when every float consumer wants float32 (no weights, one pass). */
const CHEAP: ReadonlySet<LocalityRule> = new Set<LocalityRule>([
  'pointwise',
  'elementwise',
  'reshape',
  'transpose',
  'unsqueeze',
  'slice',
  'split',
  'concat',
  'pad',
]);

const isFloat = (t: number | undefined): boolean => t === DataType.FLOAT || t === DataType.FLOAT16;

/** The nodes (by index) that compute in float32 in a float16 graph. */
function float32Nodes(model: ModelProto, nodes: readonly NodeProto[]): Set<number> {
  const index = new Map(nodes.map((n, i) => [n.name ?? '', i]));
  const fp32 = new Set<number>();
  for (const region of syncRegionsOf(model)) for (const name of region.nodes) if (index.has(name)) fp32.add(index.get(name)!);
  nodes.forEach((n, i) => {
    if (opRule(n.op_type)?.precision === 'float32') fp32.add(i);
  });
  // Forwards: cheap ops of statistics alone (a reduction's output, constants, weights) stay
  // float32 — the ε-add and square root after a mean of squares, which float16 would overflow.
  const statistics = new Set<string>();
  const constant = new Set<string>([
    ...(model.graph?.initializer ?? []).map((t) => t.name ?? ''),
    ...nodes.filter((n) => n.op_type === 'Constant').map((n) => n.output?.[0] ?? ''),
  ]);
  nodes.forEach((n, i) => {
    const rule = opRule(n.op_type);
    const inputs = (n.input ?? []).filter((name) => name !== '');
    const ofStatistics =
      CHEAP.has(rule?.locality ?? 'unmodelled') &&
      inputs.some((name) => statistics.has(name)) &&
      inputs.every((name) => statistics.has(name) || constant.has(name));
    if (rule?.locality === 'reduction' || ofStatistics) {
      fp32.add(i);
      for (const o of n.output ?? []) statistics.add(o);
    }
  });
  // Consumers of each value. Graph outputs are not float32 consumers: pulling a decoder's last
  // ops into float32 would hold a float32 copy of a full-resolution tensor for one Cast saved.
  const consumers = new Map<string, number[]>();
  nodes.forEach((n, i) => {
    for (const input of n.input ?? []) if (input !== '') consumers.set(input, [...(consumers.get(input) ?? []), i]);
  });
  // Backwards, so a chain of cheap ops feeding a float32 op is pulled in whole.
  for (let i = nodes.length - 1; i >= 0; i--) {
    const n = nodes[i]!;
    if (fp32.has(i) || n.op_type === 'Constant' || !CHEAP.has(opRule(n.op_type)?.locality ?? 'unmodelled')) continue;
    const uses = (n.output ?? []).flatMap((o) => consumers.get(o) ?? []);
    if (uses.length > 0 && uses.every((u) => fp32.has(u))) fp32.add(i);
  }
  return fp32;
}

/** The element type of a node's outputs, given its (already cast) input types and the type it computes in. */
function outputType(node: NodeProto, inputTypes: readonly (number | undefined)[], computeIn: number): number | undefined {
  switch (node.op_type) {
    case 'Cast': {
      const to = intAttribute(node, 'to', DataType.FLOAT);
      return to === DataType.FLOAT ? computeIn : to;
    }
    case 'Shape':
      return DataType.INT64;
    case 'Greater':
      return DataType.BOOL;
    case 'Constant':
    case 'ConstantOfShape':
      return tensorAttribute(node, 'value')?.data_type ?? DataType.FLOAT;
    case 'Where':
      return inputTypes[1];
    default:
      return inputTypes.find(isFloat) ?? inputTypes[0];
  }
}

/**
 * `model` (a built float32 graph) rewritten to compute in float16, keeping GroupNorm statistics,
 * attention, softmax, normalisations and reductions in float32 (see the header); inputs and
 * outputs stay float32. `fp32` returns the model as it is. `keepFloat32: false` drops the float32
 * islands (every float op in float16): for measuring what they prevent, never for decoding.
 */
export function modelInPrecision(model: ModelProto, precision: Precision, options: { keepFloat32?: boolean } = {}): ModelProto {
  if (precision === 'fp32') return model;
  const graph = model.graph ?? {};
  const original = graph.node ?? [];
  // keepFloat32 false (measurements only: bench/fp16.ts) computes everything in float16, to show what the float32 islands prevent.
  const fp32 = options.keepFloat32 === false ? new Set<number>() : float32Nodes(model, original);
  const types = new Map<string, number | undefined>();
  for (const t of graph.initializer ?? []) types.set(t.name ?? '', t.data_type ?? DataType.FLOAT);
  for (const v of graph.input ?? []) types.set(v.name ?? '', v.type?.tensor_type?.elem_type ?? DataType.FLOAT);
  const used = new Set<string>([...types.keys(), ...original.flatMap((n) => [n.name ?? '', ...(n.output ?? [])])]);
  const fresh = (base: string): string => {
    let name = base;
    for (let k = 1; used.has(name); k++) name = `${base}_${k}`;
    used.add(name);
    return name;
  };
  const casts = new Map<string, string>();
  const nodes: NodeProto[] = [];
  const castTo = (value: string, to: number): string => {
    const key = `${value}\u0000${to}`;
    let name = casts.get(key);
    if (name === undefined) {
      name = fresh(`${value}:${to === DataType.FLOAT16 ? 'fp16' : 'fp32'}`);
      nodes.push({ name, op_type: 'Cast', input: [value], output: [name], attribute: [attr.int('to', to)] });
      types.set(name, to);
      casts.set(key, name);
    }
    return name;
  };
  original.forEach((node, i) => {
    const computeIn = fp32.has(i) ? DataType.FLOAT : DataType.FLOAT16;
    const fixed = opRule(node.op_type)?.fixedInputs ?? [];
    const input = (node.input ?? []).map((name, k) => {
      const type = types.get(name);
      return name !== '' && isFloat(type) && type !== computeIn && !fixed.includes(k) ? castTo(name, computeIn) : name;
    });
    let rewritten: NodeProto = { ...node, input };
    if (node.op_type === 'Cast' && intAttribute(node, 'to', DataType.FLOAT) === DataType.FLOAT && computeIn !== DataType.FLOAT)
      rewritten = { ...rewritten, attribute: (node.attribute ?? []).map((a) => (a.name === 'to' ? attr.int('to', computeIn) : a)) };
    nodes.push(rewritten);
    const out = outputType(
      node,
      input.map((name, k) => (fixed.includes(k) ? undefined : types.get(name))),
      computeIn,
    );
    for (const name of node.output ?? []) types.set(name, out);
  });
  // Outputs stay float32: a float16 output is renamed and cast back under its own name.
  for (const output of graph.output ?? []) {
    const name = output.name ?? '';
    if (types.get(name) !== DataType.FLOAT16) continue;
    const inner = fresh(`${name}:fp16`);
    for (const n of nodes) {
      n.output = (n.output ?? []).map((o) => (o === name ? inner : o));
      n.input = (n.input ?? []).map((o) => (o === name ? inner : o));
    }
    nodes.push({
      name: fresh(`${name}/Cast`),
      op_type: 'Cast',
      input: [inner],
      output: [name],
      attribute: [attr.int('to', DataType.FLOAT)],
    });
  }
  return { ...model, graph: { ...graph, node: nodes } };
}
