// `distvae encode --max-memory` on ranks (issue 28 item 4): the memory policy offers an encode every
// class a decode gets — on a GroupNorm encoder (a tiny AutoencoderKL) row sharding is an exact plan
// beside the whole encode; the session takes the whole encode while it fits (encode-file.ts says
// why) — and an exact request is predicted and refused over an explicit budget. Checked against the
// library's own policy and model.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { encodePng } from '../../io/image.js';
import { loadEncoder } from '../../encode/encoder.js';
import { predictMemory } from '../../memory/model.js';
import { chooseWithinBudget, describePlan } from '../../memory/policy.js';
import { cli } from '../testing/in-process.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-encode-policy-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const raw = { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };
const config = join(dir, 'config.json');
writeFileSync(config, JSON.stringify(raw));
const [height, width] = [64, 64];
const image = join(dir, 'image.png');
writeFileSync(
  image,
  encodePng(
    Float32Array.from({ length: 3 * height * width }, (_, i) => ((i * 37) % 256) / 255),
    3,
    height,
    width,
  ),
);
const encode = (...rest: string[]) =>
  cli('encode', '--synthetic', '--config', config, '--seed', '5', '--image', image, '--threads', '1', '--ranks', '2', ...rest);

test('encode --ranks 2 --max-memory: row sharding is offered in the exact class, the whole encode taken while it fits, and row sharding over the budget is refused', async () => {
  const encoder = await loadEncoder({ config: raw, weights: 'synthetic', seed: 5 }, { threads: 1 });
  const size = { height, width };
  const shard = predictMemory(encoder, { strategy: 'shard', ranks: 2 }, size, { threads: 1 });
  const whole = predictMemory(encoder, { strategy: 'whole', ranks: 1 }, size, { threads: 1 });
  const budget = Math.max(shard.boundBytes, whole.boundBytes);
  const expected = chooseWithinBudget(
    encoder,
    size,
    { bytes: budget },
    { ranks: 2, threads: 1, bands: true, devices: 'shared', more: 100 },
  );
  await encoder.dispose();
  // Row sharding is offered on the GroupNorm encoder, in the exact class, ahead of every tile plan.
  const strategies = expected.alternatives.map((a) => a.plan.strategy);
  const shardAt = strategies.indexOf('shard');
  assert.ok(shardAt >= 0 && shardAt < strategies.indexOf('tile'), strategies.join(', '));

  const run = await encode('--out', join(dir, 'auto.npy'), '--max-memory', String(budget), '--json');
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  assert.equal(report.decision.plan, describePlan({ strategy: 'whole', ranks: 1, threads: 2 }));
  assert.match(report.decision.reason, /^exact: /);
  assert.equal(report.strategy, 'tile');

  // Row sharding asked for, over an explicit budget: refused before any rank starts (exit 2), naming its predicted peak.
  const refused = await encode('--out', join(dir, 'refused.npy'), '--strategy', 'shard', '--max-memory', String(shard.boundBytes - 1));
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /the requested plan \(shard on 2 ranks\) does not fit/);
});
