// Plans against buffer limits, in Node (the module is pure): the largest tensor of a plan is the
// graph's for the plan's largest latent tile, the largest fitting window is the biggest side
// whose tiles fit (and one latent unit more does not), halo-exact reads are sized with their
// halo, and a plan over the limit is refused with the bytes, the limit and its source. Every graph
// a family's runner opens binds at most WebGPU's default 8 storage buffers in any one shader.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { getFamily, planningVae, resolveFamilyConfig, runtimeOf } from '../families/registry.js';
import { KL_SMALL, TAE_SMALL } from '../families/testing/config-files.js';
import { HUNYUAN_VIDEO_TINY, LTX2_TINY, QWEN_IMAGE_TINY, WAN21_TINY } from '../families/testing/video-configs.js';
import { HUNYUAN_IMAGE_TINY } from '../families/hunyuan-image/testing/configs.js';
import { buildLtx2DecoderStages } from '../families/ltx2/graph.js';
import type { RawConfig } from '../families/types.js';
import { graphTensorSizes } from '../graph/tensor-sizes.js';
import { elementCount } from '../tensor.js';
import { inputDimsOf } from './runs.js';
import { tae } from '../families/tae/spec.js';
import { taeRuntime } from '../families/tae/runtime.js';
import { architectureModel } from '../decode/decoder-model.js';
import {
  checkPlanFits,
  installWindow,
  largestFittingWindow,
  planTensorBytes,
  tensorLimitBytes,
  type BufferLimits,
} from './device-limits.js';

const config = resolveFamilyConfig(tae, { variant: 'taesd' });
const model = architectureModel(tae, taeRuntime, config);
const LATENT = [1, 4, 24, 32];
const MIB = 2 ** 20;
const activation = (hPx: number, wPx: number) => 64 * hPx * wPx * 4;

test('the largest tensor of a plan is 64 channels at the largest tile (whole, tiled, halo-exact)', () => {
  const vae = planningVae('tae', { variant: 'taesd' });
  assert.equal(planTensorBytes(vae, model, LATENT, 'whole').largest.bytes, activation(192, 256));
  installWindow(vae, { height: 24, width: 32 }, { height: 128, width: 128 }, { height: 32, width: 32 });
  const tiled = planTensorBytes(vae, model, LATENT, 'tiled');
  assert.deepEqual([tiled.tile, tiled.tiles, tiled.largest.bytes], [{ height: 16, width: 16 }, 6, activation(128, 128)]);
  const exact = planTensorBytes(vae, model, LATENT, 'exact');
  // Cores of 12 latent rows and columns (the stride) read with the decoder's halo on each side.
  assert.ok(exact.tile.height > 12 && exact.tile.height <= 24, `exact read ${exact.tile.height} rows`);
  assert.equal(exact.largest.bytes, activation(exact.tile.height * 8, exact.tile.width * 8));
});

test('largestFittingWindow: the biggest side whose tiles fit, and one latent unit more does not', () => {
  const vae = planningVae('tae', { variant: 'taesd' });
  const limit = 8 * MIB;
  const window = largestFittingWindow(vae, model, LATENT, limit)!;
  assert.deepEqual(window, { height: 176, width: 176 });
  assert.ok(activation(176, 176) <= limit && activation(184, 184) > limit);
  assert.deepEqual(largestFittingWindow(vae, model, LATENT, 1e9), { height: 192, width: 256 }, 'the whole image when it fits');
  assert.equal(largestFittingWindow(vae, model, LATENT, 1000), null, 'not even one latent unit fits 1000 bytes');
  assert.equal(vae.tiling.enabled, false, 'probing leaves the VAE as it was');
});

