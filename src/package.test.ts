// The package ships the library and the CLI, never their tests: the build config leaves
// `*.test.ts` and `testing/` folders out (so nothing in dist/ imports node:test), and `npm pack`
// lists only dist/, bin/, README.md and package.json.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

test('the build compiles no test and no testing/ module, and nothing it compiles imports node:test', () => {
  const listed = execFileSync(process.execPath, [TSC, '-p', 'tsconfig.build.json', '--listFilesOnly'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f.includes('/src/'))
    .map((f) => relative(ROOT, f));
  assert.ok(listed.includes('src/index.ts') && listed.includes('src/cli/main.ts'), 'the library and the CLI are built');
  assert.deepEqual(listed.filter((f) => f.endsWith('.test.ts') || f.split('/').includes('testing')), []);
  assert.deepEqual(listed.filter((f) => /from 'node:test'/.test(readFileSync(join(ROOT, f), 'utf8'))), []);
});

test('npm pack lists only dist/, bin/, README.md and package.json, and no test files', () => {
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--ignore-scripts', '--json'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) as [{ files: { path: string }[] }];
  const paths = pack.files.map((f) => f.path);
  assert.ok(paths.includes('package.json') && paths.includes('bin/distvae.js'));
  assert.deepEqual(paths.filter((p) => !/^(dist\/|bin\/|README\.md$|package\.json$|LICENSE)/.test(p)), []);
  assert.deepEqual(paths.filter((p) => /\.test\.(js|d\.ts|ts)(\.map)?$/.test(p) || p.split('/').includes('testing')), []);
});
