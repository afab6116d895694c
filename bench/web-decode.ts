// Times one decode on WebGPU (Chromium's adapter; SwiftShader on a machine without a GPU), on
// WASM in the same page, and on onnxruntime-node, for the same latent and plan: the latent of a
// centred crop of a photo by the TAEF2 encoder (Node), decoded by the TAEF2 decoder through the
// demo page's automation contract. Prints one JSON object (seconds exclude session building,
// reported apart). Timings are meaningful only on a quiet machine.
// Usage: npx tsx bench/web-decode.ts [--crop 512x512] [--window 256x256] [--overlap 64x64]
//        [--backends webgpu,wasm,node] [--models ../shared/models/taef2] [--photo ../shared/data/photo-2048x768.jpg]

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { buildSite } from '../docs/build.js';
import { serveSite } from '../docs/serve.js';
import { loadVae } from '../src/decode/vae.js';
import { cropToMultiple } from '../src/encode/image-check.js';
import { loadEncoder } from '../src/encode/encoder.js';
import { readImage } from '../src/io/image.js';
import { encodeNpy } from '../src/io/npy.js';
import type { Tensor } from '../src/tensor.js';
import { installWindow } from '../src/memory/device-limits.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const FLAGS = [
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

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
}

function size(text: string): { height: number; width: number } {
  const [h, w] = text.split('x').map(Number) as [number, number];
  return { height: h, width: w };
}

function centreCrop(image: Tensor, h: number, w: number): Tensor {
  const [, c, H, W] = image.dims as [number, number, number, number];
  const y0 = Math.floor((H - h) / 2);
  const x0 = Math.floor((W - w) / 2);
  const data = new Float32Array(c * h * w);
  for (let k = 0; k < c; k++)
    for (let y = 0; y < h; y++) data.set(image.data.subarray((k * H + y0 + y) * W + x0, (k * H + y0 + y) * W + x0 + w), (k * h + y) * w);
  return cropToMultiple({ dims: [1, c, h, w], data }, 8);
}

async function main(): Promise<void> {
  const models = resolve(arg('models', join(ROOT, '../shared/models/taef2')));
  const crop = size(arg('crop', '512x512'));
  const window = arg('window', '256x256');
  const overlap = arg('overlap', '64x64');
  const backends = arg('backends', 'webgpu,wasm,node').split(',');
  const out = join(ROOT, 'test-output/bench-web');
  mkdirSync(out, { recursive: true });
  const encoder = await loadEncoder(join(models, 'taef2_encoder.pth'), { family: 'tae' });
  const latents = await encoder.encode(
    centreCrop(readImage(resolve(arg('photo', join(ROOT, '../shared/data/photo-2048x768.jpg')))), crop.height, crop.width),
  );
  await encoder.dispose();
  writeFileSync(join(out, 'latents.npy'), encodeNpy(latents));
  const report: Record<string, unknown> = { crop, window, overlap, cores: (await import('node:os')).availableParallelism() };
  if (backends.some((b) => b !== 'node')) {
    await buildSite({ outDir: join(out, 'site') });
    const { server, url } = await serveSite(join(out, 'site'), { mounts: { '/models/taef2/': models, '/bench/': out } });
    const userDataDir = mkdtempSync(join(tmpdir(), 'distvae-bench-chromium-'));
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: FLAGS,
    });
    try {
      for (const backend of backends.filter((b) => b !== 'node')) {
        const page = await context.newPage();
        const query = new URLSearchParams({
          weights: 'models/taef2/taef2_decoder.pth',
          latents: 'bench/latents.npy',
          window,
          overlap,
          backend,
          run: '1',
        });
        await page.goto(`${url}demo.html?${query}`);
        await page.waitForFunction("['done', 'error'].includes(document.documentElement.dataset.distvaeState ?? '')", undefined, {
          timeout: 3_600_000,
          polling: 1000,
        });
        report[backend] = await page.evaluate('(({ sample, ...r }) => r)(window.distvaeResult)');
        await page.close();
      }
    } finally {
      await context.close();
      server.close();
      rmSync(userDataDir, { recursive: true, force: true });
    }
  }
  if (backends.includes('node')) {
    const vae = await loadVae(join(models, 'taef2_decoder.pth'), { family: 'tae' });
    const [h, w] = latents.dims.slice(-2) as [number, number];
    installWindow(vae, { height: h, width: w }, size(window), size(overlap));
    await vae.decode(latents); // builds the session
    const started = performance.now();
    await vae.decode(latents);
    report['node'] = { seconds: (performance.now() - started) / 1000, threads: 'all cores' };
    await vae.dispose();
  }
  console.log(JSON.stringify(report, null, 2));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
