// The distvae/web bundle (src/web.ts, bundled for browsers as the docs build bundles the demo)
// imports no `node:` module and no Node built-in, contains neither onnxruntime-node nor the Node
// session, file or host-memory modules (package.json's browser map replaced them), and its
// sizes are reported: the JS bundle and onnxruntime-web's runtime files apart.

import assert from 'node:assert/strict';
import { builtinModules } from 'node:module';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bundleForPages, copyOrtRuntime } from './web-bundle.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = join(ROOT, 'test-output/web-bundle');

test('the distvae/web bundle imports no node: module or Node built-in and holds no onnxruntime-node; sizes reported', async (t) => {
  mkdirSync(OUT, { recursive: true });
  const outfile = join(OUT, 'web.js');
  const metafile = await bundleForPages(join(ROOT, 'src/web.ts'), outfile);
  const builtins = new Set(builtinModules);
  const nodeImports = Object.entries(metafile.inputs).flatMap(([file, input]) =>
    input.imports.filter((i) => i.path.startsWith('node:') || builtins.has(i.path)).map((i) => `${file} → ${i.path}`),
  );
  assert.deepEqual(nodeImports, []);
  const inputs = Object.keys(metafile.inputs);
  assert.deepEqual(
    inputs.filter((f) => f.includes('onnxruntime-node') || /src\/(runtime\/(session|providers|host-memory)|io\/files)\.ts$/.test(f)),
    [],
  );
  for (const replacement of ['src/runtime/web-session.ts', 'src/bytes/web-files.ts'])
    assert.ok(inputs.includes(replacement), `${replacement} is in the bundle`);
  assert.ok(
    inputs.some((f) => f.includes('onnxruntime-web')),
    'onnxruntime-web is bundled',
  );
  const js = statSync(outfile).size;
  const runtime = copyOrtRuntime(join(OUT, 'ort'));
  t.diagnostic(`distvae/web bundle (minified ESM, onnxruntime-web's JS included): ${js} bytes (${(js / 1024).toFixed(0)} KiB)`);
  for (const [name, size] of Object.entries(runtime)) t.diagnostic(`${name}: ${size} bytes (${(size / 2 ** 20).toFixed(1)} MiB)`);
  assert.ok(js < 2 * 2 ** 20, `the JS bundle stays under 2 MiB (${js} bytes)`);
});
