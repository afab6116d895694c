// The LTX-2 decoder graph against the independent float64 reference decoder
// (testing/reference.ts, written from the architecture notes) over the config space the
// published VAEs use (reflect / zero padding, causal or not, residual or plain up-samplers,
// up-sample factors 1 and 2, a channel-changing conv_in resnet, timestep conditioning), its
// parameter list against diffusers' keys, and the refusals of what diffusers cannot run.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../../errors.js';
import { assertRelativeL2 } from '../../graph/testing/compare.js';
import { assertModelIo } from '../../graph/testing/model-io.js';
import { seededTensor } from '../../tensor.js';
import { createStagedSession } from '../../runtime/staged-session.js';
import type { Tensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { buildLtx2DecoderStages, ltx2DecoderParams } from './graph.js';
import { getFamily } from '../registry.js';
import { referenceLtx2Decode, type Ltx2ReferenceConfig } from './testing/reference.js';
import type { RawConfig } from '../types.js';
import { LTX2_TINY_REFERENCE } from '../testing/video-configs.js';

/** diffusers' config lists for a two-block decoder, and the same fields for the reference. */
function configs(fields: Partial<Ltx2ReferenceConfig> & { ratios: [number, number] }): { raw: RawConfig; reference: Ltx2ReferenceConfig } {
  const reference: Ltx2ReferenceConfig = { ...LTX2_TINY_REFERENCE, ...fields };
  const raw: RawConfig = {
    latent_channels: 4,
    block_out_channels: [8, 16],
    decoder_block_out_channels: reference.decoderBlockOut,
    decoder_layers_per_block: reference.layersPerBlock,
    decoder_spatio_temporal_scaling: reference.scaling,
    decoder_inject_noise: reference.layersPerBlock.map(() => false),
    upsample_type: reference.upsampleType,
    upsample_residual: reference.residual,
    upsample_factor: reference.factor,
    patch_size: reference.patchSize,
    patch_size_t: reference.patchSizeT,
    decoder_causal: reference.causal,
    decoder_spatial_padding_mode: reference.padding,
    timestep_conditioning: reference.timestepConditioning,
    spatial_compression_ratio: fields.ratios[0],
    temporal_compression_ratio: fields.ratios[1],
  };
  return { raw, reference };
}

interface Case {
  label: string;
  fields: Parameters<typeof configs>[0];
  latent: number[];
  out: number[];
  temb?: number[];
}

const CASES: Case[] = [
  {
    label: 'LTX-2 pattern: reflect, non-causal, residual spatio-temporal up-samplers (ratio 16/4)',
    fields: { ratios: [16, 4] },
    latent: [1, 4, 2, 3, 4],
    out: [1, 3, 5, 48, 64],
  },
  {
    label: 'causal, zero padding, factors 1, a conv_in resnet (LayerNorm + 1x1x1 shortcut), spatial then temporal',
    fields: {
      ratios: [8, 2],
      causal: true,
      padding: 'zeros',
      factor: [1, 1],
      residual: [true, false],
      upsampleType: ['spatial', 'temporal'],
    },
    latent: [1, 4, 3, 2, 3],
    out: [1, 3, 5, 16, 24],
  },
  {
    label: 'LTX-2.3 pattern: temporal then spatial, plain up-samplers, factors 1 and 2, two mid resnets',
    fields: {
      ratios: [8, 2],
      padding: 'zeros',
      factor: [1, 2],
      residual: [false, false],
      upsampleType: ['temporal', 'spatial'],
      layersPerBlock: [1, 1, 2],
    },
    latent: [1, 4, 2, 3, 2],
    out: [1, 3, 3, 24, 16],
  },
  {
    label: 'timestep conditioning, batch 2 with its own timesteps, causal, reflect',
    fields: { ratios: [16, 4], causal: true, timestepConditioning: true },
    latent: [2, 4, 2, 2, 3],
    out: [2, 3, 5, 32, 48],
    temb: [0.05, 0.4],
  },
];

async function runDecoder(c: Case, weights: ReadonlyMap<string, Tensor>, z: Tensor): Promise<Tensor> {
  const config = getFamily('ltx2').resolveConfig(configs(c.fields).raw);
  const feeds: Record<string, Tensor> = { latent: z };
  if (c.temb) feeds['timestep'] = { dims: [c.temb.length], data: Float32Array.from(c.temb) };
  const session = await createStagedSession(buildLtx2DecoderStages(config, weights), { intraOpThreads: 1 });
  try {
    return (await session.run(feeds))['sample']!;
  } finally {
    await session.dispose();
  }
}

for (const c of CASES) {
  test(`graph equals the float64 reference decoder: ${c.label}`, async () => {
    const { raw, reference } = configs(c.fields);
    const config = getFamily('ltx2').resolveConfig(raw);
    const weights = syntheticWeights(ltx2DecoderParams(config), 7);
    const z = seededTensor(c.latent, 11);
    const sample = await runDecoder(c, weights, z);
    const expected = referenceLtx2Decode(reference, weights, z, c.temb ?? null);
    assert.deepEqual(expected.dims, c.out);
    assertRelativeL2(sample, expected, c.label);
  });
}

test('the timestep changes a conditioned decode (the input is used)', async () => {
  const c = CASES[3]!;
  const weights = syntheticWeights(ltx2DecoderParams(getFamily('ltx2').resolveConfig(configs(c.fields).raw)), 7);
  const z = seededTensor(c.latent, 11);
  const a = await runDecoder(c, weights, z);
  const b = await runDecoder({ ...c, temb: [0.3, 0.4] }, weights, z);
  const half = a.data.length / 2;
  assert.notDeepEqual(a.data.subarray(0, half), b.data.subarray(0, half));
  assert.deepEqual(a.data.subarray(half), b.data.subarray(half));
});

test('the stages hold exactly the parameter list, one stage per block; a conditioned decoder also takes `timestep`', () => {
  for (const c of [CASES[1]!, CASES[3]!]) {
    const config = getFamily('ltx2').resolveConfig(configs(c.fields).raw);
    const specs = ltx2DecoderParams(config);
    const models = buildLtx2DecoderStages(config, syntheticWeights(specs, 1)).map((g) => g.toModel());
    assert.equal(models.length, 3);
    assertModelIo(models, specs, { inputs: c.temb ? ['latent', 'timestep'] : ['latent'], outputs: ['sample'] });
  }
});

test("the published LTX-2 decoder lists diffusers' keys and shapes (90 tensors)", () => {
  const specs = new Map(ltx2DecoderParams(getFamily('ltx2').resolveConfig(undefined)).map((s) => [s.name, s.dims]));
  assert.equal(specs.size, 90);
  assert.deepEqual(specs.get('decoder.conv_in.conv.weight'), [1024, 128, 3, 3, 3]);
  assert.deepEqual(specs.get('decoder.mid_block.resnets.4.conv2.conv.weight'), [1024, 1024, 3, 3, 3]);
  assert.deepEqual(specs.get('decoder.up_blocks.0.upsamplers.0.conv.conv.weight'), [4096, 1024, 3, 3, 3]);
  assert.deepEqual(specs.get('decoder.up_blocks.2.resnets.0.conv1.conv.weight'), [128, 128, 3, 3, 3]);
  assert.deepEqual(specs.get('decoder.conv_out.conv.weight'), [48, 128, 3, 3, 3]);
});

test('a conditioned decoder adds the multiplier (0-d), time embedders and scale/shift tables', () => {
  const specs = new Map(
    ltx2DecoderParams(
      getFamily('ltx2').resolveConfig({ timestep_conditioning: true, spatial_compression_ratio: 32, temporal_compression_ratio: 8 }),
    ).map((s) => [s.name, s.dims]),
  );
  assert.deepEqual(specs.get('decoder.timestep_scale_multiplier'), []);
  assert.deepEqual(specs.get('decoder.mid_block.time_embedder.timestep_embedder.linear_1.weight'), [4096, 256]);
  assert.deepEqual(specs.get('decoder.up_blocks.1.time_embedder.timestep_embedder.linear_2.weight'), [1024, 1024]);
  assert.deepEqual(specs.get('decoder.up_blocks.1.resnets.0.scale_shift_table'), [4, 256]);
  assert.deepEqual(specs.get('decoder.time_embedder.timestep_embedder.linear_1.weight'), [256, 256]);
  assert.deepEqual(specs.get('decoder.scale_shift_table'), [2, 128]);
});

test('refuses injected noise and channel layouts diffusers cannot run, naming the fields', () => {
  const refused = (raw: RawConfig, field: RegExp) =>
    assert.throws(
      () => ltx2DecoderParams(getFamily('ltx2').resolveConfig(raw)),
      (e: unknown) => e instanceof DistVaeError && e.code === 'CONFIG_INVALID' && e.reasons.some((r) => field.test(r.field)),
    );
  refused({ ...configs({ ratios: [16, 4] }).raw, decoder_inject_noise: [false, true, false] }, /^decoder_inject_noise$/);
  // A width change with factor 2 needs a conv_in resnet at the wrong width.
  refused(configs({ ratios: [16, 4], decoderBlockOut: [4, 16] }).raw, /^decoder_block_out_channels|^upsample_factor/);
  // conv_in + timestep conditioning crashes in diffusers.
  refused(
    configs({ ratios: [8, 2], factor: [1, 1], upsampleType: ['spatial', 'temporal'], timestepConditioning: true }).raw,
    /^timestep_conditioning$/,
  );
});

test("causal mode follows diffusers: the class default (causal) for a config without the field, the published config's non-causal decoder without a config", () => {
  const { decoder_causal: _, ...withoutField } = configs({ ratios: [16, 4] }).raw;
  assert.equal(getFamily('ltx2').resolveConfig(withoutField).fields['decoder_causal'], true);
  assert.equal(getFamily('ltx2').resolveConfig(undefined).fields['decoder_causal'], false);
  const onlyTimestep = getFamily('ltx2').resolveConfig({ decode_timestep: 0.1 });
  assert.deepEqual(
    [onlyTimestep.geometry.spatialRatio, onlyTimestep.geometry.temporalRatio, onlyTimestep.fields['decoder_causal']],
    [32, 8, false],
  );
});
