// The root API stays small (issue: ≤ ~80 names, values and types): new options go on the session
// calls, advanced pieces into the subpath entries (src/entries/). No name is exported by two
// entries, so each has one documented home.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as root from './index.js';

const SRC = dirname(fileURLToPath(import.meta.url));

/** Names an entry file exports (values and types), read from its export statements. */
function exportedNames(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)].flatMap((m) =>
    m[1]!
      .split(',')
      .map((n) =>
        n
          .replace(/\btype\s+/, '')
          .split(/\s+as\s+/)
          .pop()!
          .trim(),
      )
      .filter((n) => n.length > 0),
  );
}

const ROOT_LIMIT = 80;

test(`the root API has at most ${ROOT_LIMIT} names, values and types`, () => {
  const names = exportedNames(join(SRC, 'index.ts'));
  // The parse sees every runtime export the module really has (so it cannot undercount).
  for (const value of Object.keys(root)) assert.ok(names.includes(value), `${value} is read from index.ts`);
  assert.ok(names.length > 40, 'the root exports were read');
  assert.ok(names.length <= ROOT_LIMIT, `${names.length} names in src/index.ts: ${names.join(', ')}`);
});

test('no name is exported by two public entries', () => {
  const files = [join(SRC, 'index.ts'), ...readdirSync(join(SRC, 'entries')).map((f) => join(SRC, 'entries', f))];
  const home = new Map<string, string>();
  const twice: string[] = [];
  for (const file of files)
    for (const name of exportedNames(file)) {
      if (home.has(name)) twice.push(`${name}: ${home.get(name)} and ${file}`);
      home.set(name, file);
    }
  assert.ok(home.size > 150, 'the entries were read');
  assert.deepEqual(twice, []);
});