test('a plan over the limit is refused with its bytes, the limit and where the limit comes from', () => {
  const limits: BufferLimits = {
    maxBufferSize: 256 * MIB,
    maxStorageBufferBindingSize: 128 * MIB,
    capBytes: 8 * MIB,
    source: 'WebGPU device (test)',
  };
  assert.equal(tensorLimitBytes(limits), 8 * MIB);
  assert.equal(tensorLimitBytes({ ...limits, capBytes: undefined }), 128 * MIB);
  const vae = planningVae('tae', { variant: 'taesd' });
  const { largest } = planTensorBytes(vae, model, LATENT, 'whole');
  assert.throws(
    () => checkPlanFits(largest, limits, 'a whole decode of 192x256 px', { height: 176, width: 176 }),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'PLAN_REFUSED' &&
      e.reasons[0]!.code === 'TENSOR_EXCEEDS_DEVICE_LIMIT' &&
      e.message.includes('needs a 12582912-byte (12.0 MiB) tensor') &&
      e.message.includes(
        'over the 8388608-byte (8.0 MiB) limit of the WebGPU device (test): maxBufferSize 256.0 MiB, maxStorageBufferBindingSize 128.0 MiB, cap 8.0 MiB; the largest window that fits is 176x176 px',
      ),
  );
  checkPlanFits(largest, { ...limits, capBytes: undefined }, 'a whole decode');
});

// WebGPU's default maxStorageBuffersPerShaderStage (lavapipe's is 16; onnxruntime asks for the adapter's maximum).
const WEBGPU_DEFAULT_STORAGE_BUFFERS = 8;

test('every graph a family runner opens binds at most 8 storage buffers per shader, a 128-chunk attention included', () => {
  const cases: { family: string; config: RawConfig; latent: number[] }[] = [
    // 256² latent: the KL runner cuts its attention into 128 query chunks (a 129-buffer Split before).
    { family: 'autoencoder-kl', config: KL_SMALL, latent: [1, 4, 256, 256] },
    {
      family: 'flux2',
      config: { block_out_channels: [8, 16], layers_per_block: 1, norm_num_groups: 4, latent_channels: 8 },
      latent: [1, 8, 8, 8],
    },
    { family: 'hunyuan-image', config: HUNYUAN_IMAGE_TINY, latent: [1, 64, 192, 192] },
    { family: 'tae', config: TAE_SMALL, latent: [1, 4, 8, 8] },
    { family: 'wan', config: WAN21_TINY, latent: [1, 4, 2, 6, 6] },
    { family: 'qwen-image', config: QWEN_IMAGE_TINY, latent: [1, 16, 1, 6, 6] },
    { family: 'hunyuan-video', config: HUNYUAN_VIDEO_TINY, latent: [1, 4, 2, 3, 3] },
    { family: 'ltx2', config: LTX2_TINY, latent: [1, 4, 2, 4, 4] },
  ];
  for (const c of cases) {
    const family = getFamily(c.family);
    const runtime = runtimeOf(family);
    const config = resolveFamilyConfig(family, c.config);
    const weights = new Map(
      runtime.decoderParams(config).map((p) => [p.name, { dims: [...p.dims], data: new Float32Array(elementCount(p.dims)) }]),
    );
    if (!runtime.memoryRuns && !runtime.decoderGraph) {
      // LTX-2's runner chains stage graphs it describes to no one: every value of every node counted, int64 ones too (an upper bound).
      for (const stage of buildLtx2DecoderStages(config, weights))
        for (const node of stage.toModel().graph?.node ?? []) {
          const buffers = (node.op_type === 'Concat' ? 1 : (node.input ?? []).length) + (node.output ?? []).length;
          assert.ok(buffers <= WEBGPU_DEFAULT_STORAGE_BUFFERS, `${c.family}: ${node.op_type} ${node.name} binds up to ${buffers}`);
        }
      continue;
    }
    const models = runtime.memoryRuns?.(config, weights, c.latent).sessions.map((s) => s.model) ?? [
      runtime.decoderGraph!(config, weights).toModel(),
    ];
    for (const model of models) {
      const { widestNode } = graphTensorSizes(model, inputDimsOf(model, c.latent));
      assert.ok(
        widestNode.buffers <= WEBGPU_DEFAULT_STORAGE_BUFFERS,
        `${c.family}: ${widestNode.op} ${widestNode.node} binds ${widestNode.buffers}`,
      );
    }
  }
});
