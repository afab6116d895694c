#!/usr/bin/env node
// Entry point of the `distvae` bin: runs the compiled CLI when the package is built (dist/),
// otherwise the TypeScript sources through tsx (a development checkout). The long-running
// commands (a queue worker, a decode over a folder) first start again under the allocator
// settings of the processes distvae starts, so their memory does not grow over hours
// (src/ranks/local/process/relaunch.ts; DISTVAE_RANK_ALLOCATOR=inherit turns that off).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const built = existsSync(fileURLToPath(new URL('../dist/cli/main.js', import.meta.url)));
/** A module of the package: compiled in dist/, else its source in src/. */
const moduleOf = (path) => fileURLToPath(new URL(built ? `../dist/${path}.js` : `../src/${path}.ts`, import.meta.url));
if (!built) await import('tsx/esm/api').then(({ register }) => register());

const argv = process.argv.slice(2);
const longRunning = argv[0] === 'worker' || (argv[0] === 'decode' && argv.some((a) => a === '--out-dir' || a.startsWith('--out-dir=')));
const relaunched =
  longRunning &&
  (await import(pathToFileURL(moduleOf('ranks/local/process/relaunch')).href)).relaunchUnderAllocator(fileURLToPath(import.meta.url), argv);
if (!relaunched) {
  const entry = moduleOf('cli/main');
  process.argv[1] = entry;
  await import(pathToFileURL(entry).href);
}
