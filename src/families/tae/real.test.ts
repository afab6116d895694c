// The trained TAEF2 pair in <repo root>/../shared/models/taef2 (skipped when absent): the
// decoder against the golden output of madebyollin's taesd.py (testing/goldens/taef2/README.md), the
// config read from the real files, and a photo round trip decode(encode(photo)) ≥ 30 dB PSNR,
// on a 256 × 512 crop (dog and foliage) of ../shared/data/photo-2048x768.jpg to keep it fast.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sliceLatent } from '../../decode/latents.js';
import { loadVae } from '../../decode/vae.js';
import { loadEncoder } from '../../encode/encoder.js';
import { DistVaeError } from '../../errors.js';
import { readImage, sampleToImage } from '../../io/image.js';
import { readNpy } from '../../io/npy.js';
import { maxAbsDiff, psnr } from '../../io/quality.js';
import { readWeights } from '../../sources/weights-file.js';
import { tae } from './spec.js';
import { taeConfigFromWeights } from './runtime.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const SHARED = join(HERE, '../../../../shared');
const DECODER = join(SHARED, 'models/taef2/taef2_decoder.pth');
const ENCODER = join(SHARED, 'models/taef2/taef2_encoder.pth');
const PHOTO = join(SHARED, 'data/photo-2048x768.jpg');
const GOLDEN = join(HERE, '../testing/goldens/taef2');

function present(t: TestContext, ...paths: string[]): boolean {
  const missing = paths.filter((p) => !existsSync(p));
  if (missing.length > 0) t.skip(`real TAEF2 data absent: ${missing.join(', ')}`);
  return missing.length === 0;
}

test('the real TAEF2 decoder reproduces taesd.py on the golden latents', async (t) => {
  if (!present(t, DECODER)) return;
  const vae = await loadVae(DECODER, { family: 'tae', threads: 2 });
  try {
    const z = readNpy(join(GOLDEN, 'z.npy'));
    const expected = readNpy(join(GOLDEN, 'taef2_ref.npy'));
    const out = await vae.decode(z);
    assert.deepEqual(out.dims, expected.dims);
    const maxAbs = maxAbsDiff(out, expected);
    t.diagnostic(`max |ours - taesd.py| = ${maxAbs.toExponential(3)} over ${expected.data.length} values`);
    assert.ok(maxAbs <= 1e-4, `max abs ${maxAbs}`);
  } finally {
    await vae.dispose();
  }
});

test('the real TAEF2 files imply variant taef2 (32 latent channels, pool blocks, madebyollin keys); each half refuses the other', async (t) => {
  if (!present(t, DECODER, ENCODER)) return;
  const expected = { variant: 'taef2', latent_channels: 32, use_midblock_gn: true, key_layout: 'madebyollin' };
  assert.deepEqual(taeConfigFromWeights(await readWeights(DECODER), 'decoder'), expected);
  assert.deepEqual(taeConfigFromWeights(await readWeights(ENCODER), 'encoder'), expected);
  await assert.rejects(
    loadVae(ENCODER, { family: 'tae' }),
    (e: unknown) =>
      e instanceof DistVaeError &&
      e.code === 'WEIGHTS_MISMATCH' &&
      /no TAE decoder.*look like a TAE encoder.*distvae encode/.test(e.message),
  );
  await assert.rejects(
    loadEncoder(DECODER, { family: 'tae' }),
    (e: unknown) => e instanceof DistVaeError && e.code === 'WEIGHTS_MISMATCH' && /no TAE encoder.*look like a TAE decoder/.test(e.message),
  );
});

test('the trained TAEF2 pair round-trips a photo: decode(encode(photo)) PSNR >= 30 dB', async (t) => {
  if (!present(t, DECODER, ENCODER, PHOTO)) return;
  const photo = sliceLatent(readImage(PHOTO), { y0: 64, y1: 320, x0: 64, x1: 576 });
  const encoder = await loadEncoder(ENCODER, { family: 'tae', threads: 2 });
  const vae = await loadVae(DECODER, { family: 'tae', threads: 2 });
  try {
    const latents = await encoder.encode(photo);
    assert.deepEqual(latents.dims, [1, 32, 32, 64]);
    const out = await vae.decode(latents);
    assert.deepEqual(out.dims, photo.dims);
    // docs/design.md §9: PSNR in float on the mapped image (tae: clamp(x, 0, 1)).
    const db = psnr(sampleToImage(out, tae.sampleRange), photo);
    t.diagnostic(`PSNR ${db.toFixed(2)} dB on the 256x512 crop at (64, 64)`);
    assert.ok(db >= 30, `PSNR ${db} dB`);
  } finally {
    await encoder.dispose();
    await vae.dispose();
  }
});
