// The memory model's view of the one shape inference (graph/shapes.ts): every value's shape for
// concrete input dims, with the memory model's own refusals — an op outside the op table, or a
// graph input without dims, is refused with a reason naming it, so a new op cannot silently
// drop out of a prediction.

import { DistVaeError, reason } from '../errors.js';
import type { ModelProto, NodeProto } from '../graph/onnx-proto.js';
import type { ValueShape } from '../graph/ops.js';
import { inferShapes as inferGraphShapes } from '../graph/shapes.js';

function refuse(node: NodeProto, why: string): never {
  const r = reason(
    'MEMORY_MODEL_UNSUPPORTED',
    'node',
    node.name ?? node.op_type,
    'an op the memory model reads',
    `memory model: node ${node.name} (${node.op_type}): ${why}`,
  );
  throw new DistVaeError('UNSUPPORTED', r.message, { reasons: [r] });
}

/**
 * Shapes of every value for the given graph-input dims (initializers from their TensorProtos);
 * `inputValues` gives the elements of small inputs that later shapes are computed from (a band
 * model's crop bounds). Throws UNSUPPORTED naming the node for an op outside the op table.
 */
export function inferShapes(
  model: ModelProto,
  inputDims: Readonly<Record<string, readonly number[]>>,
  inputValues: Readonly<Record<string, readonly number[]>> = {},
): Map<string, ValueShape> {
  const graphInputs = model.graph?.input ?? [];
  const inputs = new Map<string, ValueShape>();
  for (const input of graphInputs) {
    const dims = inputDims[input.name!];
    if (dims === undefined) {
      const r = reason(
        'MEMORY_MODEL_INPUT',
        'input',
        input.name,
        `dims for every graph input (${graphInputs.map((i) => i.name).join(', ')})`,
      );
      throw new DistVaeError('INVALID_ARGUMENT', r.message, { reasons: [r] });
    }
    const values = inputValues[input.name!];
    inputs.set(input.name!, values ? { dims: [...dims], itemBytes: 4, values: [...values] } : { dims: [...dims], itemBytes: 4 });
  }
  return inferGraphShapes(model, inputs, refuse);
}
