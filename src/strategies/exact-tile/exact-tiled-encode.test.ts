// Halo-exact tiles of encoders: on a local encoder (a tiny TAESD-style graph without pool
// blocks) the encode grid's tiles encoded with the analysed halo and cropped equal the whole
// encode — in this process and dealt to 2 thread ranks — while the same plan's blended tiles do
// not (so the comparison can fail); encoders with GroupNorm (the TAEF2 pool) or attention (a KL
// encoder) are refused with the op named.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadEncoder } from '../../encode/encoder.js';
import { DistVaeError } from '../../errors.js';
import { TAE_SMALL } from '../../families/testing/config-files.js';
import { difference } from '../../graph/testing/compare.js';
import { setTiling } from '../../plan/planner.js';
import { localGroup } from '../../ranks/local/index.js';
import { seededTensor } from '../../tensor.js';
import { useStrategy } from '../index.js';
import { exactTilingHalo } from './halo.js';

const group = localGroup({ ranks: 2, isolation: 'thread', threadsPerRank: 1 });
after(() => group.close());

test('halo-exact encoder tiles reproduce the whole encode of a local encoder, here and on 2 ranks; blended tiles do not', async () => {
  const encoder = await loadEncoder({ family: 'tae', config: TAE_SMALL, weights: 'synthetic', seed: 3 }, { threads: 1 });
  try {
    const image = seededTensor([1, 3, 168, 144], 2, 0.5);
    setTiling(encoder, 'off');
    const whole = await encoder.encode(image);
    // Window 56 px (7 latent units), overlap 16 px: stride 5 latent units, a 5 × 4 grid with clipped last tiles.
    setTiling(encoder, { window: { height: 56, width: 56 }, overlap: { height: 16, width: 16 } });
    const blended = await encoder.encode(image);
    assert.ok(difference(blended, whole).maxAbs > 1e-3, 'blended tiles differ from the whole encode');
    // conv 1 + block 3 = 4 rows at 1x → ⌈5/2⌉ + 3 = 6 at 1/2 → 4 + 3 = 7 at 1/4 → 4 + 3 + 1 = 8 at 1/8: 8 latent rows (64 px).
    assert.deepEqual(exactTilingHalo(encoder.encoderModel()), { rows: 8, cols: 8 });
    assert.equal(useStrategy(encoder, 'exact-tile', null), null);
    const here = await encoder.encode(image);
    assert.deepEqual(here.dims, whole.dims);
    assert.ok(difference(here, whole).maxAbs <= 1e-4, `here: max abs ${difference(here, whole).maxAbs}`);
    const report = useStrategy(encoder, 'exact-tile', group)!;
    const ranked = await encoder.encode(image);
    assert.ok(difference(ranked, whole).maxAbs <= 1e-4, `2 ranks: max abs ${difference(ranked, whole).maxAbs}`);
    assert.deepEqual(
      report
        .ranks()
        .flatMap((r) => r.tiles)
        .sort((a, b) => a - b),
      Array.from({ length: 20 }, (_, i) => i),
    );
    assert.ok(report.notes().some((n) => /halo of 8x8 latent units/.test(n)));
  } finally {
    useStrategy(encoder, 'tile', null);
    await encoder.dispose();
  }
});

test('encoders with nonlocal ops are refused by name: the TAEF2 GroupNorm pool, a KL encoder', async () => {
  const pooled = await loadEncoder(
    { family: 'tae', config: { ...TAE_SMALL, use_midblock_gn: true }, weights: 'synthetic', seed: 3 },
    { threads: 1 },
  );
  const kl = await loadEncoder(
    {
      config: { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], norm_num_groups: 4, latent_channels: 4 },
      weights: 'synthetic',
      seed: 3,
    },
    { threads: 1 },
  );
  try {
    for (const [encoder, op] of [
      [pooled, /GroupNorm/],
      [kl, /GroupNorm|Attention/],
    ] as const) {
      for (const g of [null, group]) {
        assert.throws(
          () => useStrategy(encoder, 'exact-tile', g),
          (e: unknown) =>
            e instanceof DistVaeError && e.code === 'UNSUPPORTED' && /the encoder has nonlocal ops/.test(e.message) && op.test(e.message),
        );
      }
    }
  } finally {
    await pooled.dispose();
    await kl.dispose();
  }
});
