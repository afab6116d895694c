// LTX-2 end to end through the public path: `loadVae`, plans from the planner, `vae.decode` —
// spatially tiled over all frames (temporal tiling off by default), and temporally chunked when
// enabled (drop the last frame of later chunks, blend_t) — against a plain transcription of
// diffusers' loops running the float64 reference decoder per tile and chunk, with and without
// timestep conditioning; the decode timestep from the config; strict binding of folders.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertVideoCase, diffusersLoops, videoCases, type VideoDecodeCase } from '../../decode/testing/diffusers-video-decode.js';
import type { RefTensor } from '../../graph/testing/reference-ops.js';
import { loadVae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import { assertRelativeL2 } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import { tileOverlapPlan, tileShapePlan, setTiling } from '../../plan/planner.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { ltx2DecoderParams } from './graph.js';
import { getFamily } from '../registry.js';
import { referenceLtx2Decode, type Ltx2ReferenceConfig } from './testing/reference.js';
import type { RawConfig } from '../types.js';
import { LTX2_TINY, LTX2_TINY_REFERENCE } from '../testing/video-configs.js';
import { decodeOnce, diffusersFolderWriter } from '../testing/diffusers-folder.js';

const SEED = 5;
const CONDITIONED: RawConfig = { ...LTX2_TINY, timestep_conditioning: true, decoder_causal: true, decode_timestep: 0.2 };
const CONDITIONED_REFERENCE: Ltx2ReferenceConfig = { ...LTX2_TINY_REFERENCE, timestepConditioning: true, causal: true };

/** A decoder: its config, the reference's view of it and the decode timestep its reference is given (null: unconditioned). */
interface Decoder {
  config: RawConfig;
  reference: Ltx2ReferenceConfig;
  temb: number | null;
}
const PLAIN: Decoder = { config: LTX2_TINY, reference: LTX2_TINY_REFERENCE, temb: null };
const TIMESTEP_CONDITIONED: Decoder = { config: CONDITIONED, reference: CONDITIONED_REFERENCE, temb: 0.2 };
const decodedBy = (decoder: Decoder, cases: VideoDecodeCase[]) => cases.map((c) => ({ ...c, ...decoder }));

// [label, [latent, spatial [window, overlap] px, frames [window, overlap], diffusers' loops, decoder calls]]
const CASES = [
  ...decodedBy(
    PLAIN,
    videoCases([
      [
        'spatial tiles over all 5 latent frames: temporal tiling is off by default',
        [[1, 4, 5, 5, 6], [64, 16], 'default', diffusersLoops([64, 48], null), 4],
      ],
      [
        'temporal chunks of 8 frames every 4 (last frame dropped), spatial tiles per chunk',
        [[1, 4, 3, 5, 5], [64, 16], [8, 4], diffusersLoops([64, 48], [8, 4]), 3 * 4],
      ],
    ]),
  ),
  ...decodedBy(
    TIMESTEP_CONDITIONED,
    videoCases([
      [
        'timestep-conditioned causal decoder, decode_timestep 0.2 from the config, tiled in space and time',
        [[1, 4, 3, 4, 4], [48, 16], [8, 0], diffusersLoops([48, 32], [8, 8]), 2 * 4],
      ],
    ]),
  ),
];

for (const c of CASES) {
  test(`vae.decode equals diffusers' loops over the float64 reference: ${c.label}`, async () => {
    const vae = await loadVae({ family: 'ltx2', config: c.config, weights: 'synthetic', seed: SEED }, { threads: 1 });
    try {
      const weights = syntheticWeights(ltx2DecoderParams(vae.config), SEED);
      const temb = c.temb === null ? null : new Array<number>(c.latent[0]!).fill(c.temb);
      const reference = (tile: RefTensor) => referenceLtx2Decode(c.reference, weights, tile, temb);
      await assertVideoCase(vae, c, reference, { spatialRatio: 16, temporalRatio: 4, dropFrame: 'last' });
    } finally {
      await vae.dispose();
    }
  });
}

test('an edge tile one latent unit wide is refused with reflect padding, as diffusers does', async () => {
  const vae = await loadVae({ family: 'ltx2', config: LTX2_TINY, weights: 'synthetic', seed: SEED }, { threads: 1 });
  try {
    setTiling(vae, tileShapePlan(vae, 64, 64)!);
    setTiling(vae, tileOverlapPlan(vae, 16, 16)!);
    // Width 7 with stride 3: tiles start at 0, 3, 6 and the last is 1 unit wide.
    await assert.rejects(
      vae.decode(seededTensor([1, 4, 1, 3, 7], 1)),
      (e: unknown) => e instanceof DistVaeError && e.reasons[0]?.code === 'TILE_TOO_SMALL',
    );
  } finally {
    await vae.dispose();
  }
});

// ---- loading diffusers folders ---------------------------------------------------------------

const diffusersFolder = diffusersFolderWriter('distvae-ltx2-', 'AutoencoderKLLTX2Video');

test('a conditioned folder (encoder.*, latents_mean/std, the multiplier stored as [1]) loads as is; decode_timestep comes from the config, an override wins', async () => {
  const { decode_timestep: _, ...architecture } = CONDITIONED;
  const weights = syntheticWeights(ltx2DecoderParams(getFamily('ltx2').resolveConfig(architecture)), SEED);
  const multiplier = weights.get('decoder.timestep_scale_multiplier')!;
  const stored = new Map([
    ...weights,
    ['decoder.timestep_scale_multiplier', { dims: [1], data: multiplier.data }],
    ['encoder.conv_in.conv.weight', seededTensor([8, 48, 3, 3, 3], 1)],
    ['latents_mean', seededTensor([4], 1)],
    ['latents_std', seededTensor([4], 2)],
  ]);
  const dir = diffusersFolder(architecture, stored);
  const z = seededTensor([1, 4, 2, 2, 3], 2);
  const expectedAt = (t: number) => referenceLtx2Decode(CONDITIONED_REFERENCE, weights, z, [t]);
  assertRelativeL2(await decodeOnce(dir, z), expectedAt(0), 'default decode timestep 0');
  assertRelativeL2(await decodeOnce({ path: dir, config: { decode_timestep: 0.3 } }, z), expectedAt(0.3), 'decode_timestep override 0.3');
});

test('a decode timestep is refused for an LTX-2 decoder without timestep conditioning', async () => {
  await assert.rejects(
    loadVae({ family: 'ltx2', config: { ...LTX2_TINY, decode_timestep: 0.05 }, weights: 'synthetic', seed: 1 }),
    (e: unknown) => e instanceof DistVaeError && e.code === 'CONFIG_INVALID' && e.reasons[0]!.code === 'DECODE_SETTING_UNUSED',
  );
  // Published defaults plus a decode timestep alone: still the published (unconditioned) decoder.
  await assert.rejects(loadVae({ family: 'ltx2', config: { decode_timestep: 0.05 }, weights: 'synthetic', seed: 1 }), /does not take it/);
});

test('keys of another family are refused: a HunyuanVideo-style post_quant_conv is not an LTX-2 parameter', async () => {
  const weights = new Map([
    ...syntheticWeights(ltx2DecoderParams(getFamily('ltx2').resolveConfig(LTX2_TINY)), SEED),
    ['post_quant_conv.weight', seededTensor([4, 4, 1, 1, 1], 1)],
  ]);
  await assert.rejects(
    loadVae(diffusersFolder(LTX2_TINY, weights)),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'WEIGHTS_MISMATCH' &&
      e.reasons.length === 1 &&
      e.reasons[0]!.field === 'post_quant_conv.weight',
  );
});
