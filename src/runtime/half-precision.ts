// Whether a session may compute in float16 here (graph/precision.ts rewrites the graphs). The
// CPU provider is refused up front: onnxruntime's CPU kernels lack float16 for most of a
// decoder's ops, and where they have it they are slower than float32. A WebGPU adapter runs
// float16 only with the `shader-f16` feature, which Node cannot ask of an adapter (there is no
// navigator.gpu, and onnxruntime reports no adapter features). So it is tried instead, once per
// provider request, in a probe process (as every provider's own probe: providers.ts): a small
// float16 graph of a decoder's ops (Cast, Conv, Mul, Add, Resize, Sigmoid) opened with
// onnxruntime's CPU fallback disabled, so a float16 node the adapter cannot run fails the
// probe instead of moving quietly to the CPU, and run once, so a wrong result fails it too.
// Without shader-f16 the WebGPU provider registers no float16 kernels and the probe fails:
// PROVIDER_UNAVAILABLE, before any decode work.

import { reason, refuse } from '../errors.js';
import { GraphBuilder } from '../graph/builder.js';
import { encodeModel } from '../graph/onnx-proto.js';
import { modelInPrecision } from '../graph/precision.js';
import { checkPrecision } from './precision-check.js';
import { probeInChild } from './providers.js';
import { providerNameOf, type ProviderRequest } from './session-types.js';

/** The probe graph: y = Conv(x·1, w=2)·0.5 + 1.5 through float16, resized and gated like a decoder, for x = 1.5 → 3. */
function probeModel(): Uint8Array {
  const g = new GraphBuilder('fp16_probe');
  const x = g.reshape(g.input('x', [1]), [1, 1, 1, 1]);
  const h = g.conv(x, g.param('w', { dims: [1, 1, 1, 1], data: Float32Array.of(2) }), undefined);
  const up = g.resizeNearest(g.add(g.mul(h, 0.5), 1.5), [1, 1, 2, 2]);
  // sigmoid(large) = 1 exactly in float16, so the gate leaves the value as it is.
  const gated = g.mul(up, g.sigmoid(g.add(g.mul(up, 0), 100)));
  g.output('y', g.reshape(g.slice(gated, { starts: [0, 0], ends: [1, 1], axes: [2, 3] }), [1]), [1]);
  return encodeModel(modelInPrecision(g.toModel(), 'fp16'));
}

const probes = new Map<string, Promise<void>>();

/** Confirms the provider runs float16 here (see the header); PROVIDER_UNAVAILABLE naming what failed otherwise. */
export function probeHalfPrecision(config: ProviderRequest): Promise<void> {
  const name = providerNameOf(config);
  checkPrecision(name, 'fp16');
  if (name !== 'webgpu') return Promise.resolve();
  const key = JSON.stringify(config);
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = probeInChild(config, { model: probeModel(), sessionConfig: { disable_cpu_ep_fallback: '1' }, expect: 3 }).then((failure) => {
      if (failure === null) return;
      refuse(
        'PROVIDER_UNAVAILABLE',
        reason(
          'PROVIDER_UNAVAILABLE',
          'precision',
          'fp16',
          "'fp32' on this adapter",
          `precision 'fp16' needs a WebGPU adapter with shader-f16, and a float16 graph did not run on this one (${failure}); decode with --precision fp32`,
        ),
      );
    });
    probes.set(key, probe);
  }
  return probe;
}
