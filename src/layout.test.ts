// Rules of the layout that the compiler cannot check: the CLI is a client of the public API
// (it imports only src/index.ts and its own folder), and only the planner writes `vae.tiling`.
// Each scan must find something to check, so a moved folder cannot make the rule pass vacuously.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = dirname(fileURLToPath(import.meta.url));

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

/** Relative module specifiers of a file's static and dynamic imports and re-exports. */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
}

test('the CLI imports only src/index.ts and its own folder', () => {
  const cli = join(SRC, 'cli');
  const files = sources(cli);
  assert.ok(files.length > 5, 'the CLI sources were found');
  const offending = files.flatMap((file) =>
    relativeImports(file)
      .map((spec) => resolve(dirname(file), spec))
      .filter((target) => target !== join(SRC, 'index.js') && !relative(cli, target).match(/^[^.]/))
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
