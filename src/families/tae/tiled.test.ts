// Tiled TAE decode through the public path (loadVae with synthetic weights, the planner's
// tileShapePlan / tileOverlapPlan / setTiling, vae.decode) against a plain, non-streaming
// float64 version of the docs/design.md §3 loop: tiles at range(0, L, stride) decoded alone by the
// reference decoder, blended in place in raster order (blend_v before blend_h), cropped to the
// stride, concatenated and sliced. Tiny configs, with and without the nonlocal pool blocks
// (which make every tile's GroupNorm statistics its own, in both paths).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { assertMatchesReference } from '../../graph/testing/compare.js';
import { seededTensor } from '../../tensor.js';
import * as ref from '../../graph/testing/reference-ops.js';
import type { RefTensor } from '../../graph/testing/reference-ops.js';
import { setTiling, tileOverlapPlan, tileShapePlan } from '../../plan/planner.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { tae } from './spec.js';
import { taeRuntime } from './runtime.js';
import type { RawConfig, Size2 } from '../types.js';
import { referenceArch, referenceDecode } from './testing/reference.js';
import { TAE_SMALL } from '../testing/config-files.js';

const R = 8;

const plain: RawConfig = { ...TAE_SMALL, decoder_block_out_channels: [4, 4, 4, 4], encoder_block_out_channels: [4, 4, 4, 4] };
const pool: RawConfig = { ...plain, use_midblock_gn: true };

/** b[y] = a[a.extent − e + y]·(1 − y/e) + b[y]·(y/e) for y < e = min(a.extent, b.extent, E), in place on b, along `axis`. */
function blend(a: RefTensor, b: RefTensor, extent: number, axis: 2 | 3): void {
  const e = Math.min(a.dims[axis]!, b.dims[axis]!, extent);
  const [n, c, bh, bw] = b.dims as [number, number, number, number];
  const [, , ah, aw] = a.dims as [number, number, number, number];
  for (let p = 0; p < n * c; p++) {
    for (let y = 0; y < bh; y++) {
      for (let x = 0; x < bw; x++) {
        const t = axis === 2 ? y : x;
        if (t >= e) continue;
        const from = axis === 2 ? (p * ah + ah - e + y) * aw + x : (p * ah + y) * aw + aw - e + x;
        b.data[(p * bh + y) * bw + x] = a.data[from]! * (1 - t / e) + b.data[(p * bh + y) * bw + x]! * (t / e);
      }
    }
  }
}

function simpleTiledDecode(
  weights: ReadonlyMap<string, { dims: readonly number[]; data: Float32Array }>,
  raw: RawConfig,
  z: RefTensor,
  window: Size2,
  overlap: Size2,
): RefTensor {
  const arch = referenceArch(raw, 'decoder');
  const [, , h, w] = z.dims as number[];
  const stride = { height: (window.height - overlap.height) / R, width: (window.width - overlap.width) / R };
  const rows: RefTensor[][] = [];
  for (let i = 0; i < h!; i += stride.height) {
    const row: RefTensor[] = [];
    for (let j = 0; j < w!; j += stride.width) {
      const tile = ref.slice(ref.slice(z, 2, i, Math.min(i + window.height / R, h!)), 3, j, Math.min(j + window.width / R, w!));
      row.push(referenceDecode(weights, arch, tile));
    }
    rows.push(row);
  }
  const keep = { height: stride.height * R, width: stride.width * R };
  const resultRows = rows.map((row, i) =>
    ref.concat(
      row.map((tile, j) => {
        if (i > 0) blend(rows[i - 1]![j]!, tile, overlap.height, 2);
        if (j > 0) blend(row[j - 1]!, tile, overlap.width, 3);
        return ref.slice(ref.slice(tile, 2, 0, Math.min(keep.height, tile.dims[2]!)), 3, 0, Math.min(keep.width, tile.dims[3]!));
      }),
      3,
    ),
  );
  const assembled = ref.concat(resultRows, 2);
  return ref.slice(ref.slice(assembled, 2, 0, h! * R), 3, 0, w! * R);
}

const CASES: { name: string; raw: RawConfig; latent: [number, number]; window: Size2; overlap: Size2 }[] = [
  {
    name: 'plain, 3x4 tiles with clipped edges',
    raw: plain,
    latent: [6, 7],
    window: { height: 32, width: 32 },
    overlap: { height: 16, width: 16 },
  },
  {
    name: 'pool blocks, rectangular window and unequal overlaps',
    raw: pool,
    latent: [5, 9],
    window: { height: 24, width: 40 },
    overlap: { height: 8, width: 16 },
  },
  {
    name: 'pool blocks, overlap above half the window (stride 1)',
    raw: pool,
    latent: [4, 4],
    window: { height: 24, width: 24 },
    overlap: { height: 16, width: 16 },
  },
];

for (const c of CASES) {
  test(`tiled decode through loadVae and the planner equals the simple float64 tile loop: ${c.name}`, async () => {
    const seed = 21;
    const vae = await loadVae({ family: 'tae', config: c.raw, weights: 'synthetic', seed }, { threads: 1 });
    try {
      const sampleShape = { height: c.latent[0] * R, width: c.latent[1] * R };
      const shape = tileShapePlan(vae, c.window.height, c.window.width, { sampleShape });
      assert.ok(shape, 'window accepted');
      setTiling(vae, shape);
      const overlap = tileOverlapPlan(vae, c.overlap.height, c.overlap.width, { sampleShape });
      assert.ok(overlap, 'overlap accepted');
      setTiling(vae, overlap);
      let tiles = 0;
      const z = seededTensor([1, 4, ...c.latent], 17, 2.5);
      const out = await vae.decode(z, { onProgress: (e) => (tiles = e.tilesTotal) });
      assert.ok(tiles > 1, `several tiles (${tiles})`);
      const weights = syntheticWeights(taeRuntime.decoderParams(tae.resolveConfig(c.raw)), seed);
      assertMatchesReference(out, simpleTiledDecode(weights, c.raw, ref.toRef(z), c.window, c.overlap), c.name);
    } finally {
      await vae.dispose();
    }
  });
}

test('the family default plan (512 / 128 px) installs on a loaded TAE; a latent within the window decodes whole', async () => {
  const vae = await loadVae({ family: 'tae', config: plain, weights: 'synthetic', seed: 1 }, { threads: 1 });
  try {
    setTiling(vae);
    assert.deepEqual(
      [vae.tiling.enabled, vae.tiling.window, vae.tiling.overlap],
      [true, { height: 512, width: 512 }, { height: 128, width: 128 }],
    );
    let tiles = 0;
    await vae.decode(seededTensor([1, 4, 3, 5], 2), { onProgress: (e) => (tiles = e.tilesTotal) });
    assert.equal(tiles, 1);
  } finally {
    await vae.dispose();
  }
});
