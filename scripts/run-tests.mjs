// Runs the test suite with Node's own runner: collects *.test.ts under src/ and docs/ (Node 20's
// --test takes no globs; build outputs are skipped), optionally filtered by substrings given on
// the command line.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

// Build outputs by path, not by name: a source folder may share a build folder's name.
/** @param {string} path */
const SKIPPED = (path) => path.endsWith('node_modules') || path === join('docs', 'dist');

/**
 * @param {string} dir
 * @param {string[]} out
 * @returns {string[]}
 */
function collect(dir, out) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (!SKIPPED(path)) collect(path, out);
    } else if (name.endsWith('.test.ts')) out.push(relative(process.cwd(), path));
  }
  return out;
}

const filters = process.argv.slice(2);
const files = ['src', 'docs']
  .flatMap((dir) => collect(dir, []))
  .sort()
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)));
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
