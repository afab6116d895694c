// The memory budget on the command line: a decode without plan options takes the policy's
// choice (the whole decode, in a rank process, equal to --full), an exact request over an
// explicit --max-memory is refused naming its predicted peak, `plan --max-memory` ranks the
// alternatives, and a budget nothing fits exits 2 naming the smallest predicted peak.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { TINY_KL } from '../../ranks/testing/tiny-vae.js';
import { seededTensor } from '../../tensor.js';
import { readNpy, writeNpy } from '../../io/npy.js';
import { cli, syntheticDecode } from '../testing/in-process.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-cli-budget-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const KL = join(dir, 'kl.json');
writeFileSync(KL, JSON.stringify({ _class_name: 'AutoencoderKL', ...TINY_KL }));
const Z = join(dir, 'z.npy');
writeNpy(Z, seededTensor([1, 4, 24, 32], 5));

interface DecodeJson {
  tiles: number;
  memory: {
    budgetBytes: number;
    predictedPeakBytes: number;
    predictedBoundBytes: number;
    predictedMaxTensorBytes: number;
    measuredPeakBytes: number | null;
    ranks: { rank: number; predictedPeakBytes: number; measuredPeakBytes: number | null }[];
  };
  choice: { strategy: string; ranks: number; reason: string; window: unknown; threads: number | null; predictedSeconds: number | null };
  alternatives?: {
    strategy: string;
    class: string;
    ranks: number;
    threads: number | null;
    predictedPeakBytes: number;
    predictedSeconds: number;
    fits: boolean;
  }[];
  toneDrift?: {
    ops: Record<string, number>;
    alternative: { options: string; predictedPeakBytes: number; predictedSeconds: number } | null;
    message: string;
  };
  ranks: { rank: number }[];
  error?: { code: string; message: string; reasons: { field: string; valid: string }[] };
}

test('without plan options the decode is the policy choice: whole, in a rank process, bitwise the --full decode', async () => {
  const chosen = join(dir, 'chosen.npy');
  const full = join(dir, 'full.npy');
  const r = await cli(...syntheticDecode(KL, Z, chosen), '--threads', '1', '--json');
  assert.equal(r.code, 0, r.stderr);
  const json = JSON.parse(r.stdout) as DecodeJson;
  assert.equal(json.choice.strategy, 'whole');
  assert.match(json.choice.reason, /exact: the whole decode fits/);
  assert.equal(json.tiles, 1);
  assert.ok(json.memory.budgetBytes > 0 && json.memory.predictedPeakBytes > 0 && json.memory.predictedMaxTensorBytes > 0);
  // The decode ran in one rank process: its peak was measured, and so was the coordinator's.
  assert.equal(json.memory.ranks.length, 1);
  assert.ok((json.memory.ranks[0]!.measuredPeakBytes ?? 0) > 0);
  assert.ok((json.memory.measuredPeakBytes ?? 0) > json.memory.ranks[0]!.measuredPeakBytes!);
  assert.equal((await cli(...syntheticDecode(KL, Z, full), '--threads', '1', '--full')).code, 0);
  assert.deepEqual(readNpy(chosen), readNpy(full));
});

