// DC-AE loaded as users hold it: a diffusers VAE folder whose config.json `_class_name`
// (AutoencoderDC) picks the family, its encoder tensors in the same file ignored by
// strict binding; and the `vae/` component of a pipeline in the local Hugging Face cache, by repo
// id, with an fp16 `--variant`; a single .safetensors of diffusers keys with `--family dc-ae`. Each
// decodes bitwise as the same weights given in memory do; the encoder loads from the folder, the
// single file and the Hub cache with --variant, bitwise its in-memory encode. The original
// mit-han-lab layout (`decoder.project_in.conv`, `decoder.stages.*.op_list`, a fused `qkv.conv` that diffusers'
// converter splits into to_q / to_k / to_v) is not read: it is refused by strict binding, naming keys.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { loadVae } from '../../decode/vae.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import type { Tensor } from '../../tensor.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { encoderSourcesTests, sourcesTests } from '../testing/sources.js';
import { dcaeRuntime } from './runtime.js';
import { dcae } from './spec.js';
import { DCAE_TINY } from './testing/configs.js';

// What a full checkpoint carries beside the decoder (never read by a decode).
const encoder: [string, Tensor][] = [['encoder.conv_in.weight', { dims: [16, 3, 3, 3], data: new Float32Array(16 * 27).fill(0.5) }]];
const { root, decoder, inMemory, decodeOf } = sourcesTests({
  spec: dcae,
  runtime: dcaeRuntime,
  config: DCAE_TINY,
  extras: encoder,
  extrasName: 'encoder tensors',
  latentDims: [1, 32, 5, 6],
  hub: {
    repo: 'Efficient-Large-Model/Sana_1600M_1024px_diffusers',
    pipeline: 'SanaPipeline',
    vae: 'AutoencoderDC',
    transformer: 'SanaTransformer2DModel',
  },
});

test('a single .safetensors of diffusers keys with --family dc-ae and its config decodes as the in-memory weights', async () => {
  const file = join(root, 'dcae.safetensors');
  writeSafetensors(file, new Map([...decoder, ...encoder]));
  const single = await decodeOf({ path: file, family: 'dc-ae', config: DCAE_TINY });
  assert.equal(single.family, 'dc-ae');
  assertSameBits(single.out, await inMemory(decoder), 'single file vs in-memory weights');
});

test('the original (mit-han-lab) single-file layout is refused before decoding, naming the keys it lacks', async () => {
  const file = join(root, 'original.safetensors');
  const original = new Map<string, Tensor>([
    ['decoder.project_in.conv.weight', { dims: [32, 32, 3, 3], data: new Float32Array(32 * 32 * 9) }],
    ['decoder.stages.2.op_list.0.context_module.qkv.conv.weight', { dims: [96, 32, 1, 1], data: new Float32Array(96 * 32) }],
  ]);
  writeSafetensors(file, original);
  await assert.rejects(
    () => loadVae({ path: file, family: 'dc-ae', config: DCAE_TINY }, { threads: 1 }),
    (e) => e instanceof DistVaeError && e.code === 'WEIGHTS_MISMATCH' && /decoder\.conv_in\.weight/.test(e.message),
  );
});

encoderSourcesTests({
  spec: dcae,
  runtime: dcaeRuntime,
  config: DCAE_TINY,
  inputDims: [1, 3, 16, 20],
  hub: {
    repo: 'Efficient-Large-Model/Sana_1600M_1024px_diffusers',
    pipeline: 'SanaPipeline',
    vae: 'AutoencoderDC',
    transformer: 'SanaTransformer2DModel',
  },
});
