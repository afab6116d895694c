// `distvae decode --strategy`: shard and exact-tile write what the whole decode (--full) writes
// within 1e-4, shard reports its bands and the collectives the ranks sent (in JSON and in the
// text summary), and every refusal happens before any decode: exact-tile on a decoder with
// GroupNorm/attention (naming the op), plan options with shard, more ranks than latent rows.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { TINY_KL, seededLatent } from '../../ranks/testing/tiny-vae.js';
import { difference } from '../../graph/testing/compare.js';
import { readNpy, writeNpy } from '../../io/npy.js';
import { configFile, TAE_SMALL } from '../../families/testing/config-files.js';
import { HUNYUAN_VIDEO_15_TINY } from '../../families/hunyuan-video-15/testing/configs.js';
import { seededTensor } from '../../tensor.js';
import { cli, syntheticDecode, type CliRun as Run } from '../testing/in-process.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-strategy-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const KL = join(dir, 'kl.json');
writeFileSync(KL, JSON.stringify({ _class_name: 'AutoencoderKL', ...TINY_KL }));
// A TAE without pool blocks: every op local, so halo-exact tiles are possible.
const TAE = configFile(dir, 'tae.json', TAE_SMALL);
const Z = join(dir, 'z.npy');
writeNpy(Z, seededLatent(9, 12, 4));

async function decode(config: string, out: string, ...extra: string[]): Promise<Run> {
  const run = await cli(...syntheticDecode(config, Z, join(dir, out)), '--threads', '1', ...extra);
  assert.equal(run.code, 0, run.stderr);
  return run;
}

function maxAbs(a: string, b: string): number {
  return difference(readNpy(join(dir, a)) as never, readNpy(join(dir, b)) as never).maxAbs;
}

type Counters = Record<string, { calls: number; bytes: number }>;

test('--strategy shard equals the whole decode and reports bands and collectives', async () => {
  await decode(KL, 'whole.npy', '--full');
  for (const [ranks, isolation] of [
    ['1', 'thread'],
    ['3', 'thread'],
    ['2', 'process'],
  ] as const) {
    const out = `shard-${ranks}-${isolation}.npy`;
    const summary = JSON.parse(
      (await decode(KL, out, '--strategy', 'shard', '--ranks', ranks, '--isolation', isolation, '--json')).stdout,
    ) as {
      tiles: number;
      strategy: string;
      bands: number;
      collectives: Counters;
      ranks: { rank: number; band: { start: number; end: number }; collectives: Counters; peakRssBytes?: number }[];
    };
    assert.ok(maxAbs(out, 'whole.npy') <= 1e-4, `${ranks} ${isolation} ranks: max abs ${maxAbs(out, 'whole.npy')}`);
    const r = Number(ranks);
    assert.equal(summary.strategy, 'shard');
    assert.equal(summary.tiles, 0);
    assert.equal(summary.bands, r);
    assert.deepEqual(
      summary.ranks.map((x) => x.band.end - x.band.start).reduce((a, b) => a + b),
      9,
    );
    // Tiny KL: 14 GroupNorms (one statistics gather each) and one attention gather per rank.
    assert.equal(summary.collectives['allReduce']!.calls, 0);
    assert.equal(summary.collectives['allGather']!.calls, 15 * r);
    assert.equal(summary.collectives['send']!.calls > 0, r > 1);
    for (const kind of Object.keys(summary.collectives)) {
      const total = summary.ranks.reduce((n, x) => n + x.collectives[kind]!.bytes, 0);
      assert.equal(summary.collectives[kind]!.bytes, total, `${kind} bytes summed over ranks`);
    }
    for (const rank of summary.ranks) assert.equal(rank.peakRssBytes !== undefined, isolation === 'process');
  }
  const text = (await decode(KL, 'shard-text.npy', '--strategy', 'shard', '--ranks', '2')).stdout;
  assert.match(text, /row-sharded over 2 thread rank\(s\): rank 0 latent rows \[0, 5\), rank 1 latent rows \[5, 9\)/);
  assert.match(text, /collectives \(calls \/ bytes sent, all ranks\): send \d+ \/ \d+, allReduce 0 \/ 0, allGather 30 \/ \d+/);
});

