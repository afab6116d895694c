// Issue 16's memory bombs and malformed files, for every reader: each is refused with a
// DistVaeError in our own words, and all of them together never take a process past 400 MiB.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { HOSTILE_CASES, type HostileOutcome } from './testing/hostile-files.js';

const RUNNER = fileURLToPath(new URL('./testing/hostile-files.ts', import.meta.url));
const PEAK_BOUND = 400 * 1024 * 1024;

test('hostile files are refused clearly and a process refusing all of them stays under 400 MiB', () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-hostile-'));
  try {
    const child = spawnSync(process.execPath, ['--import', 'tsx', RUNNER, dir], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(child.status, 0, child.stderr);
    const { outcomes, peakRssBytes } = JSON.parse(child.stdout) as { outcomes: HostileOutcome[]; peakRssBytes: number };
    assert.equal(outcomes.length, HOSTILE_CASES.length);
    for (const [i, c] of HOSTILE_CASES.entries()) {
      const got = outcomes[i]!;
      assert.equal(got.internal, false, `${c.name}: internal error ${got.message}`);
      assert.equal(got.code, c.code, `${c.name}: ${got.code} ${got.message}`);
      assert.match(got.message, c.message, c.name);
      assert.doesNotMatch(got.message, /\n\s+at |RangeError|TypeError|Float32Array|Buffer|pngjs/, c.name);
    }
    assert.ok(peakRssBytes <= PEAK_BOUND, `peak RSS ${(peakRssBytes / 2 ** 20).toFixed(0)} MiB > 400 MiB`);
  } finally {
    rmSync(dir, { recursive: true });
  }
});
