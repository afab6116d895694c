// Halo-exact tiles: on a local decoder (a tiny TAESD-style graph without pool blocks) tiles
// decoded with the analysed halo and cropped equal the whole decode, while the same plan's
// blended tiles do not (so the comparison can fail); graphs with GroupNorm or attention are
// refused with the op named.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadVae, type Vae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import { difference } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import { setTiling } from '../../plan/planner.js';
import type { RawConfig } from '../../families/types.js';
import { TAE_SMALL } from '../../families/testing/config-files.js';
import { exactTiledDecode, exactTilingHalo } from './halo.js';

/** No pool blocks: every op of the graph is local, so halo-exact tiles are possible. */
const LOCAL_TAE: RawConfig = TAE_SMALL;

function installPlan(vae: Vae, window: number, overlap: number): void {
  setTiling(vae, { window: { height: window, width: window }, overlap: { height: overlap, width: overlap } });
}

test('halo-exact tiles reproduce the whole decode of a local graph; blended tiles of the same plan do not', async () => {
  const vae = await loadVae({ family: 'tae', config: LOCAL_TAE, weights: 'synthetic', seed: 1 }, { threads: 1 });
  try {
    const z = seededTensor([1, 4, 21, 18], 4, 2);
    setTiling(vae, 'off');
    const whole = await vae.decode(z);
    // Window 7 latent units, overlap 2: stride 5, a 5 × 4 grid with clipped last tiles.
    installPlan(vae, 56, 16);
    const blended = await vae.decode(z);
    assert.ok(difference(blended, whole).maxAbs > 1e-3, 'blended tiles differ from the whole decode');
    const model = vae.decoderModel();
    // Tiny TAE, one block per stage: conv + 3 = 4 rows → 8 + 1 + 3 = 12 → 24 + 4 = 28 → 56 + 1 + 3 + 1 = 61 rows at 8x.
    assert.deepEqual(exactTilingHalo(model), { rows: 8, cols: 8 });
    vae.tiledDecode = exactTiledDecode(vae, vae.runner, model);
    const events: number[] = [];
    const exact = await vae.decode(z, { onProgress: (e) => events.push(e.tilesDone) });
    assert.deepEqual(exact.dims, whole.dims);
    assert.ok(difference(exact, whole).maxAbs <= 1e-4, `max abs ${difference(exact, whole).maxAbs}`);
    assert.deepEqual(
      events,
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  } finally {
    await vae.dispose();
  }
});

test('halo-exact tiles are refused on graphs with GroupNorm or attention, naming the op', async () => {
  const cases: [string, RawConfig, RegExp][] = [
    [
      'autoencoder-kl',
      { block_out_channels: [16, 32], norm_num_groups: 8, layers_per_block: 1 },
      /decoder\.mid_block\.resnets\.0\.norm1 \(GroupNorm[^;]*;.*decoder\.mid_block\.attentions\.0 \(Attention/,
    ],
    ['tae', { ...LOCAL_TAE, use_midblock_gn: true }, /3\.pool\.1 \(GroupNorm/],
  ];
  for (const [family, config, named] of cases) {
    const vae = await loadVae({ family, config, weights: 'synthetic', seed: 1 }, { threads: 1 });
    try {
      assert.throws(
        () => exactTiledDecode(vae, vae.runner, vae.decoderModel()),
        (e: unknown) => e instanceof DistVaeError && e.code === 'UNSUPPORTED' && named.test(e.message) && e.reasons.length > 0,
      );
    } finally {
      await vae.dispose();
    }
  }
});