test('--strategy shard on a video family (HunyuanVideo 1.5, 2 latent frames): equal to --full, one keys/values gather per rank', async () => {
  const hv15 = configFile(dir, 'hv15.json', HUNYUAN_VIDEO_15_TINY);
  const z = join(dir, 'z5.npy');
  writeNpy(z, seededTensor([1, 32, 2, 5, 6], 3, 2));
  const run = async (out: string, ...extra: string[]) => {
    const r = await cli(...syntheticDecode(hv15, z, join(dir, out)), '--threads', '1', ...extra);
    assert.equal(r.code, 0, r.stderr);
    return r;
  };
  await run('hv15-whole.npy', '--full');
  const summary = JSON.parse((await run('hv15-shard.npy', '--strategy', 'shard', '--ranks', '2', '--json')).stdout) as {
    strategy: string;
    bands: number;
    collectives: Counters;
  };
  assert.ok(maxAbs('hv15-shard.npy', 'hv15-whole.npy') <= 1e-4, `max abs ${maxAbs('hv15-shard.npy', 'hv15-whole.npy')}`);
  assert.equal(summary.strategy, 'shard');
  assert.equal(summary.bands, 2);
  assert.equal(summary.collectives['allGather']!.calls, 2);
  assert.equal(summary.collectives['allReduce']!.calls, 0);
});

test('--strategy exact-tile equals the whole decode of a local decoder, on one rank and on two', async () => {
  await decode(TAE, 'tae-whole.npy', '--full');
  await decode(TAE, 'tae-blended.npy', '--window', '40x40', '--overlap', '16x16');
  assert.ok(maxAbs('tae-blended.npy', 'tae-whole.npy') > 1e-3, 'blended tiles differ from the whole decode');
  for (const ranks of ['1', '2']) {
    const out = `tae-exact-${ranks}.npy`;
    const run = await decode(TAE, out, '--strategy', 'exact-tile', '--window', '40x40', '--overlap', '16x16', '--ranks', ranks);
    assert.match(run.stdout, /halo-exact tile\(s\)/);
    assert.ok(maxAbs(out, 'tae-whole.npy') <= 1e-4, `${ranks} rank(s): max abs ${maxAbs(out, 'tae-whole.npy')}`);
  }
});

test('refusals: exact-tile on GroupNorm/attention names the op; shard with a plan or too many ranks; an unknown strategy', async () => {
  const exact = await cli(...syntheticDecode(KL, Z, join(dir, 'x.npy')), '--strategy', 'exact-tile', '--json');
  assert.equal(exact.code, 2);
  const error = (JSON.parse(exact.stdout) as { error: { code: string; reasons: { field: string; message: string }[] } }).error;
  assert.equal(error.code, 'UNSUPPORTED');
  assert.equal(error.reasons[0]!.field, 'strategy');
  assert.match(error.reasons[0]!.message, /decoder\.mid_block\.resnets\.0\.norm1 \(GroupNorm/);
  assert.ok(error.reasons.some((r) => /decoder\.mid_block\.attentions\.0 \(Attention/.test(r.message)));

  const fields = async (...extra: string[]) => {
    const run = await cli(...syntheticDecode(KL, Z, join(dir, 'x.npy')), '--json', ...extra);
    assert.equal(run.code, 2);
    return (JSON.parse(run.stdout) as { error: { reasons: { field: string; message: string }[] } }).error.reasons;
  };
  assert.deepEqual(
    (await fields('--strategy', 'shard', '--window', '16x16', '--full')).map((r) => r.field),
    ['--window', '--full'],
  );
  const rows = await fields('--strategy', 'shard', '--ranks', '10');
  assert.equal(rows[0]!.field, 'ranks');
  assert.match(rows[0]!.message, /10 ranks cannot share 9 latent rows \(18 output rows\)/);
  assert.deepEqual(
    (await fields('--strategy', 'stripes')).map((r) => r.field),
    ['--strategy'],
  );
  assert.deepEqual(
    (await fields('--strategy', 'exact-tile', '--full')).map((r) => r.field),
    ['--full'],
  );
});
