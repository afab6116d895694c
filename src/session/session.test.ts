// The decode session as a library call: a tiny synthetic VAE's latents decoded into .npy and PNG
// files within a budget, equal to vae.decode's output; refusals of options that cannot mean
// anything, named as the library spells them; an abort through the signal leaves no file.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { isDistVaeError } from '../errors.js';
import { difference } from '../graph/testing/compare.js';
import { readNpy, writeNpy } from '../io/npy.js';
import { setTiling } from '../plan/planner.js';
import { loadTinyVae, seededLatent, TINY_KL } from '../ranks/testing/tiny-vae.js';
import { decodeFiles } from './decode-files.js';
import type { DecodeFilesOptions } from './options.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-session-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const Z = join(dir, 'z.npy');
const latents = seededLatent(9, 12, 4);
writeNpy(Z, latents);
const VAE: DecodeFilesOptions['vae'] = { family: 'autoencoder-kl', config: TINY_KL, weights: 'synthetic', seed: 0 };

test('a whole decode into .npy equals vae.decode, and reports its plan within the budget', async () => {
  const out = join(dir, 'whole.npy');
  const files = await decodeFiles({ vae: VAE, latents: Z, out, full: true, threads: 1, maxMemory: 2 ** 30 });
  assert.equal(files.length, 1);
  const { report } = files[0]!;
  assert.deepEqual(report.files, [out]);
  assert.deepEqual(report.shape, [1, 3, 18, 24]);
  assert.equal(report.memory.budgetBytes, 2 ** 30);
  assert.equal(report.choice?.reason, 'as requested');
  const vae = await loadTinyVae();
  try {
    setTiling(vae, 'off');
    const expected = await vae.decode(latents);
    assert.ok(difference(readNpy(out) as never, expected as never).maxAbs < 1e-5);
  } finally {
    await vae.dispose();
  }
});

test("the memory policy's choice decodes into a PNG, with progress and a report per file", async () => {
  const out = join(dir, 'chosen.png');
  let progress = 0;
  const reported: string[] = [];
  const files = await decodeFiles(
    { vae: VAE, latents: Z, out, threads: 1, maxMemory: 2 ** 30, fallback: false },
    { onProgress: () => progress++, onFile: (f) => reported.push(...f.report.files) },
  );
  assert.ok(existsSync(out));
  assert.deepEqual(reported, [out]);
  assert.ok(progress > 0);
  assert.match(files[0]!.report.choice!.reason, /fits the budget/);
  assert.ok(files[0]!.plan !== null);
});

test('options that cannot mean anything are refused at once, named as the library spells them', async () => {
  await assert.rejects(
    decodeFiles({ vae: VAE, latents: Z, out: join(dir, 'x.npy'), outDir: dir, strategy: 'shard', window: { height: 8, width: 8 } }),
    (e: unknown) =>
      isDistVaeError(e) &&
      e.code === 'INVALID_ARGUMENT' &&
      JSON.stringify(e.reasons?.map((r) => r.field)) === JSON.stringify(['out', 'window']) &&
      /out and outDir are exclusive/.test(e.message),
  );
  await assert.rejects(
    decodeFiles({ vae: VAE, latents: Z, out: join(dir, 'x.npy'), ranks: 0 }),
    /ranks 0 is not an integer in \[1, 1024\]/,
  );
});

test('an abort through the signal stops the decode and leaves no file', async () => {
  const out = join(dir, 'aborted.npy');
  const controller = new AbortController();
  await assert.rejects(
    decodeFiles(
      { vae: VAE, latents: Z, out, threads: 1, window: { height: 8, width: 8 } },
      { signal: controller.signal, onProgress: () => controller.abort() },
    ),
    (e: unknown) => isDistVaeError(e) && e.code === 'ABORTED',
  );
  assert.equal(existsSync(out), false);
});
