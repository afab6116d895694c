// The TAE graphs against the independent float64 reference (testing/reference.ts) on tiny
// synthetic configs — with and without TAEF2's GroupNorm pool blocks, and with another stage
// count — and the parameter lists against madebyollin's published key layout.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertMatchesReference } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import type { Tensor } from '../../tensor.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import type { RawConfig } from '../types.js';
import { tae } from './spec.js';
import { taeRuntime } from './runtime.js';
import { referenceArch, referenceDecode, referenceEncode } from './testing/reference.js';
import { TAE_SMALL } from '../testing/config-files.js';

const SESSION = { intraOpThreads: 1 };

/** Tiny TAE configs: width 8 (pool width 32 in 4 groups), one block per stage. */
const TINY: Record<string, RawConfig> = {
  plain: TAE_SMALL,
  pool: { ...TAE_SMALL, use_midblock_gn: true, num_decoder_blocks: [2, 1, 1, 1], num_encoder_blocks: [1, 1, 1, 2] },
  'three stages (4x)': {
    latent_channels: 3,
    use_midblock_gn: true,
    decoder_block_out_channels: [8, 8, 8],
    encoder_block_out_channels: [8, 8, 8],
    num_decoder_blocks: [1, 2, 1],
    num_encoder_blocks: [1, 1, 1],
  },
};

function spread(t: Tensor): number {
  return Math.sqrt(t.data.reduce((s, v) => s + v * v, 0) / t.data.length);
}

for (const [name, raw] of Object.entries(TINY)) {
  test(`decoder graph equals the float64 reference: ${name}`, async () => {
    const config = tae.resolveConfig(raw);
    const weights = syntheticWeights(taeRuntime.decoderParams(config), 11);
    const r = config.geometry.spatialRatio;
    const z = seededTensor([2, config.geometry.latentChannels, 3, 5], 5, 2.5);
    const runner = await taeRuntime.createTileRunner(config, weights, SESSION);
    try {
      const out = await runner.decode(z);
      assert.deepEqual(out.dims, [2, 3, 3 * r, 5 * r]);
      const spreadOut = spread(out);
      assert.ok(spreadOut > 0.05 && spreadOut < 20, `synthetic activations stay O(1): rms ${spreadOut}`);
      assertMatchesReference(out, referenceDecode(weights, referenceArch(raw, 'decoder'), z), `decoder ${name}`);
    } finally {
      await runner.dispose();
    }
  });

  test(`encoder graph equals the float64 reference: ${name}`, async () => {
    const config = tae.resolveConfig(raw);
    const weights = syntheticWeights(taeRuntime.encoder!.params(config), 12);
    const r = config.geometry.spatialRatio;
    const image = seededTensor([2, 3, 3 * r, 4 * r], 6, 0.5);
    for (let i = 0; i < image.data.length; i++) image.data[i]! += 0.5;
    const runner = await taeRuntime.encoder!.createRunner(config, weights, SESSION);
    try {
      const latents = await runner.decode(image);
      assert.deepEqual(latents.dims, [2, config.geometry.latentChannels, 3, 4]);
      assertMatchesReference(latents, referenceEncode(weights, referenceArch(raw, 'encoder'), image), `encoder ${name}`);
    } finally {
      await runner.dispose();
    }
  });
}

test('the published decoder and encoder keys: madebyollin indices and diffusers AutoencoderTiny names', () => {
  const taef2 = tae.resolveConfig({ variant: 'taef2' });
  const decoder = taeRuntime.decoderParams(taef2);
  const encoder = taeRuntime.encoder!.params(taef2);
  assert.equal(decoder.length, 79);
  assert.equal(encoder.length, 79);
  const shape = (specs: typeof decoder, name: string) => specs.find((p) => p.name === name)?.dims;
  assert.deepEqual(shape(decoder, '1.weight'), [64, 32, 3, 3]);
  assert.deepEqual(shape(decoder, '3.pool.0.weight'), [256, 64, 1, 1]);
  assert.deepEqual(shape(decoder, '5.pool.1.bias'), [256]);
  assert.deepEqual(shape(decoder, '5.pool.3.weight'), [64, 256, 1, 1]);
  assert.equal(shape(decoder, '8.pool.0.weight'), undefined, 'pools only in the first stage');
  for (const k of ['7', '12', '17']) assert.ok(shape(decoder, `${k}.weight`) && !shape(decoder, `${k}.bias`), `${k} is a bias-free conv`);
  assert.deepEqual(shape(decoder, '18.conv.4.bias'), [64]);
  assert.deepEqual(shape(decoder, '19.weight'), [3, 64, 3, 3]);
  assert.deepEqual(shape(encoder, '0.weight'), [64, 3, 3, 3]);
  for (const k of ['2', '6', '10'])
    assert.ok(shape(encoder, `${k}.weight`) && !shape(encoder, `${k}.bias`), `${k} is a bias-free stride-2 conv`);
  assert.deepEqual(shape(encoder, '13.pool.0.weight'), [256, 64, 1, 1]);
  assert.equal(shape(encoder, '9.pool.0.weight'), undefined, 'pools only in the last stage');
  assert.deepEqual(shape(encoder, '14.weight'), [32, 64, 3, 3]);

  const diffusers = tae.resolveConfig({ variant: 'taesd', key_layout: 'diffusers' });
  const names = new Set([...taeRuntime.decoderParams(diffusers), ...taeRuntime.encoder!.params(diffusers)].map((p) => p.name));
  for (const k of [
    'decoder.layers.0.weight',
    'decoder.layers.2.conv.0.weight',
    'decoder.layers.6.weight',
    'decoder.layers.18.bias',
    'encoder.layers.0.bias',
    'encoder.layers.2.weight',
    'encoder.layers.14.weight',
  ]) {
    assert.ok(names.has(k), k);
  }
  assert.equal(names.size, 2 * 67, 'taesd: 67 tensors per half (taef2 less its 12 pool tensors)');
});

test('a diffusers-layout checkpoint decodes exactly like the same weights under madebyollin keys', async () => {
  const raw = { ...TINY['plain']! };
  const mine = tae.resolveConfig(raw);
  const theirs = tae.resolveConfig({ ...raw, key_layout: 'diffusers' });
  const weights = syntheticWeights(taeRuntime.decoderParams(mine), 3);
  const renamed = new Map(
    [...weights].map(([k, t]) => {
      const [index, ...rest] = k.split('.');
      return [`decoder.layers.${Number(index) - 1}.${rest.join('.')}`, t] as const;
    }),
  );
  const z = seededTensor([1, 4, 2, 3], 9, 2);
  const a = await taeRuntime.createTileRunner(mine, weights, SESSION);
  const b = await taeRuntime.createTileRunner(theirs, renamed, SESSION);
  try {
    assert.deepEqual((await b.decode(z)).data, (await a.decode(z)).data);
  } finally {
    await a.dispose();
    await b.dispose();
  }
});
