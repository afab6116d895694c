// Test helper: a family loaded as users hold it — a diffusers VAE folder whose config.json
// `_class_name` picks the family, and the `vae/` component of a pipeline in the local Hugging Face
// cache, by repo id, with an fp16 `--variant` — each decoding bitwise as the same weights given in
// memory do; and the encoder's side (encoderSourcesTests: the same folder, Hub cache and a
// single file with the family named). One home for the tests every diffusers family repeats; a
// family passes its config, checkpoint extras and Hub names, and adds tests of its own layouts
// with what this returns.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { loadVae } from '../../decode/vae.js';
import { loadEncoder } from '../../encode/encoder.js';
import { setTiling } from '../../plan/planner.js';
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
    writeHubPipeline(cache, c.hub, c.config, full());
    const fromHub = await withHubCache(cache, () => decodeOf({ path: c.hub.repo, variant: 'fp16' }));
    assert.equal(fromHub.family, name);
    assertSameBits(fromHub.out, await inMemory(halfRounded(decoder)), 'Hub cache fp16 vs in-memory half-rounded weights');
  });

  return { root, decoder, inMemory, decodeOf };
}

/**
 * Writes a pipeline into a Hugging Face cache at `cache` as the Hub stores it (blobs, relative
 * symlinks in a snapshot, refs/main): model_index.json, vae/config.json and the vae/ weights as
 * the fp16 variant.
 */
function writeHubPipeline(cache: string, hub: SourcesCase['hub'], config: RawConfig, weights: ReadonlyMap<string, Tensor>): void {
  const repo = join(cache, `models--${hub.repo.replace('/', '--')}`);
  const commit = 'c0ffee'.padEnd(40, '0');
  const snapshot = join(repo, 'snapshots', commit);
  mkdirSync(join(snapshot, 'vae'), { recursive: true });
  mkdirSync(join(repo, 'blobs'), { recursive: true });
  mkdirSync(join(repo, 'refs'), { recursive: true });
  writeFileSync(join(repo, 'refs', 'main'), commit);
  const modelIndex = { _class_name: hub.pipeline, vae: ['diffusers', hub.vae], transformer: ['diffusers', hub.transformer] };
  const files: [string, (path: string) => void][] = [
    ['model_index.json', (p) => writeFileSync(p, JSON.stringify(modelIndex))],
    ['vae/config.json', (p) => writeFileSync(p, JSON.stringify(config))],
    ['vae/diffusion_pytorch_model.fp16.safetensors', (p) => writeSafetensors(p, weights, { dtype: 'F16' })],
  ];
  // As the Hub cache stores them: blobs, and relative symlinks in the snapshot.
  for (const [i, [file, write]] of files.entries()) {
    const blob = join(repo, 'blobs', `blob${i}`);
    write(blob);
    const path = join(snapshot, file);
    symlinkSync(relative(join(path, '..'), blob), path);
  }
}

/** Runs `body` with HF_HUB_CACHE set to `cache`, restoring it after. */
async function withHubCache<T>(cache: string, body: () => Promise<T>): Promise<T> {
  const saved = process.env['HF_HUB_CACHE'];
  process.env['HF_HUB_CACHE'] = cache;
  try {
    return await body();
  } finally {
    if (saved === undefined) delete process.env['HF_HUB_CACHE'];
    else process.env['HF_HUB_CACHE'] = saved;
  }
}

/** Weights as an fp16 variant holds them: each value rounded to half precision. */
const halfRounded = (weights: ReadonlyMap<string, Tensor>): Map<string, Tensor> =>
  new Map([...weights].map(([k, t]) => [k, { dims: t.dims, data: t.data.map((v) => float16BitsToFloat32(float32ToFloat16Bits(v))) }]));

/** What one family's encoder sources tests differ in (beside the decoder's SourcesCase). */
export interface EncoderSourcesCase extends Pick<SourcesCase, 'spec' | 'runtime' | 'config' | 'hub'> {
  /** Dims of the input encoded (seeded with 9): (B, C, H, W), or (B, C, F, H, W) for a video encoder. */
  readonly inputDims: readonly number[];
}

/**
 * Registers the encoder's side of the sources tests: a full checkpoint (synthetic decoder and
 * encoder weights, seeds 4 and 5) as a diffusers folder, as a single .safetensors of diffusers
 * keys with the family named, and as the `vae/` component of a pipeline in the Hub cache by repo
 * id with `variant: 'fp16'` — each `loadEncoder` (tiling off: one diffusers `_encode`) bitwise the
 * encoder runner on the same weights held in memory (half-rounded for the fp16 variant).
 */
export function encoderSourcesTests(c: EncoderSourcesCase): void {
  const name = c.spec.name;
  const root = mkdtempSync(join(tmpdir(), `distvae-${name}-encoder-`));
  after(() => rmSync(root, { recursive: true, force: true }));
  const half = c.runtime.encoder!;
  const config = resolveFamilyConfig(c.spec, c.config);
  const encoder = syntheticWeights(half.params(config), 5);
  const full = new Map([...syntheticWeights(c.runtime.decoderParams(config), 4), ...encoder]);
  const x = seededTensor([...c.inputDims], 9);

  async function inMemory(weights: ReadonlyMap<string, Tensor>): Promise<Tensor> {
    const runner = await half.createRunner(config, weights, { intraOpThreads: 1 });
    try {
      return await runner.decode(x);
    } finally {
      await runner.dispose();
    }
  }

  async function encodeOf(source: Parameters<typeof loadEncoder>[0]): Promise<{ family: string; out: Tensor }> {
    const loaded = await loadEncoder(source, { threads: 1 });
    try {
      setTiling(loaded, 'off');
      return { family: loaded.family.name, out: await loaded.encode(x) };
    } finally {
      await loaded.dispose();
    }
  }

  test(`${name} encoder: a diffusers folder, a single file with the family and a Hub-cache pipeline with --variant fp16 encode as in memory`, async () => {
    const folder = join(root, 'vae-folder');
    mkdirSync(folder);
    writeFileSync(join(folder, 'config.json'), JSON.stringify(c.config));
    writeSafetensors(join(folder, 'diffusion_pytorch_model.safetensors'), full);
    const expected = await inMemory(encoder);
    const fromFolder = await encodeOf(folder);
    assert.equal(fromFolder.family, name);
    assertSameBits(fromFolder.out, expected, 'encoder: folder vs in-memory weights');

    const file = join(root, 'single.safetensors');
    writeSafetensors(file, full);
    const single = await encodeOf({ path: file, family: name, config: c.config });
    assert.equal(single.family, name);
    assertSameBits(single.out, expected, 'encoder: single file vs in-memory weights');

    const cache = join(root, 'hub');
    writeHubPipeline(cache, c.hub, c.config, full);
    const fromHub = await withHubCache(cache, () => encodeOf({ path: c.hub.repo, variant: 'fp16' }));
    assert.equal(fromHub.family, name);
    assertSameBits(fromHub.out, await inMemory(halfRounded(encoder)), 'encoder: Hub cache fp16 vs in-memory half-rounded weights');
  });
}
