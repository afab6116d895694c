// Browser tests of the in-browser demo (docs/demo.html) through its automation contract, in
// Debian's Chromium driven by playwright-core, on the site served from 127.0.0.1 (WebGPU needs
// a secure context; Chromium's SwiftShader adapter stands in for a GPU). Each decode the page
// does is compared with the Node decode of the same plan (onnxruntime-node, same graphs):
// - a seeded TAE-architecture decoder on both backends (never needs ../shared);
// - the trained TAEF2 decoder on a latent of a crop of ../shared/data's photo, on both
//   backends, and a photo encoded in the page (skipped when ../shared is absent);
// - on a WebGPU device with WebGPU's default limits and a small cap, a whole decode over the
//   limit is refused with the numbers, and the window chosen for it decodes and matches.
// Sizes are small: SwiftShader runs WebGPU on the CPU.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';
import { loadVae, type Vae } from '../src/decode/vae.js';
import { loadEncoder } from '../src/encode/encoder.js';
import { cropToMultiple } from '../src/encode/image-check.js';
import { taeRuntime } from '../src/families/tae/runtime.js';
import { resolveFamilyConfig } from '../src/families/registry.js';
import { tae } from '../src/families/tae/spec.js';
import { seededTensor } from '../src/tensor.js';
import { encodePng, readImage } from '../src/io/image.js';
import { encodeNpy } from '../src/io/npy.js';
import { maxAbsDiff } from '../src/io/quality.js';
import type { Tensor } from '../src/tensor.js';
import { installWindow } from '../src/memory/device-limits.js';
import { encodeSafetensors } from '../src/weights/safetensors.js';
import { syntheticWeights } from '../src/weights/synthetic.js';
import { buildSite } from './build.js';
import { serveSite } from './serve.js';

const CHROMIUM = '/usr/bin/chromium';
// SwiftShader's WebGPU adapter: Vulkan through SwiftShader, surfaces off (headless).
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--enable-unsafe-webgpu',
  '--enable-features=Vulkan',
  '--use-vulkan=swiftshader',
  '--use-webgpu-adapter=swiftshader',
  '--disable-vulkan-surface',
];
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'test-output/demo');
const SITE = join(OUT, 'site');
const FIXTURES = join(OUT, 'fixtures');
const SHARED = resolve(ROOT, '../shared');
const TAEF2 = join(SHARED, 'models/taef2');
const PHOTO = join(SHARED, 'data/photo-2048x768.jpg');
const TOLERANCE = 1e-3;
const SEED = 7;
const SEEDED_CONFIG = { variant: 'taesd' } as const;
/** SwiftShader decodes slowly under load; a decode may take minutes. */
const DECODE_TIMEOUT_MS = 600_000;

let context: BrowserContext;
let server: Server;
let base: string;
let userDataDir: string;

interface DemoResult {
  backend?: string;
  tiles?: number;
  window?: { height: number; width: number };
  overlap?: { height: number; width: number };
  seconds?: number;
  width?: number;
  height?: number;
  maxTensorBytes?: number;
  limitBytes?: number;
  deviceLimits?: { maxBufferSize: number; maxStorageBufferBindingSize: number };
  error?: string;
  code?: string;
}

before(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the demo's browser tests need Debian's chromium package (CI's .ci/run installs it).`,
    );
  mkdirSync(FIXTURES, { recursive: true });
  await buildSite({ outDir: SITE });
  const config = resolveFamilyConfig(tae, SEEDED_CONFIG);
  writeFileSync(join(FIXTURES, 'seeded-decoder.safetensors'), encodeSafetensors(syntheticWeights(taeRuntime.decoderParams(config), SEED)));
  writeFileSync(join(FIXTURES, 'seeded-latents.npy'), encodeNpy(seededLatents()));
  ({ server, url: base } = await serveSite(SITE, {
    mounts: { '/fixtures/': FIXTURES, ...(existsSync(TAEF2) ? { '/models/taef2/': TAEF2 } : {}) },
  }));
  userDataDir = mkdtempSync(join(tmpdir(), 'distvae-demo-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1100, height: 900 },
  });
});

