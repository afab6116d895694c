// Tensor sizes against onnxruntime's own run: the output shapes propagated through TAE and
// AutoencoderKL decoder graphs (GroupNorm through computed Reshape shapes, attention) equal the
// shapes ORT produces, the largest tensor of a TAE decoder is its 64-channel full-resolution
// activation, and an op the sizer does not model is refused by name.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { buildKlDecoderGraph, klDecoderParams } from '../families/autoencoder-kl/graph.js';
import { getFamily, resolveFamilyConfig } from '../families/registry.js';
import { buildDecoderGraph } from '../families/tae/graph.js';
import { tae, taeArchitecture } from '../families/tae/spec.js';
import { taeRuntime } from '../families/tae/runtime.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { GraphBuilder } from './builder.js';
import { seededTensor } from '../tensor.js';
import { runGraph } from './testing/run-graph.js';
import { graphTensorSizes } from './tensor-sizes.js';

test('TAE decoder: the propagated output shape is what onnxruntime returns, and the largest tensor is 64 channels at full resolution', async () => {
  for (const variant of ['taesd', 'taef2'] as const) {
    const config = resolveFamilyConfig(tae, { variant });
    const g = buildDecoderGraph(taeArchitecture(config), syntheticWeights(taeRuntime.decoderParams(config), 1));
    const latents = seededTensor([1, config.geometry.latentChannels, 5, 7], 2);
    const sizes = graphTensorSizes(g.toModel(), { latents: latents.dims });
    const run = await runGraph(g, { latents });
    assert.deepEqual(sizes.outputs['sample'], run['sample']!.dims, variant);
    assert.deepEqual(sizes.outputs['sample'], [1, 3, 40, 56]);
    assert.equal(sizes.largest.bytes, 64 * 40 * 56 * 4, `${variant}: ${sizes.largest.name} [${sizes.largest.dims.join(', ')}]`);
    assert.deepEqual(sizes.largest.dims, [1, 64, 40, 56]);
  }
});

test('AutoencoderKL decoder with GroupNorm and mid-block attention: output shape as onnxruntime returns; the attention scores are sized', async () => {
  const config = getFamily('autoencoder-kl').resolveConfig({
    block_out_channels: [16, 32],
    layers_per_block: 1,
    norm_num_groups: 8,
    latent_channels: 4,
  });
  const g = buildKlDecoderGraph(config, syntheticWeights(klDecoderParams(config), 3));
  const latent = seededTensor([1, 4, 6, 5], 4);
  const sizes = graphTensorSizes(g.toModel(), { latent: latent.dims });
  const run = await runGraph(g, { latent });
  assert.deepEqual(sizes.outputs['sample'], run['sample']!.dims);
  // (h·w)² float32 scores of the single-head mid-block attention.
  assert.ok(
    sizes.tensors.some((t) => t.dims.join() === '1,30,30' && t.bytes === 30 * 30 * 4),
    'the attention score matrix is among the sized tensors',
  );
  assert.ok(sizes.largest.bytes >= Math.max(...sizes.tensors.map((t) => t.bytes)));
});

test('an op the sizer does not model is refused, naming the op and the node', () => {
  const g = new GraphBuilder('odd');
  g.output('y', g.op('Einsum', [g.input('x', [1, 2])]), [1, 2]);
  assert.throws(
    () => graphTensorSizes(g.toModel(), { x: [1, 2] }),
    (e: unknown) => e instanceof DistVaeError && e.code === 'UNSUPPORTED' && /cannot size Einsum node .*not modelled/.test(e.message),
  );
  assert.throws(
    () => graphTensorSizes(g.toModel(), {}),
    (e: unknown) => e instanceof DistVaeError && /no dims given for graph input x/.test(e.message),
  );
});
