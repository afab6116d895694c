// AttributeProto constructors, one per attribute type a built graph uses, so call sites read
// `attr.ints('pads', [1, 1, 1, 1])` instead of spelling out the proto's type discriminator.

import { AttributeType, type AttributeProto, type TensorProto } from './onnx-proto.js';

export const attr = {
  int: (name: string, i: number): AttributeProto => ({ name, type: AttributeType.INT, i }),
  ints: (name: string, ints: readonly number[]): AttributeProto => ({ name, type: AttributeType.INTS, ints: [...ints] }),
  float: (name: string, f: number): AttributeProto => ({ name, type: AttributeType.FLOAT, f }),
  string: (name: string, s: string): AttributeProto => ({ name, type: AttributeType.STRING, s: new TextEncoder().encode(s) }),
  tensor: (name: string, t: TensorProto): AttributeProto => ({ name, type: AttributeType.TENSOR, t }),
};
