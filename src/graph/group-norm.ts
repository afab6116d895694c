// GroupNorm expressed in ONNX. PyTorch's GroupNorm normalises each (sample, group) over its
// channels and spatial positions, then applies a per-channel affine. ONNX offers several
// equivalent spellings that onnxruntime runs at very different speeds on CPU, so the form is a
// choice (bench/conv-throughput.ts measures them):
// - 'native':        GroupNormalization-21 (per-channel scale and bias, as in PyTorch); ORT
//                    1.30 has no CPU kernel for it and inlines its function body (Casts,
//                    ReduceMean, Sub, Mul, Div…), the slowest form on CPU.
// - 'instance-norm': Reshape to [N, G, -1] and InstanceNormalization with unit affine (one
//                    kernel for the statistics and the normalisation). The fastest on CPU.
// - 'reduce-mean':   the same reshape with explicit ReduceMean/Sub/Mul/Sqrt/Div statistics
//                    (two-pass: mean first, then the mean of squared deviations); basic ops only.
// Both decomposed forms then apply the per-channel affine on [N, C, -1] as one
// BatchNormalization pass (measured faster than Mul then Add) whose statistics are the identity:
// mean 0 and variance 1 − ε with ε = 1e-5, so var + ε rounds to 1 in float32 (within one ulp)
// and the result is x·gamma + beta. ε is not 0 because cuDNN-backed providers clamp smaller
// epsilons up to 1e-5. Then a Reshape back to x's shape. Every form reads the rank
// from x at run time, so it serves 4-D images and 5-D video alike.

import { attr } from './attributes.js';
import type { Scope, Value } from './builder.js';

export type GroupNormForm = 'native' | 'instance-norm' | 'reduce-mean';

export const GROUP_NORM_FORMS: readonly GroupNormForm[] = ['native', 'instance-norm', 'reduce-mean'];

/** The form built when none is asked for: the fastest on ORT's CPU provider (bench/conv-throughput.ts). */
export const DEFAULT_GROUP_NORM_FORM: GroupNormForm = 'instance-norm';

const AFFINE_EPSILON = 1e-5;

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
  const normalised =
    spec.form === 'instance-norm' ? instanceNormalise(scope, grouped, spec) : reduceMeanNormalise(scope, grouped, spec.epsilon);
  const perChannel = scope.reshape(normalised, [0, spec.channels, -1]);
  const mean = scope.constant({ dims: [spec.channels], data: new Float32Array(spec.channels) });
  const variance = scope.constant({ dims: [spec.channels], data: new Float32Array(spec.channels).fill(1 - AFFINE_EPSILON) });
  const affine = scope.op('BatchNormalization', [perChannel, scale, bias, mean, variance], [attr.float('epsilon', AFFINE_EPSILON)]);
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