after(async () => {
  await context?.close();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

/** 4 latent channels, 8 × 16 latent units: a 64 × 128 px image (SwiftShader is slow). */
function seededLatents(): Tensor {
  return seededTensor([1, 4, 8, 16], SEED, 2);
}

/** Opens the demo with these query parameters and run=1; returns the result and the float32 sample. */
async function runDemo(query: Record<string, string>): Promise<{ result: DemoResult; sample: Float32Array | null; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`exception: ${e.message}`));
  page.on('requestfailed', (r) => {
    // The size probe of an HTTP Range source is a HEAD whose (empty) body is never read:
    // Chromium reports it aborted once the response is dropped.
    if (r.method() === 'HEAD' && r.failure()?.errorText === 'net::ERR_ABORTED') return;
    errors.push(`request failed: ${r.method()} ${r.url()} (${r.failure()?.errorText})`);
  });
  try {
    await page.goto(`${base}demo.html?${new URLSearchParams({ ...query, run: '1' })}`, { waitUntil: 'load' });
    await page.waitForFunction(() => ['done', 'error'].includes(document.documentElement.dataset['distvaeState'] ?? ''), undefined, {
      timeout: DECODE_TIMEOUT_MS,
      polling: 500,
    });
    const { result, sample } = await page.evaluate(() => {
      const r = window.distvaeResult as (DemoResult & { sample?: Float32Array }) | undefined;
      const s = r?.sample;
      let b64: string | null = null;
      if (s) {
        const bytes = new Uint8Array(s.buffer, s.byteOffset, s.byteLength);
        let bin = '';
        for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        b64 = btoa(bin);
      }
      const { sample: _s, ...rest } = r ?? {};
      return { result: rest as DemoResult, sample: b64 };
    });
    const canvas = await page.evaluate(() => {
      const c = document.getElementById('distvae-output') as HTMLCanvasElement;
      return { width: c.width, height: c.height };
    });
    if (result.error === undefined)
      assert.deepEqual(canvas, { width: result.width, height: result.height }, 'the image is on the output canvas');
    await page.screenshot({ path: join(OUT, `demo-${query['backend']}-${result.error === undefined ? 'done' : 'error'}.png`) });
    const decoded = sample === null ? null : new Float32Array(Uint8Array.from(Buffer.from(sample, 'base64')).buffer);
    return { result, sample: decoded, errors };
  } finally {
    await page.close();
  }
}

/** The Node decode (onnxruntime-node) of the plan the page reports. */
async function nodeDecode(vae: Vae, latents: Tensor, result: DemoResult): Promise<Tensor> {
  const [h, w] = latents.dims.slice(-2) as [number, number];
  if (result.tiles === 1 && result.window!.height >= h * 8 && result.window!.width >= w * 8) vae.tiling = { ...vae.tiling, enabled: false };
  else installWindow(vae, { height: h, width: w }, result.window!, result.overlap!);
  return vae.decode(latents);
}

function assertMatches(t: TestContext, sample: Float32Array | null, expected: Tensor, what: string): void {
  assert.ok(sample, `${what}: the page returned its sample`);
  assert.equal(sample.length, expected.data.length, `${what}: sample size`);
  const maxAbs = maxAbsDiff({ dims: expected.dims, data: sample }, expected);
  t.diagnostic(`${what}: max |page − node| = ${maxAbs.toExponential(3)}`);
  assert.ok(maxAbs <= TOLERANCE, `${what}: max abs ${maxAbs} > ${TOLERANCE}`);
}

function present(t: TestContext, ...paths: string[]): boolean {
  const missing = paths.filter((p) => !existsSync(p));
  if (missing.length > 0) t.skip(`trained TAEF2 data absent (${missing.join(', ')}): skipped`);
  return missing.length === 0;
}

for (const backend of ['webgpu', 'wasm'] as const) {
  test(
    `seeded TAE decoder on ${backend}: a tiled decode in the page equals the Node decode of the same plan`,
    { timeout: DECODE_TIMEOUT_MS },
    async (t) => {
      const { result, sample, errors } = await runDemo({
        weights: 'fixtures/seeded-decoder.safetensors',
        family: 'tae',
        latents: 'fixtures/seeded-latents.npy',
        window: '64x64',
        overlap: '0x16',
        backend,
      });
      assert.equal(result.error, undefined, `the page decoded: ${result.error}`);
      assert.deepEqual(errors, []);
      assert.equal(result.backend, backend);
      // Columns start at latent 0, 6, 12 (stride 8 − 2): three tiles, the last one 4 wide.
      assert.deepEqual([result.height, result.width, result.tiles], [64, 128, 3]);
      assert.deepEqual(result.window, { height: 64, width: 64 });
      // The first tile (8 × 8 latent) is the largest: 64 channels at 64 × 64 px, float32.
      assert.equal(result.maxTensorBytes, 64 * 64 * 64 * 4);
      t.diagnostic(`${backend}: ${result.tiles} tiles of 64x128 px in ${result.seconds!.toFixed(2)} s (machine under load)`);
      const vae = await loadVae({ family: 'tae', config: SEEDED_CONFIG, weights: 'synthetic', seed: SEED }, { threads: 2 });
      try {
        assertMatches(t, sample, await nodeDecode(vae, seededLatents(), result), backend);
      } finally {
        await vae.dispose();
      }
    },
  );
}

