// Test helper: a family loaded as users hold it — a diffusers VAE folder whose config.json
// `_class_name` picks the family, and the `vae/` component of a pipeline in the local Hugging Face
// cache, by repo id, with an fp16 `--variant` — each decoding bitwise as the same weights given in
// memory do. One home for the two tests every diffusers family repeats; a family passes its config,
// checkpoint extras and Hub names, and adds tests of its own layouts with what this returns.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { assertSameBits } from '../../ranks/testing/assertions.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from '../../weights/halfprecision.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { resolveFamilyConfig } from '../registry.js';
import type { FamilyRuntime } from '../runtime-types.js';
import type { FamilySpec, RawConfig } from '../types.js';

/** What one family's sources tests differ in. */
export interface SourcesCase {
  readonly spec: FamilySpec;
  readonly runtime: FamilyRuntime;
  /** The tiny config.json (with `_class_name`) the folder and the Hub cache hold. */
  readonly config: RawConfig;
  /** Tensors a full checkpoint carries beside the decoder (never read by a decode), and how the test title names them. */
  readonly extras: readonly [string, Tensor][];
  readonly extrasName: string;
  /** Dims of the latent decoded (seeded with 7). */
  readonly latentDims: readonly number[];
  /** Dims the folder's decode must have, where the family's test pins them. */
  readonly outDims?: readonly number[];
  /** The pipeline in the Hub cache: repo id and model_index.json's classes. */
  readonly hub: { readonly repo: string; readonly pipeline: string; readonly vae: string; readonly transformer: string };
}

/** What a family's own sources tests reuse. */
export interface SourcesFixture {
  /** A temp folder removed after the test file. */
  readonly root: string;
  /** The synthetic decoder weights (seed 4) every source carries. */
  readonly decoder: ReadonlyMap<string, Tensor>;
  /** The decoder run on weights held in memory (no source, no binding from a file). */
  inMemory(weights: ReadonlyMap<string, Tensor>): Promise<Tensor>;
  /** Loads `source` (one thread), decodes the latent once and names the family it picked. */
  decodeOf(source: Parameters<typeof loadVae>[0]): Promise<{ family: string; out: Tensor }>;
}

/** Registers the diffusers-folder and Hub-cache tests for `c` (call at a test file's top level). */
export function sourcesTests(c: SourcesCase): SourcesFixture {
  const name = c.spec.name;
  const root = mkdtempSync(join(tmpdir(), `distvae-${name}-`));
  after(() => rmSync(root, { recursive: true, force: true }));

  const config = resolveFamilyConfig(c.spec, c.config);
  const decoder = syntheticWeights(c.runtime.decoderParams(config), 4);
  const z = seededTensor([...c.latentDims], 7);
  const full = (): Map<string, Tensor> => new Map([...decoder, ...c.extras]);

  async function inMemory(weights: ReadonlyMap<string, Tensor>): Promise<Tensor> {
    const runner = await c.runtime.createTileRunner(config, weights, { intraOpThreads: 1 });
    try {
      return await runner.decode(z);
    } finally {
      await runner.dispose();
    }
  }

  async function decodeOf(source: Parameters<typeof loadVae>[0]): Promise<{ family: string; out: Tensor }> {
    const vae = await loadVae(source, { threads: 1 });
    try {
      return { family: vae.family.name, out: await vae.decode(z) };
    } finally {
      await vae.dispose();
    }
  }

  test(`a diffusers folder: _class_name picks ${name}, ${c.extrasName} are ignored, the decode is the in-memory one`, async () => {
    const dir = join(root, 'vae-folder');
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), JSON.stringify(c.config));
    writeSafetensors(join(dir, 'diffusion_pytorch_model.safetensors'), full());
    const fromFolder = await decodeOf(dir);
    assert.equal(fromFolder.family, name);
    if (c.outDims !== undefined) assert.deepEqual(fromFolder.out.dims, c.outDims);
    assertSameBits(fromFolder.out, await inMemory(decoder), 'folder vs in-memory weights');
  });

  test('a pipeline in the Hub cache, by repo id with --variant fp16: the vae/ component decodes with the half-rounded weights', async () => {
    const cache = join(root, 'hub');
    const repo = join(cache, `models--${c.hub.repo.replace('/', '--')}`);
    const commit = 'c0ffee'.padEnd(40, '0');
    const snapshot = join(repo, 'snapshots', commit);
    mkdirSync(join(snapshot, 'vae'), { recursive: true });
    mkdirSync(join(repo, 'blobs'), { recursive: true });
    mkdirSync(join(repo, 'refs'), { recursive: true });
    writeFileSync(join(repo, 'refs', 'main'), commit);
    const modelIndex = { _class_name: c.hub.pipeline, vae: ['diffusers', c.hub.vae], transformer: ['diffusers', c.hub.transformer] };
    const files: [string, (path: string) => void][] = [
      ['model_index.json', (p) => writeFileSync(p, JSON.stringify(modelIndex))],
      ['vae/config.json', (p) => writeFileSync(p, JSON.stringify(c.config))],
      ['vae/diffusion_pytorch_model.fp16.safetensors', (p) => writeSafetensors(p, full(), { dtype: 'F16' })],
    ];
    // As the Hub cache stores them: blobs, and relative symlinks in the snapshot.
    for (const [i, [file, write]] of files.entries()) {
      const blob = join(repo, 'blobs', `blob${i}`);
      write(blob);
      const path = join(snapshot, file);
      symlinkSync(relative(join(path, '..'), blob), path);
    }
    const saved = process.env['HF_HUB_CACHE'];
    process.env['HF_HUB_CACHE'] = cache;
    try {
      const fromHub = await decodeOf({ path: c.hub.repo, variant: 'fp16' });
      assert.equal(fromHub.family, name);
      const half = new Map(
        [...decoder].map(([k, t]) => [k, { dims: t.dims, data: t.data.map((v) => float16BitsToFloat32(float32ToFloat16Bits(v))) }]),
      );
      assertSameBits(fromHub.out, await inMemory(half), 'Hub cache fp16 vs in-memory half-rounded weights');
    } finally {
      if (saved === undefined) delete process.env['HF_HUB_CACHE'];
      else process.env['HF_HUB_CACHE'] = saved;
    }
  });

  return { root, decoder, inMemory, decodeOf };
}
