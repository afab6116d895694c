// AttributeProto constructors, one per attribute type a built graph uses, so call sites read
// `attr.ints('pads', [1, 1, 1, 1])` instead of spelling out the proto's type discriminator; and
// the readers the graph analyses use, which take an attribute only when its type is the one asked.

import { AttributeType, type AttributeProto, type NodeProto, type TensorProto } from './onnx-proto.js';

export const attr = {
  int: (name: string, i: number): AttributeProto => ({ name, type: AttributeType.INT, i }),
  ints: (name: string, ints: readonly number[]): AttributeProto => ({ name, type: AttributeType.INTS, ints: [...ints] }),
  float: (name: string, f: number): AttributeProto => ({ name, type: AttributeType.FLOAT, f }),
  string: (name: string, s: string): AttributeProto => ({ name, type: AttributeType.STRING, s: new TextEncoder().encode(s) }),
  tensor: (name: string, t: TensorProto): AttributeProto => ({ name, type: AttributeType.TENSOR, t }),
};

/** A node's attribute of that name, whatever its type. */
export function attributeOf(node: NodeProto, name: string): AttributeProto | undefined {
  return node.attribute?.find((a) => a.name === name);
}

/** An INT attribute, or `fallback` when the node has none. */
export function intAttribute(node: NodeProto, name: string, fallback: number): number {
  const a = attributeOf(node, name);
  return a && a.type === AttributeType.INT ? Number(a.i ?? 0) : fallback;
}

/** An INTS attribute, or undefined when the node has none. */
export function intsAttribute(node: NodeProto, name: string): number[] | undefined {
  const a = attributeOf(node, name);
  return a && a.type === AttributeType.INTS ? (a.ints ?? []).map(Number) : undefined;
}

/** A FLOAT attribute, or `fallback` when the node has none. */
export function floatAttribute(node: NodeProto, name: string, fallback: number): number {
  const a = attributeOf(node, name);
  return a && a.type === AttributeType.FLOAT ? (a.f ?? 0) : fallback;
}

/** A STRING attribute (UTF-8), or `fallback` when the node has none. */
export function stringAttribute(node: NodeProto, name: string, fallback: string): string {
  const a = attributeOf(node, name);
  return a && a.type === AttributeType.STRING ? new TextDecoder().decode(a.s ?? new Uint8Array()) : fallback;
}

/** A TENSOR attribute, or undefined when the node has none. */
export function tensorAttribute(node: NodeProto, name: string): TensorProto | undefined {
  const a = attributeOf(node, name);
  return a && a.type === AttributeType.TENSOR ? a.t : undefined;
}
