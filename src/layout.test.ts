// Rules of the layout that the compiler cannot check (docs/design.md §2.1–§2.2): src/'s folders
// are layers and every module imports only from its own folder or a lower layer (so no import
// cycle between folders can form); the CLI is a client of the public entries (and of the error
// vocabulary every layer shares); only the planner writes `vae.tiling`. Each scan must find
// something to check, so a moved folder cannot make a rule pass vacuously.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = dirname(fileURLToPath(import.meta.url));

/**
 * src/'s layers, lowest first: the ground files, then one folder each (docs/design.md §2.1 says
 * what each owns). Entries (the root API and the page's) sit above every folder but the CLI.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['errors.ts'],
  ['tensor.ts', 'version.ts'],
  ['bytes'],
  ['weights'],
  ['graph'],
  ['runtime'],
  ['families'],
  ['plan'],
  ['tile'],
  ['io'],
  ['sources'],
  ['decode'],
  ['encode'],
  ['ranks'],
  ['strategies'],
  ['memory'],
  ['session'],
  ['bench'],
  ['web'],
  ['index.ts', 'web.ts', 'entries'],
  ['cli'],
];

/** The package's modules: every .ts under `dir` but tests and `testing/` helpers (the package leaves both out). */
function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'testing') sources(path, out);
    } else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

/** Relative module specifiers of a file's static and dynamic imports and re-exports, type-only ones too. */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
}

/** The unit of src/ a path belongs to: its top folder, or the ground file itself. */
function unitOf(path: string): string {
  return relative(SRC, path).split(sep)[0]!.replace(/\.js$/, '.ts');
}

function layerOf(unit: string): number {
  return LAYERS.findIndex((layer) => layer.includes(unit));
}

test('every folder and ground file of src/ has a layer', () => {
  const units = [...new Set(sources(SRC).map(unitOf))];
  assert.ok(units.length > 15, 'the folders were found');
  assert.deepEqual(
    units.filter((u) => layerOf(u) < 0),
    [],
  );
});

test('modules import only from their own folder or a lower layer (no folder-level cycle)', () => {
  const files = sources(SRC);
  assert.ok(files.length > 150, 'the sources were found');
  const upward = files.flatMap((file) =>
    relativeImports(file)
      .map((spec) => resolve(dirname(file), spec))
      .filter((target) => unitOf(target) !== unitOf(file) && layerOf(unitOf(target)) >= layerOf(unitOf(file)))
      .map((target) => `${relative(SRC, file)} imports ${relative(SRC, target)}`),
  );
  assert.deepEqual(upward, []);
});

/** The modules package.json's `exports` name, as source paths: the public entries. */
function publicEntries(): string[] {
  const pkg = JSON.parse(readFileSync(join(SRC, '..', 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
  return Object.values(pkg.exports)
    .flatMap((entry) => (typeof entry === 'object' && entry !== null ? [(entry as { default?: string }).default] : []))
    .filter((target): target is string => typeof target === 'string' && target.startsWith('./dist/'))
    .map((target) => join(SRC, target.slice('./dist/'.length)));
}

test('the CLI imports only the public entries, the error vocabulary and its own folder', () => {
  const cli = join(SRC, 'cli');
  const files = sources(cli);
  const entries = [...publicEntries(), join(SRC, 'errors.js')];
  assert.ok(files.length > 5, 'the CLI sources were found');
  assert.ok(entries.includes(join(SRC, 'index.js')) && entries.length > 5, 'the root and subpath entries are public');
  const offending = files.flatMap((file) =>
    relativeImports(file)
      .map((spec) => resolve(dirname(file), spec))
      .filter((target) => !entries.includes(target) && !relative(cli, target).match(/^[^.]/))
      .map((target) => `${relative(SRC, file)} imports ${relative(SRC, target)}`),
  );
  assert.deepEqual(offending, []);
});

test('nothing outside plan/ writes vae.tiling', () => {
  const files = sources(SRC).filter((f) => !relative(SRC, f).startsWith('plan/'));
  const writes = files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .map((line, i) => ({ line, i }))
      // The Vae constructor installs the family's initial state (tiling off): the one exception.
      .filter(({ line }) => /\.tiling\s*=[^=]/.test(line) && !line.includes('this.tiling = defaultTiling('))
      .map(({ i }) => `${relative(SRC, file)}:${i + 1}`),
  );
  assert.ok(files.length > 50, 'the sources were found');
  assert.deepEqual(writes, []);
});
