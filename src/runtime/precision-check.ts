// The providers that compute in float32 only, refused a float16 request before any work; shared
// by the Node and page session modules (no onnxruntime or Node import here).

import { invalidArgument } from '../errors.js';
import type { Precision } from '../graph/precision.js';

/** Providers that cannot compute in float16 at all (a page's 'wasm' is the CPU's twin). */
const FLOAT32_ONLY: readonly string[] = ['cpu', 'wasm'];

/** Refuses (INVALID_ARGUMENT) a float16 request on a provider that has no float16 path. */
export function checkPrecision(provider: string, precision: Precision): void {
  if (precision !== 'fp16' || !FLOAT32_ONLY.includes(provider)) return;
  invalidArgument(
    'precision',
    precision,
    "'fp32' on the CPU",
    `precision 'fp16' runs on a GPU provider whose adapter has shader-f16 (e.g. --provider webgpu); provider '${provider}' computes in float32 only`,
  );
}
