// Output that turns non-finite fails loudly on every decode path, with NON_FINITE_OUTPUT naming
// the piece (whole decode, temporal chunk, tile, band, core, encode): latents near float32's
// limit (finite, so accepted) drive tiny synthetic decoders to ±Infinity and NaN.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { decodeToBands } from '../decode/engine.js';
import { loadVae, type Vae } from '../decode/vae.js';
import { loadEncoder } from '../encode/encoder.js';
import { DistVaeError } from '../errors.js';
import { TAE_SMALL } from '../families/testing/config-files.js';
import { setTiling, tileFramePlan } from '../plan/planner.js';
import { localGroup } from '../ranks/local/index.js';
import { installPlan, loadTinyVae, seededLatent } from '../ranks/testing/tiny-vae.js';
import { seededTensor, type Tensor } from '../tensor.js';
import { DIFFUSERS_WEIGHTS_FILE, readVaeSource } from '../sources/vae-source.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { useStrategy } from './index.js';

const HUGE = 3e38;
const group = localGroup({ ranks: 2, isolation: 'thread', threadsPerRank: 1 });
after(() => group.close());
const dir = mkdtempSync(join(tmpdir(), 'distvae-non-finite-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** `z` with every channel of latent rows [y0, y1) × cols [x0, x1) (of the last two axes) set near float32's limit. */
function poisoned(z: Tensor, y0: number, y1: number, x0: number, x1: number): Tensor {
  const [h, w] = z.dims.slice(-2) as [number, number];
  const data = Float32Array.from(z.data);
  for (let p = 0; p < data.length / (h * w); p++)
    for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) data[(p * h + y) * w + x] = HUGE;
  return { dims: z.dims, data };
}

async function rejectsNonFinite(run: Promise<unknown>, names: RegExp): Promise<DistVaeError> {
  let error: unknown;
  await run.then(
    () => assert.fail('the decode succeeded'),
    (e: unknown) => (error = e),
  );
  assert.ok(error instanceof DistVaeError, String(error));
  assert.equal(error.code, 'NON_FINITE_OUTPUT', error.message);
  assert.match(error.message, names);
  return error;
}

async function withVae(run: (vae: Vae) => Promise<void>, vae?: Vae): Promise<void> {
  const v = vae ?? (await loadTinyVae());
  try {
    await run(v);
  } finally {
    await v.dispose();
  }
}

// The last tile of a 3 × 3 grid (latent 40 × 56, window 32 px = 16 latent, overlap 8 px) holds the poisoned corner only.
const TILED_Z = poisoned(seededLatent(40, 56), 36, 40, 52, 56);
const POSITION = /at \(b, c, y, x\) = \(\d+, \d+, \d+, \d+\)/;

test('whole decode, and the streamed writer path of it', () =>
  withVae(async (vae) => {
    const z = poisoned(seededLatent(8, 8), 0, 8, 0, 8);
    await rejectsNonFinite(vae.decode(z), /^the whole decode came out non-finite: NaN/);
    await rejectsNonFinite(
      decodeToBands(vae, z, () => assert.fail('a band was handed on')),
      /^the whole decode came out/,
    );
  }));

test('tiled on one rank: the poisoned tile is named, and no band after it is handed on', () =>
  withVae(async (vae) => {
    installPlan(vae, [32, 32], [8, 8]);
    const e = await rejectsNonFinite(vae.decode(TILED_Z), /^tile (\d+) came out/);
    assert.notEqual(/^tile (\d+)/.exec(e.message)![1], '0');
    assert.match(e.message, POSITION);
    await rejectsNonFinite(
      decodeToBands(vae, TILED_Z, () => undefined),
      /^tile [1-9]\d* came out/,
    );
  }));

test('tiled on a rank group (raw tiles and finalised crops): the tile and its rank are named', () =>
  withVae(async (vae) => {
    installPlan(vae, [32, 32], [8, 8]);
    useStrategy(vae, 'tile', group);
    await rejectsNonFinite(vae.decode(TILED_Z), /^tile [1-9]\d* \(rank \d\) came out non-finite/);
    await rejectsNonFinite(
      decodeToBands(vae, TILED_Z, () => undefined),
      /^tile [1-9]\d* \(rank \d\) came out/,
    );
    // Overlap above half the window: ranks send raw tiles, assembled in raster order here.
    installPlan(vae, [16, 16], [12, 10]);
    await rejectsNonFinite(vae.decode(poisoned(seededLatent(14, 17), 12, 14, 15, 17)), /^tile [1-9]\d* \(rank \d\) came out/);
  }));

test('row-sharded: the band and its rank are named, the position in output rows', () =>
  withVae(async (vae) => {
    useStrategy(vae, 'shard', group);
    const e = await rejectsNonFinite(
      vae.decode(poisoned(seededLatent(16, 8), 12, 16, 0, 8)),
      /^band \d \(rank \d, latent rows \d+\.\.\d+\) came out/,
    );
    assert.match(e.message, /of the output/);
  }));

test('halo-exact tiles, local (the page runs this one) and on a rank group: the tile is named, the position in output rows', async () => {
  // TAE squashes its latents (tanh), so its weights overflow instead: finite, near float32's limit.
  const source = { family: 'tae', config: TAE_SMALL, weights: 'synthetic' as const, seed: 1 };
  const { weights } = await readVaeSource(source, 'decoder');
  const folder = join(dir, 'tae-overflow');
  mkdirSync(folder);
  writeFileSync(join(folder, 'config.json'), JSON.stringify(TAE_SMALL));
  writeSafetensors(
    join(folder, DIFFUSERS_WEIGHTS_FILE),
    new Map([...weights].map(([k, t]) => [k, { dims: t.dims, data: new Float32Array(t.data.length).fill(HUGE) }])),
  );
  const tae = await loadVae(folder, { threads: 1 });
  await withVae(async (vae) => {
    // TAE: 8× spatial; a 64 px window is 8 latent rows, so the 16 × 16 latent is a 2 × 2 grid.
    installPlan(vae, [64, 64], [0, 0]);
    const z = seededTensor([1, 4, 16, 16], 3);
    useStrategy(vae, 'exact-tile');
    await rejectsNonFinite(vae.decode(z), /^tile \d came out non-finite: .* of the output/);
    useStrategy(vae, 'exact-tile', group);
    await rejectsNonFinite(vae.decode(z), /^tile \d \(rank \d\) came out non-finite: .* of the output/);
  }, tae);
});

test('temporally chunked: the chunk is named with its (b, c, f, y, x)', async () => {
  const hunyuan = {
    block_out_channels: [8, 16, 16],
    layers_per_block: 1,
    norm_num_groups: 4,
    latent_channels: 4,
    spatial_compression_ratio: 4,
  };
  const video = await loadVae({ family: 'hunyuan-video', config: hunyuan, weights: 'synthetic', seed: 5 }, { threads: 1 });
  await withVae(async (vae) => {
    setTiling(vae, tileFramePlan(vae, { window: 8, overlap: 0 })!);
    // Only the last latent frame is poisoned: a causal decoder keeps the first chunk finite.
    const z = seededTensor([1, 4, 6, 3, 3], 21);
    const data = Float32Array.from(z.data);
    for (let c = 0; c < 4; c++) data.fill(HUGE, (c * 6 + 5) * 9, (c * 6 + 6) * 9);
    await rejectsNonFinite(vae.decode({ dims: z.dims, data }), /^temporal chunk [1-9]\d* came out non-finite: .* at \(b, c, f, y, x\) = /);
  }, video);
});

test('encode: latents that come out non-finite fail the encode', async () => {
  const encoder = await loadEncoder({ family: 'tae', config: TAE_SMALL, weights: 'synthetic', seed: 2 }, { threads: 1 });
  try {
    const image = seededTensor([1, 3, 16, 16], 1, 0.5);
    image.data.fill(HUGE);
    await rejectsNonFinite(encoder.encode(image), /^the encode came out non-finite/);
  } finally {
    await encoder.dispose();
  }
});
