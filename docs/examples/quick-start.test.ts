import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tileOverlapPlan, tileShapePlan } from '../../src/entries/plan.js';
import { planningVae, planReport, searchPlans, setTiling } from '../../src/index.js';

const example = join(dirname(fileURLToPath(import.meta.url)), 'quick-start.ts');

test('the quick-start example runs and prints the plan and the search picks', () => {
  const out = execFileSync(process.execPath, ['--import', 'tsx', example], { encoding: 'utf8' }).trim().split('\n');
  // The same plan, made here step by step, is what the example must report.
  const vae = planningVae('autoencoder-kl');
  const sampleShape = { height: 1024, width: 1536 };
  setTiling(vae, tileShapePlan(vae, 512, 512, { sampleShape })!);
  setTiling(vae, tileOverlapPlan(vae, 128, 128, { sampleShape })!);
  const report = planReport(vae, sampleShape, 3);
  assert.equal(out[0], `12 tiles (3 × 4), decoded-area ratio 1.563, imbalance ${(report.imbalance * 100).toFixed(1)}%`);
  assert.deepEqual(
    out.slice(1, 4),
    report.ranks.map((r) => `rank ${r.rank}: tiles ${r.tiles.join(', ')} (load ${r.load})`),
  );
  const picks = searchPlans(planningVae('autoencoder-kl'), sampleShape, 3).picks;
  const shown = Object.entries(picks)
    .filter(([, p]) => p !== null)
    .map(([name]) => name);
  assert.deepEqual(
    out.slice(4).map((l) => l.split(':')[0]),
    shown,
  );
});
