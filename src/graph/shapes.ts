// Shape inference of a built graph for concrete input dims: the op table's shape rules (ops.ts)
// run node by node in graph order (a built graph is topologically sorted). It is the one shape
// engine: the device-limit tensor sizes (tensor-sizes.ts) and the memory model (memory/) both
// read it, each refusing an op outside the table in its own words.

import type { ModelProto, NodeProto } from './onnx-proto.js';
import { opRule, tensorShape, type ShapeContext, type ValueShape } from './ops.js';

/** Throws for a node whose shapes cannot be inferred, in the caller's words; `why` says what is missing. */
export type RefuseNode = (node: NodeProto, why: string) => never;

/** One node's output shapes from its inputs' (null: an optional input left out, or unknown). */
export function nodeOutputShapes(node: NodeProto, inputs: readonly (ValueShape | null)[], refuse: RefuseNode): ValueShape[] {
  const rule = opRule(node.op_type) ?? refuse(node, 'this op is not modelled');
  const context: ShapeContext = {
    node,
    inputs,
    need: (i) => inputs[i] ?? refuse(node, `input ${i} has no known shape`),
    values: (i, what) => context.need(i).values ?? refuse(node, `its ${what} is not a known constant`),
    refuse: (why) => refuse(node, why),
  };
  return rule.shape(context);
}

const fixed = new WeakMap<ModelProto, ReadonlyMap<string, ValueShape>>();

/** Shapes that do not depend on the inputs (initializers, Constant nodes), read once per model. */
function fixedShapes(model: ModelProto, refuse: RefuseNode): ReadonlyMap<string, ValueShape> {
  let shapes = fixed.get(model);
  if (!shapes) {
    const found = new Map<string, ValueShape>();
    // Small initializers keep their elements (shape literals); weights are never read.
    for (const t of model.graph?.initializer ?? []) found.set(t.name ?? '', tensorShape(t, false));
    for (const node of model.graph?.node ?? [])
      if (node.op_type === 'Constant') found.set(node.output?.[0] ?? '', nodeOutputShapes(node, [], refuse)[0]!);
    fixed.set(model, found);
    shapes = found;
  }
  return shapes;
}

/**
 * Shapes of every value of `model` (initializers, Constant outputs, graph inputs, node outputs)
 * given the graph inputs' shapes; `refuse` throws for a node outside the op table or one whose
 * shape needs what is not known.
 */
export function inferShapes(model: ModelProto, inputs: ReadonlyMap<string, ValueShape>, refuse: RefuseNode): Map<string, ValueShape> {
  const shapes = new Map(fixedShapes(model, refuse));
  for (const [name, shape] of inputs) shapes.set(name, shape);
  for (const node of model.graph?.node ?? []) {
    if (node.op_type === 'Constant') continue;
    const outputs = nodeOutputShapes(
      node,
      (node.input ?? []).map((name) => (name === '' ? null : (shapes.get(name) ?? null))),
      refuse,
    );
    (node.output ?? []).forEach((name, i) => {
      if (outputs[i]) shapes.set(name, outputs[i]!);
    });
  }
  return shapes;
}