test(
  'WebGPU default limits with a 1 MiB cap: the whole decode is refused with the numbers; the chosen window decodes and matches Node',
  { timeout: DECODE_TIMEOUT_MS },
  async (t) => {
    const query = {
      weights: 'fixtures/seeded-decoder.safetensors',
      family: 'tae',
      latents: 'fixtures/seeded-latents.npy',
      backend: 'webgpu',
      limits: 'default',
      maxBufferMiB: '1',
    };
    const refused = await runDemo({ ...query, mode: 'whole' });
    assert.equal(refused.result.code, 'PLAN_REFUSED');
    // 64 channels × 64 × 128 px × 4 bytes = 2 MiB, over the 1 MiB cap (and within the device's 128 MiB binding limit).
    assert.match(
      refused.result.error!,
      /a whole decode of 64x128 px needs a 2097152-byte \(2\.0 MiB\) tensor .* over the 1048576-byte \(1\.0 MiB\) limit of the WebGPU device \(.*default limits\): maxBufferSize 256\.0 MiB, maxStorageBufferBindingSize 128\.0 MiB, cap 1\.0 MiB; the largest window that fits is 64x64 px/,
    );

    const chosen = await runDemo(query);
    assert.equal(chosen.result.error, undefined, `the chosen plan decoded: ${chosen.result.error}`);
    assert.deepEqual(chosen.result.window, { height: 64, width: 64 });
    assert.deepEqual(chosen.result.overlap, { height: 0, width: 16 });
    assert.ok(chosen.result.maxTensorBytes! <= 2 ** 20, `largest tensor ${chosen.result.maxTensorBytes} within the cap`);
    assert.deepEqual(chosen.result.deviceLimits, { maxBufferSize: 256 * 2 ** 20, maxStorageBufferBindingSize: 128 * 2 ** 20 });
    const vae = await loadVae({ family: 'tae', config: SEEDED_CONFIG, weights: 'synthetic', seed: SEED }, { threads: 2 });
    try {
      assertMatches(t, chosen.sample, await nodeDecode(vae, seededLatents(), chosen.result), 'chosen plan');
    } finally {
      await vae.dispose();
    }
  },
);

/** A 64 × 128 crop of the photo (dog), its PNG (lossless, for the page) and its TAEF2 latent from the Node encoder. */
async function photoFixtures(): Promise<{ crop: Tensor; latents: Tensor }> {
  const photo = readImage(PHOTO);
  const [, , h, w] = photo.dims as [number, number, number, number];
  const ch = 64;
  const cw = 128;
  const y0 = Math.floor(h / 2);
  const x0 = Math.floor(w / 2) - 64;
  const data = new Float32Array(3 * ch * cw);
  for (let c = 0; c < 3; c++)
    for (let y = 0; y < ch; y++)
      data.set(photo.data.subarray((c * h + y0 + y) * w + x0, (c * h + y0 + y) * w + x0 + cw), (c * ch + y) * cw);
  // Whole 8-bit values, so the PNG the page reads holds exactly this image.
  const crop = cropToMultiple({ dims: [1, 3, ch, cw], data: data.map((v) => Math.round(v * 255) / 255) }, 8);
  writeFileSync(join(FIXTURES, 'photo-crop.png'), encodePng(crop.data, 3, ch, cw));
  const encoder = await loadEncoder(join(TAEF2, 'taef2_encoder.pth'), { family: 'tae', threads: 2 });
  try {
    const latents = await encoder.encode(crop);
    writeFileSync(join(FIXTURES, 'photo-latents.npy'), encodeNpy(latents));
    return { crop, latents };
  } finally {
    await encoder.dispose();
  }
}

test(
  'trained TAEF2: a latent of a photo crop decodes in the page on both backends, and a photo encoded in the page, equal to Node',
  { timeout: 3 * DECODE_TIMEOUT_MS },
  async (t) => {
    if (!present(t, join(TAEF2, 'taef2_decoder.pth'), join(TAEF2, 'taef2_encoder.pth'), PHOTO)) return;
    const { crop, latents } = await photoFixtures();
    const vae = await loadVae(join(TAEF2, 'taef2_decoder.pth'), { family: 'tae', threads: 2 });
    try {
      for (const backend of ['webgpu', 'wasm'] as const) {
        const { result, sample } = await runDemo({
          weights: 'models/taef2/taef2_decoder.pth',
          latents: 'fixtures/photo-latents.npy',
          window: '64x64',
          overlap: '0x16',
          backend,
        });
        assert.equal(result.error, undefined, `${backend}: ${result.error}`);
        assert.equal(result.backend, backend);
        assert.deepEqual([result.height, result.width, result.tiles], [64, 128, 3]);
        t.diagnostic(`TAEF2 ${backend}: ${result.tiles} tiles of 64x128 px in ${result.seconds!.toFixed(2)} s (machine under load)`);
        assertMatches(t, sample, await nodeDecode(vae, latents, result), `TAEF2 ${backend}`);
      }
      const encoded = await runDemo({
        weights: 'models/taef2/taef2_decoder.pth',
        image: 'fixtures/photo-crop.png',
        encoder: 'models/taef2/taef2_encoder.pth',
        window: '64x64',
        overlap: '0x16',
        backend: 'wasm',
      });
      assert.equal(encoded.result.error, undefined, `photo in the page: ${encoded.result.error}`);
      const expected = await nodeDecode(vae, latents, encoded.result);
      assert.deepEqual(crop.dims, expected.dims);
      assertMatches(t, encoded.sample, expected, 'photo encoded and decoded in the page');
    } finally {
      await vae.dispose();
    }
  },
);
