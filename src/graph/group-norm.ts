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
// - 'row-moments':   statistics in two levels, as row sharding takes them (strategies/shard/
//                    group-norm.ts) and as PyTorch's cascaded sums keep them: the mean and M2
//                    (squared deviations about that mean) of every row (the last axis: W px),
//                    then per group the mean of the row means and M2 = Σ row M2 + W·Σ (row
//                    mean − group mean)², all on [N, C, …, 1] tensors; then x·a + b per (sample,
//                    channel) with a = γ/√(var + ε), b = β − mean·a (PyTorch's CPU kernel's
//                    form). The default. The one-level forms sum a whole group (4 channels of
//                    a 1024² image: 4 M values) into one float32 accumulator, and onnxruntime's
//                    CPU kernels (InstanceNormalization's Eigen mean and squared norm, ReduceMean)
//                    accumulate linearly: on values of mean 3 and spread 0.6, a GroupNorm of
//                    [1, 128, 1024, 1024] is off by 5.4e-4 of its largest output (1.7e-5 at
//                    128²), and an SD encoder's whole encode at 1024² drifted 1.7e-4 from
//                    diffusers' (row sharding, two-level in float64: 1.8e-6). Rows of ≤ a few
//                    thousand values and groups of a few thousand rows keep each sum short.
// 'instance-norm' and 'reduce-mean' apply the per-channel affine on [N, C, -1] as one
// BatchNormalization pass (measured faster than Mul then Add) whose statistics are the identity:
// mean 0 and variance 1 − ε with ε = 1e-5, so var + ε rounds to 1 in float32 (within one ulp)
// and the result is x·gamma + beta. ε is not 0 because cuDNN-backed providers clamp smaller
// epsilons up to 1e-5. Then a Reshape back to x's shape. Every form reads the rank
// from x at run time, so it serves 4-D images and 5-D video alike.

import { attr } from './attributes.js';
import { DataType } from './onnx-proto.js';
import type { Scope, Value } from './builder.js';

export type GroupNormForm = 'native' | 'instance-norm' | 'reduce-mean' | 'row-moments';

export const GROUP_NORM_FORMS: readonly GroupNormForm[] = ['native', 'instance-norm', 'reduce-mean', 'row-moments'];

/**
 * The form built when none is asked for: the one whose statistics stay exact at large images
 * (the one-level forms drift with the group's size; see the header).
 */
export const DEFAULT_GROUP_NORM_FORM: GroupNormForm = 'row-moments';

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
  if (spec.form === 'row-moments') return rowMomentsNormalise(scope, x, scale, bias, spec);
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

/** The 'row-moments' form (header): two-level statistics, then x·a + b per (sample, channel). */
function rowMomentsNormalise(scope: Scope, x: Value, scale: Value, bias: Value, spec: GroupNormSpec): Value {
  const { channels, groups } = spec;
  // Per row (every index but the last): its mean and M2 about that mean, [N, C, …, 1].
  const rowMean = scope.reduceMean(x, [-1]);
  const rowM2 = scope.op('ReduceSumSquare', [scope.sub(x, rowMean), scope.int64Constant([-1])], [attr.int('keepdims', 1)]);
  const width = scope.cast(scope.op('Shape', [x], [attr.int('start', -1)]), DataType.FLOAT);
  // Per group, [N, G, 1]: mean of the row means (rows are equally long), and the variance as
  // the rows' mean M2 / W plus the spread of the row means about the group mean (Chan's merge).
  const means = scope.reshape(rowMean, [0, groups, -1]);
  const mean = scope.reduceMean(means, [2]);
  const spread = scope.sub(means, mean);
  const variance = scope.add(
    scope.div(scope.reduceMean(scope.reshape(rowM2, [0, groups, -1]), [2]), width),
    scope.reduceMean(scope.mul(spread, spread), [2]),
  );
  const inverse = scope.div(scope.scalar(1), scope.sqrt(scope.add(variance, spec.epsilon)));
  // Group → channel ([N, G, 1] · ones [G, C/G] → [N, C, 1]), then the affine folded in.
  const ones = scope.constant({ dims: [groups, channels / groups], data: new Float32Array(channels).fill(1) });
  const perChannel = (v: Value) => scope.reshape(scope.mul(v, ones), [0, channels, 1]);
  const a = scope.mul(perChannel(inverse), scope.reshape(scale, [channels, 1]));
  const b = scope.sub(scope.reshape(bias, [channels, 1]), scope.mul(perChannel(mean), a));
  const y = scope.add(scope.mul(scope.reshape(x, [0, channels, -1]), a), b);
  return scope.reshape(y, scope.shape(x));
}
