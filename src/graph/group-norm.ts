// GroupNorm expressed in ONNX. PyTorch's GroupNorm normalises each (sample, group) over its
// channels and spatial positions, then applies a per-channel affine. ONNX offers several
// equivalent spellings that onnxruntime runs at very different speeds on CPU, so the form is a
// choice (bench/conv-throughput.ts measures them):
// - 'native':        GroupNormalization-21 (per-channel scale and bias, as in PyTorch).
// - 'instance-norm': Reshape to [N, G, -1], InstanceNormalization with unit affine, then the
//                    per-channel affine on [N, C, -1] and a Reshape back to x's shape.
// - 'reduce-mean':   the same reshapes with explicit ReduceMean/Sub/Mul/Sqrt/Div statistics
//                    (two-pass: mean first, then the mean of squared deviations).
// Every form takes the rank from x at run time, so it serves 4-D images and 5-D video alike.

import { attr } from './attributes.js';
import type { Scope, Value } from './builder.js';

export type GroupNormForm = 'native' | 'instance-norm' | 'reduce-mean';

export const GROUP_NORM_FORMS: readonly GroupNormForm[] = ['native', 'instance-norm', 'reduce-mean'];

export interface GroupNormSpec {
  channels: number;
  groups: number;
  epsilon: number;
  form: GroupNormForm;
}

/** Appends the nodes of one GroupNorm to `scope`; scale and bias are the [C] checkpoint weights. */
export function groupNormNodes(scope: Scope, x: Value, scale: Value, bias: Value, spec: GroupNormSpec): Value {
  if (spec.form === 'native') {
    return scope.op('GroupNormalization', [x, scale, bias], [attr.float('epsilon', spec.epsilon), attr.int('num_groups', spec.groups)]);
  }
  const grouped = scope.reshape(x, [0, spec.groups, -1]);
  const normalised = spec.form === 'instance-norm' ? instanceNormalise(scope, grouped, spec) : reduceMeanNormalise(scope, grouped, spec.epsilon);
  const perChannel = scope.reshape(normalised, [0, spec.channels, -1]);
  const affine = scope.add(scope.mul(perChannel, scope.unsqueeze(scale, [1])), scope.unsqueeze(bias, [1]));
  return scope.reshape(affine, scope.shape(x));
}

function instanceNormalise(scope: Scope, grouped: Value, spec: GroupNormSpec): Value {
  const ones = scope.constant({ dims: [spec.groups], data: new Float32Array(spec.groups).fill(1) });
  const zeros = scope.constant({ dims: [spec.groups], data: new Float32Array(spec.groups) });
  return scope.instanceNorm(grouped, ones, zeros, { epsilon: spec.epsilon });
}

function reduceMeanNormalise(scope: Scope, grouped: Value, epsilon: number): Value {
  const centred = scope.sub(grouped, scope.reduceMean(grouped, [2]));
  const variance = scope.reduceMean(scope.mul(centred, centred), [2]);
  return scope.div(centred, scope.sqrt(scope.add(variance, epsilon)));
}
