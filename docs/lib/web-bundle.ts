// Bundling distvae for pages: the esbuild settings (browser platform, so package.json's
// `browser` map swaps the Node-only modules; onnxruntime-web's build that loads its WebAssembly
// from a folder the page names rather than from a CDN or an inlined copy) and the
// onnxruntime-web files that folder must hold. Used by the docs build (the demo) and by the
// test that proves the bundle imports no `node:` module.

import { build, type BuildOptions, type Metafile } from 'esbuild';
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** onnxruntime-web's runtime for the WebGPU build (WebGPU + WASM kernels, SIMD, threads): loaded by URL at run time. */
export const ORT_RUNTIME_FILES = ['ort-wasm-simd-threaded.asyncify.mjs', 'ort-wasm-simd-threaded.asyncify.wasm'] as const;

export const WEB_BUNDLE_OPTIONS: BuildOptions = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  // onnxruntime-web's own condition: its glue and .wasm are fetched from env.wasm.wasmPaths.
  conditions: ['onnxruntime-web-use-extern-wasm'],
};

/** Bundles `entry` to `outfile` and returns esbuild's metafile (inputs and their imports). */
export async function bundleForPages(entry: string, outfile: string): Promise<Metafile> {
  const result = await build({ ...WEB_BUNDLE_OPTIONS, entryPoints: [entry], outfile, metafile: true });
  return result.metafile!;
}

function ortDist(): string {
  return dirname(createRequire(import.meta.url).resolve('onnxruntime-web/wasm'));
}

/** Copies onnxruntime-web's runtime files into `dir`; returns their sizes in bytes. */
export function copyOrtRuntime(dir: string): Record<string, number> {
  mkdirSync(dir, { recursive: true });
  const sizes: Record<string, number> = {};
  for (const name of ORT_RUNTIME_FILES) {
    copyFileSync(join(ortDist(), name), join(dir, name));
    sizes[name] = statSync(join(dir, name)).size;
  }
  return sizes;
}
