// A long `decodeFiles` run (the library side of `decode --out-dir`) must not grow with the number
// of files: the short version of bench/soak.ts's out-dir case. After each file, with a full GC,
// the same handles are open, the caller's signal carries no listener the run added, the heap has
// not grown, and the latents decoded (or still to come) are not held: a run over 8 files holds
// what a run over 2 does.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { writeNpy } from '../io/npy.js';
import { floorGrowth, grownResources, retained, type Retained } from '../ranks/testing/retained.js';
import { seededLatent, TINY_KL } from '../ranks/testing/tiny-vae.js';
import { decodeFiles } from './decode-files.js';
import type { DecodeFilesOptions } from './options.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-soak-session-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const VAE: DecodeFilesOptions['vae'] = { family: 'autoencoder-kl', config: TINY_KL, weights: 'synthetic', seed: 0 };

/** A folder of `count` latent files of h × w (4 channels, float32), distinct seeds. */
function latentFolder(name: string, count: number, height: number, width: number): string {
  const folder = join(dir, name);
  mkdirSync(folder);
  for (let i = 0; i < count; i++) writeNpy(join(folder, `z${String(i).padStart(2, '0')}.npy`), seededLatent(height, width, i + 1));
  return folder;
}

/** Decodes every latent of `folder` into PNGs (tiled: 32 px windows), a snapshot taken as each file is reported. */
async function decodeFolder(folder: string, signal: AbortSignal): Promise<Retained[]> {
  const outDir = `${folder}-out`;
  mkdirSync(outDir);
  const snapshots: Retained[] = [];
  const files = await decodeFiles(
    { vae: VAE, latents: folder, outDir, window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 }, threads: 1 },
    { signal, onFile: () => snapshots.push(retained(signal)) },
  );
  assert.equal(files.length, snapshots.length);
  assert.equal(readdirSync(outDir).length, files.length);
  return snapshots;
}

test('a decode over 10 latent files does not grow: handles, abort listeners and heap after GC stay as after the 3rd', async (t) => {
  const signal = new AbortController().signal;
  const before = retained(signal);
  const snapshots = await decodeFolder(latentFolder('ten', 10, 32, 32), signal);
  const [third, last] = [snapshots[2]!, snapshots[9]!];
  assert.deepEqual(grownResources(third, last), [], 'handles and timers opened per file');
  assert.deepEqual(
    snapshots.map((s) => s.abortListeners),
    snapshots.map(() => snapshots[0]!.abortListeners),
    'abort listeners added per file',
  );
  // A file's report is kept (the run returns them: about 1.5 KiB each) but nothing of its decode.
  // The heap after a full GC still warms up over the first files (compiled code: +250–400 KiB
  // from the 3rd file to the 10th here); the buffers' floor does not move, and a latent (16 KiB)
  // or an image (48 KiB) kept per file would raise it.
  const grown = { heap: floorGrowth(snapshots, 'heapBytes', 2, 3), buffers: floorGrowth(snapshots, 'arrayBufferBytes', 2, 3) };
  t.diagnostic(`after GC, heap ${snapshots.map((s) => (s.heapBytes / 1024).toFixed(0)).join(' ')} KiB; buffers +${grown.buffers} bytes`);
  assert.ok(grown.heap < 2 * 1024 * 1024, `the heap grew by ${(grown.heap / 1024).toFixed(0)} KiB from the 3rd file to the 10th`);
  assert.ok(grown.buffers < 32 * 1024, `buffers grew by ${(grown.buffers / 1024).toFixed(0)} KiB from the 3rd file to the 10th`);
  const after = retained(signal);
  assert.equal(after.abortListeners, before.abortListeners, 'a listener outlived the run');
  assert.deepEqual(after.resources, before.resources, 'a handle outlived the run (its ranks are closed)');
});

test('latent files are read one at a time: a run over 8 files holds what a run over 2 does (the floor over its files)', async (t) => {
  // 64 KiB a latent, so the 6 more files held by a run that kept them all would show as 384 KiB.
  const latentBytes = 4 * 64 * 64 * 4;
  const signal = new AbortController().signal;
  const two = await decodeFolder(latentFolder('two', 2, 64, 64), signal);
  const eight = await decodeFolder(latentFolder('eight', 8, 64, 64), signal);
  // The floor over each run's snapshots: a run that kept every latent holds them at every file, while
  // a transient buffer in flight at one snapshot (CI once saw 2.7 MiB after a first file) does not set it.
  const floor = (snapshots: Retained[]) => Math.min(...snapshots.map((x) => x.arrayBufferBytes));
  const extra = floor(eight) - floor(two);
  t.diagnostic(`floor of the buffers over the files: ${floor(two)} (2 files), ${floor(eight)} (8 files)`);
  assert.ok(
    extra < 2 * latentBytes,
    `a run over 8 files holds ${(extra / 1024).toFixed(0)} KiB of buffers more than a run over 2 at every file (a latent is ${latentBytes / 1024} KiB)`,
  );
});
