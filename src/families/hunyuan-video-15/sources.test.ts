// HunyuanVideo 1.5 loaded as users hold it: a diffusers VAE folder whose config.json `_class_name`
// (AutoencoderKLHunyuanVideo15) picks the family, its encoder tensors in the same file ignored by
// strict binding; the `vae/` component of a pipeline in the local Hugging Face cache, by repo id,
// with an fp16 `--variant`; and Tencent's original `vae/diffusion_pytorch_model.safetensors` (the
// names diffusers' convert_hunyuan_video1_5_to_diffusers.py renames), as a bare file with the
// family named — its config read from its shapes. Each decodes bitwise as the same weights given
// in memory do. The encoder loads from a folder, a diffusers-key single file with the family and
// the Hub cache with --variant fp16, bitwise its in-memory encode (encoderSourcesTests).

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import type { Tensor } from '../../tensor.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { encoderSourcesTests, sourcesTests } from '../testing/sources.js';
import { hunyuanVideo15Runtime } from './runtime.js';
import { hunyuanVideo15 } from './spec.js';
import { HUNYUAN_VIDEO_15_TINY } from './testing/configs.js';

// What a full checkpoint carries beside the decoder (never read by a decode).
const encoder: [string, Tensor][] = [
  ['encoder.conv_in.conv.weight', { dims: [16, 3, 3, 3, 3], data: new Float32Array(16 * 81).fill(0.5) }],
];
const { root, decoder, inMemory, decodeOf } = sourcesTests({
  spec: hunyuanVideo15,
  runtime: hunyuanVideo15Runtime,
  config: HUNYUAN_VIDEO_15_TINY,
  extras: encoder,
  extrasName: 'encoder tensors',
  latentDims: [1, 32, 2, 5, 6],
  outDims: [1, 3, 5, 20, 24],
  hub: {
    repo: 'hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-480p_t2v',
    pipeline: 'HunyuanVideo15Pipeline',
    vae: 'AutoencoderKLHunyuanVideo15',
    transformer: 'HunyuanVideo15Transformer3DModel',
  },
});

/** The original name of a diffusers decoder key, spelled from diffusers' conversion script (the inverse of what it renames). */
function originalKey(key: string): string {
  return key
    .replace(/^decoder\.mid_block\.resnets\.(\d)\./, (_, i: string) => `decoder.mid.block_${Number(i) + 1}.`)
    .replace(/^decoder\.mid_block\.attentions\.0\.to_(q|k|v)\./, 'decoder.mid.attn_1.$1.')
    .replace(/^decoder\.mid_block\.attentions\.0\./, 'decoder.mid.attn_1.')
    .replace(/^decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\./, 'decoder.up.$1.block.$2.')
    .replace(/^decoder\.up_blocks\.(\d+)\.upsamplers\.0\./, 'decoder.up.$1.upsample.');
}

test("Tencent's original layout as a bare file with --family: keys renamed as diffusers converts them, config from the shapes", async () => {
  const original = new Map([...decoder].map(([k, t]) => [originalKey(k), t]));
  assert.ok(original.has('decoder.mid.attn_1.q.weight') && original.has('decoder.up.1.upsample.conv.conv.weight'));
  assert.ok(original.has('decoder.mid.block_2.norm1.gamma') && original.has('decoder.up.0.block.1.conv2.conv.bias'));
  const file = join(root, 'hunyuanvideo15-vae.safetensors');
  writeSafetensors(file, new Map([...original, ...encoder]));
  const fromFile = await decodeOf({ path: file, family: 'hunyuan-video-1.5' });
  assert.equal(fromFile.family, 'hunyuan-video-1.5');
  assertSameBits(fromFile.out, await inMemory(decoder), 'original layout vs in-memory weights');
  // Its keys alone do not name the family (no single-file layout detection for it): a bare file needs --family.
  await assert.rejects(
    decodeOf(file),
    (e: unknown) => e instanceof DistVaeError && e.code === 'INVALID_ARGUMENT' && e.reasons[0]?.code === 'FAMILY_REQUIRED',
  );
});

encoderSourcesTests({
  spec: hunyuanVideo15,
  runtime: hunyuanVideo15Runtime,
  config: HUNYUAN_VIDEO_15_TINY,
  inputDims: [1, 3, 5, 8, 12],
  hub: {
    repo: 'hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-480p_t2v',
    pipeline: 'HunyuanVideo15Pipeline',
    vae: 'AutoencoderKLHunyuanVideo15',
    transformer: 'HunyuanVideo15Transformer3DModel',
  },
});
