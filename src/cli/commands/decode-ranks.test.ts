// `distvae decode --ranks R`: the same .npy bits as the single-rank decode, and the JSON
// summary docs/design.md §9 fixes ({ shape, tiles, seconds, ranks: [{ rank, tiles, load, seconds,
// peakRssBytes? }] }), with peak RSS in process isolation.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { TINY_KL, seededLatent } from '../../ranks/testing/tiny-vae.js';
import { writeNpy } from '../../io/npy.js';
import { runCli } from '../main.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-decode-'));
after(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, 'config.json'), JSON.stringify({ _class_name: 'AutoencoderKL', ...TINY_KL }));
writeNpy(join(dir, 'z.npy'), seededLatent(40, 56, 9));

async function decode(out: string, ...extra: string[]): Promise<Record<string, unknown>> {
  let stdout = '';
  let stderr = '';
  const argv = [
    'decode',
    '--synthetic',
    '--config',
    join(dir, 'config.json'),
    '--latents',
    join(dir, 'z.npy'),
    '--out',
    join(dir, out),
    '--window',
    '32x32',
    '--overlap',
    '8x8',
    '--threads',
    '1',
    '--json',
    ...extra,
  ];
  const code = await runCli(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), stderrIsTTY: false });
  assert.equal(code, 0, stderr);
  assert.equal(stderr, '', 'quiet when stderr is not a terminal');
  return JSON.parse(stdout) as Record<string, unknown>;
}

test('decode --ranks 2 writes the single-rank bits and reports every rank', async () => {
  const single = await decode('one.npy');
  for (const isolation of ['thread', 'process']) {
    const summary = await decode(`${isolation}.npy`, '--ranks', '2', '--isolation', isolation);
    assert.deepEqual(
      readFileSync(join(dir, `${isolation}.npy`)),
      readFileSync(join(dir, 'one.npy')),
      `${isolation}: same bits as one rank`,
    );
    assert.deepEqual(summary['shape'], single['shape']);
    assert.equal(summary['tiles'], 20);
    assert.equal(typeof summary['seconds'], 'number');
    const ranks = summary['ranks'] as { rank: number; tiles: number[]; load: number; seconds: number; peakRssBytes?: number }[];
    assert.deepEqual(
      ranks.map((r) => r.rank),
      [0, 1],
    );
    assert.deepEqual(
      ranks.flatMap((r) => r.tiles).sort((a, b) => a - b),
      Array.from({ length: 20 }, (_, i) => i),
    );
    assert.equal(ranks[0]!.load + ranks[1]!.load, (single['ranks'] as { load: number }[])[0]!.load);
    for (const r of ranks) {
      assert.ok(r.seconds > 0);
      if (isolation === 'process') assert.ok(r.peakRssBytes! > 10 * 2 ** 20, `rank ${r.rank} peak RSS ${r.peakRssBytes}`);
      else assert.equal(r.peakRssBytes, undefined);
    }
  }
});

test('decode --ranks refuses a bad rank count or isolation before loading anything', async () => {
  let stdout = '';
  const code = await runCli(
    [
      'decode',
      '--synthetic',
      '--family',
      'autoencoder-kl',
      '--latents',
      'absent.npy',
      '--out',
      'x.npy',
      '--ranks',
      '0',
      '--isolation',
      'fiber',
      '--json',
    ],
    {
      stdout: (t) => (stdout += t),
      stderr: () => undefined,
      stderrIsTTY: false,
    },
  );
  assert.equal(code, 2);
  const fields = (JSON.parse(stdout) as { error: { reasons: { field: string }[] } }).error.reasons.map((r) => r.field);
  assert.deepEqual(fields, ['--ranks', '--isolation']);
});