test('a budget below the whole decode gets tiles; the same budget refuses an exact --full request, naming its predicted peak', async () => {
  const plan = await cli('plan', '--config', KL, '--height', '48', '--width', '64', '--max-memory', '64GiB', '--json');
  // A budget is compared with the bound of the predicted peak (a cap), not the median.
  const whole = (JSON.parse(plan.stdout) as DecodeJson).memory.predictedBoundBytes;
  const tight = String(whole - 1);
  const tiled = await cli('plan', '--config', KL, '--height', '48', '--width', '64', '--max-memory', tight, '--json');
  assert.equal(tiled.code, 0, tiled.stderr);
  const json = JSON.parse(tiled.stdout) as DecodeJson & { alternatives: { strategy: string; predictedPeakBytes: number; fits: boolean }[] };
  assert.equal(json.choice.strategy, 'tile');
  assert.ok(json.memory.predictedBoundBytes <= whole - 1);
  assert.deepEqual([json.alternatives[0]!.strategy, json.alternatives[0]!.fits], ['whole', false]);
  assert.ok(json.alternatives.some((a) => a.fits));
  // Time beside memory for the choice and every alternative; the chosen blended tiles on a
  // decoder with GroupNorm and attention announce tone drift.
  assert.ok(json.choice.predictedSeconds! > 0 && json.alternatives.every((a) => a.predictedSeconds > 0 && a.class));
  assert.match(json.toneDrift!.message, /blended tiles may shift tone at their seams: the decoder's GroupNorm \(\d+\) and attention \(1\)/);
  const text = await cli('plan', '--config', KL, '--height', '48', '--width', '64', '--max-memory', tight);
  assert.match(text.stdout, /predicted time [\d.]+ m?s/);
  assert.match(text.stdout, /may shift tone at their seams/);

  const refused = await cli(...syntheticDecode(KL, Z, join(dir, 'x.npy')), '--full', '--max-memory', tight, '--json');
  assert.equal(refused.code, 2);
  const error = (JSON.parse(refused.stdout) as DecodeJson).error!;
  assert.equal(error.code, 'BUDGET_EXCEEDED');
  assert.match(error.message, /whole.*predicted peak is/);
});

test('a budget nothing fits exits 2 naming the smallest predicted peak and its plan; a bad size is refused', async () => {
  const r = await cli('plan', '--config', KL, '--height', '48', '--width', '64', '--max-memory', '1MiB', '--json');
  assert.equal(r.code, 2);
  const error = (JSON.parse(r.stdout) as DecodeJson).error!;
  assert.equal(error.code, 'BUDGET_EXCEEDED');
  assert.match(error.message, /smallest predicted peak is [\d.]+ (MiB|GiB).* with tile \d+x\d+/);
  const decode = await cli(...syntheticDecode(KL, Z, join(dir, 'x.npy')), '--max-memory', '1MiB', '--json');
  assert.equal(decode.code, 2);
  assert.equal((JSON.parse(decode.stdout) as DecodeJson).error!.code, 'BUDGET_EXCEEDED');
  const bad = await cli('plan', '--config', KL, '--height', '48', '--width', '64', '--max-memory', 'lots', '--json');
  assert.equal(bad.code, 2);
  assert.equal((JSON.parse(bad.stdout) as DecodeJson).error!.reasons[0]!.field, '--max-memory');
});

test('plan with a window over --max-memory names the policy plan that fits, not only the plan named; --search drops what does not fit', async () => {
  const whole = JSON.parse((await cli('plan', '--config', KL, '--height', '192', '--width', '256', '--json')).stdout) as DecodeJson;
  // A budget under one window over the whole sample, but over smaller tiles.
  const tight = String(whole.memory.predictedBoundBytes - 1);
  const r = await cli('plan', '--config', KL, '--height', '192', '--width', '256', '--window', '192x256', '--max-memory', tight, '--json');
  assert.equal(r.code, 2, r.stderr);
  const error = (JSON.parse(r.stdout) as DecodeJson).error!;
  assert.equal(error.code, 'BUDGET_EXCEEDED');
  assert.match(error.message, /the requested plan \(tile 192x256\) does not fit .* the memory policy's choice fits: tile /);
  type Search = { budget: { bytes: number } | null; picks: Record<string, { prediction: { boundBytes: number } } | null> };
  const searchArgs = ['plan', '--search', '--config', KL, '--height', '192', '--width', '256', '--ranks', '2', '--json'];
  const open = JSON.parse((await cli(...searchArgs)).stdout) as Search;
  const under = String(open.picks['coarse']!.prediction.boundBytes - 1);
  const search = await cli(...searchArgs, '--max-memory', under);
  assert.equal(search.code, 0, search.stderr);
  const s = JSON.parse(search.stdout) as Search;
  assert.equal(s.budget!.bytes, Number(under));
  for (const pick of Object.values(s.picks)) assert.ok(pick && pick.prediction.boundBytes <= Number(under));
});

test('an exact request over the default budget is decoded as asked, with a warning naming its predicted peak', async () => {
  // The default budget is 80 % of what this machine has; a window request is checked against it too.
  const r = await cli(...syntheticDecode(KL, Z, join(dir, 'w.npy')), '--window', '32x32', '--threads', '1', '--json');
  assert.equal(r.code, 0, r.stderr);
  const json = JSON.parse(r.stdout) as DecodeJson;
  assert.equal(json.choice.strategy, 'tile');
  assert.equal(json.choice.reason, 'as requested');
  assert.ok(json.memory.predictedPeakBytes < json.memory.budgetBytes);
  assert.doesNotMatch(r.stderr, /warning/);
  // Tiles asked for on a decoder with GroupNorm: the note names the exact plan that fits (the whole decode fits the default budget).
  assert.ok(json.toneDrift && json.toneDrift.alternative, JSON.stringify(json.toneDrift));
  assert.match(
    json.toneDrift.message,
    /may shift tone at their seams.*the exact alternative that fits: (--full|--strategy shard --ranks \d)/,
  );
  assert.ok(json.choice.predictedSeconds! > 0);
});

test('--ranks 2 on one machine takes the faster exact plan: the whole decode on one rank with 2 x --threads, or row sharding, as predicted', async () => {
  const r = await cli(...syntheticDecode(KL, Z, join(dir, 'r2.npy')), '--ranks', '2', '--threads', '1', '--no-fallback', '--json');
  assert.equal(r.code, 0, r.stderr);
  const json = JSON.parse(r.stdout) as DecodeJson;
  const exact = json.alternatives!.filter((a) => a.class === 'exact');
  assert.deepEqual(exact.map((a) => a.strategy).sort(), ['shard', 'whole']);
  const fastest = exact.reduce((a, b) => (b.predictedSeconds < a.predictedSeconds ? b : a));
  assert.equal(json.choice.strategy, fastest.strategy);
  if (json.choice.strategy === 'whole') {
    // One rank started, with both ranks' threads; the reason says why it did not shard.
    assert.deepEqual([json.choice.ranks, json.choice.threads, json.ranks.length], [1, 2, 1]);
    assert.match(json.choice.reason, /whole decode on one rank with 2 x 1 intra-op threads .*faster than shard on 2 ranks/);
  } else assert.equal(json.ranks.length, 2);
});

/** Process ids of this process's children (every thread's), where /proc has them. */
function children(): number[] {
  try {
    return readdirSync(`/proc/${process.pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

test(
  'a rank process killed like the OOM killer does moves the decode down the ladder; the coordinator survives and reports both attempts',
  { skip: !existsSync(`/proc/${process.pid}/task`) && 'no /proc' },
  async () => {
    const before = new Set(children());
    let killed: number | null = null;
    // SIGKILL the first rank process this decode starts, as the kernel's OOM killer would.
    const watch = setInterval(() => {
      if (killed !== null) return;
      const rank = children().find((pid) => !before.has(pid));
      if (rank !== undefined) {
        killed = rank;
        process.kill(rank, 'SIGKILL');
      }
    }, 10);
    try {
      const out = join(dir, 'ladder.npy');
      const r = await cli(...syntheticDecode(KL, Z, out), '--threads', '1', '--json');
      assert.equal(r.code, 0, r.stderr);
      assert.ok(killed !== null);
      const json = JSON.parse(r.stdout) as DecodeJson & { attempts: { strategy: string; outcome: string; error?: string }[] };
      assert.deepEqual(
        json.attempts.map((a) => a.outcome),
        ['out-of-memory', 'decoded'],
      );
      assert.equal(json.attempts[0]!.strategy, 'whole');
      assert.match(json.attempts[0]!.error!, /SIGKILL/);
      assert.equal(json.choice.strategy, json.attempts[1]!.strategy);
      assert.match(r.stderr, /attempt 1 \(whole, predicted [\d.]+ \w+\) ran out of memory: .*SIGKILL.*; trying tile/);
    } finally {
      clearInterval(watch);
    }
  },
);
