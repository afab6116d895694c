// `distvae analyze` in-process: the verdicts and halos of a local graph (TAESD) and of graphs
// with GroupNorm / attention, the JSON shape, predicted collectives with --ranks, the trained
// TAEF2 file (skipped when absent), and refusals of malformed requests.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '../main.js';

const TAEF2 = join(dirname(fileURLToPath(import.meta.url)), '../../../../shared/models/taef2/taef2_decoder.pth');

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), stderrIsTTY: false });
  return { code, stdout, stderr };
}

test('analyze a local graph: halo-exact tiling with its halo', async () => {
  const run = await cli('analyze', '--family', 'tae', '--json');
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  assert.deepEqual(report.exactTiling, { possible: true, halo: { rows: 19, cols: 19 } });
  assert.deepEqual(report.nonlocal, []);
  assert.equal(report.outputScale, '8x');
  assert.equal(report.steps.length, 1);
  assert.deepEqual(
    report.steps[0].resampling.map((r: { factor: string }) => r.factor),
    ['2x', '2x', '2x'],
  );
  const text = await cli('analyze', '--family', 'tae');
  assert.match(text.stdout, /halo-exact tiling: possible with a halo of 19 latent rows and 19 latent columns/);
});

test('analyze a graph with GroupNorm and attention: exact tiling refused naming the ops; collectives per rank', async () => {
  const run = await cli('analyze', '--family', 'autoencoder-kl', '--ranks', '2', '--height', '512', '--width', '256', '--json');
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  assert.equal(report.exactTiling.possible, false);
  assert.match(
    report.exactTiling.reasons[0],
    /^decoder\.mid_block\.resnets\.0\.norm1 \(GroupNorm: 32 groups, statistics over every position\)$/,
  );
  assert.ok(report.nonlocal.some((n: { op: string; node: string }) => n.op === 'Attention' && n.node === 'decoder.mid_block.attentions.0'));
  assert.deepEqual(report.sharding, { possible: true, reasons: [], groupNorms: 30, attentions: 1 });
  // 30 GroupNorms → 30 all-gathers of band statistics; one for the attention; a 64-row latent in two
  // bands, each sending its edge rows to the other before each of the 30 stages with a halo
  // (32 stages; the two around the attention core are pointwise).
  assert.equal(report.collectives.perRank.length, 2);
  for (const c of report.collectives.perRank) {
    assert.equal(c.allReduce.calls, 0);
    assert.equal(c.allGather.calls, 31);
    assert.equal(c.send.calls, 30);
  }
  const text = await cli('analyze', '--family', 'autoencoder-kl');
  assert.match(
    text.stdout,
    /halo-exact tiling: refused, 31 op\(s\) read every position: decoder\.mid_block\.resnets\.0\.norm1 \(GroupNorm\), /,
  );
  assert.match(text.stdout, /\nattention +decoder\.mid_block\.attentions\.0: every query attends to every position\n/);
});

test('analyze the trained TAEF2 decoder file: its pool GroupNorms by module', async (t) => {
  if (!existsSync(TAEF2)) return t.skip(`real TAEF2 decoder absent: ${TAEF2}`);
  const run = await cli('analyze', '--vae', TAEF2, '--family', 'tae', '--json');
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  assert.deepEqual(
    report.nonlocal.map((n: { node: string }) => n.node),
    ['3.pool.1', '4.pool.1', '5.pool.1'],
  );
  assert.equal(report.sharding.possible, true);
});

test('analyze refuses a request without a graph, or --ranks without a size', async () => {
  const none = await cli('analyze', '--json');
  assert.equal(none.code, 2);
  assert.match(none.stderr, /pass --vae PATH, or --family F/);
  const noSize = await cli('analyze', '--family', 'tae', '--ranks', '2');
  assert.equal(noSize.code, 2);
  assert.match(noSize.stderr, /--ranks needs --height and --width/);
  const tooMany = await cli('analyze', '--family', 'tae', '--ranks', '9', '--height', '64', '--width', '64');
  assert.equal(tooMany.code, 2);
  assert.match(tooMany.stderr, /9 ranks cannot share 8 latent rows \(64 output rows\)/);
});
