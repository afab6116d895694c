#!/usr/bin/env node
// Entry point of the `distvae` bin: runs the compiled CLI when the package is built (dist/),
// otherwise the TypeScript sources through tsx (a development checkout).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const built = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const entry = existsSync(built) ? built : fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
if (!existsSync(built)) await import('tsx/esm/api').then(({ register }) => register());
process.argv[1] = entry;
await import(pathToFileURL(entry).href);
