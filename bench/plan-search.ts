// Plan-search benchmark (issue 2: a 4096 x 4096 search over 8 ranks must take under 100 ms).
// For each case: warm-up runs, then the median (and min / max) wall time of N timed runs of
// `searchPlans`, plus the median CPU time of this process (steadier than wall time on a
// shared machine). Prints a table and writes bench/results/plan-search.json.
//
//   npx tsx bench/plan-search.ts [--runs N] [--warmup N]

import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeRun } from '../src/bench/machine.js';
import type { SearchCandidate } from '../src/entries/plan.js';
import { planningVae, searchPlans, type SampleShape, type SearchResult } from '../src/index.js';

interface Case {
  family: string;
  sample: SampleShape;
  ranks: number;
}

const BUDGET_MS = 100;
const HEADLINE: Case = { family: 'autoencoder-kl', sample: { height: 4096, width: 4096 }, ranks: 8 };
const CASES: Case[] = [
  HEADLINE,
  { family: 'autoencoder-kl', sample: { height: 1024, width: 1024 }, ranks: 2 },
  { family: 'autoencoder-kl', sample: { height: 1024, width: 1536 }, ranks: 4 },
  { family: 'autoencoder-kl', sample: { height: 2048, width: 2048 }, ranks: 4 },
  { family: 'flux2', sample: { height: 2048, width: 2048 }, ranks: 8 },
  { family: 'tae', sample: { height: 4096, width: 4096 }, ranks: 8 },
  { family: 'autoencoder-kl', sample: { height: 4096, width: 4096 }, ranks: 16 },
  { family: 'autoencoder-kl', sample: { height: 8192, width: 8192 }, ranks: 8 },
  { family: 'autoencoder-kl', sample: { height: 1024, width: 16384 }, ranks: 8 },
  { family: 'wan', sample: { height: 720, width: 1280, frames: 81 }, ranks: 6 },
  { family: 'ltx2', sample: { height: 4096, width: 4096, frames: 121 }, ranks: 8 },
];

const { values } = parseArgs({ options: { runs: { type: 'string', default: '21' }, warmup: { type: 'string', default: '5' } } });
const runs = Number(values.runs);
const warmup = Number(values.warmup);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(warmup) || warmup < 0) {
  console.error(`--runs must be an integer >= 1 and --warmup >= 0 (got ${values.runs}, ${values.warmup})`);
  process.exit(2);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const windowText = (c: SearchCandidate | null) => (c ? `${c.window.height}x${c.window.width}` : null);

const results = CASES.map((c) => {
  const vae = planningVae(c.family);
  let result: SearchResult = searchPlans(vae, c.sample, c.ranks);
  for (let i = 0; i < warmup; i++) result = searchPlans(vae, c.sample, c.ranks);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    result = searchPlans(vae, c.sample, c.ranks);
    wall.push(performance.now() - t0);
    const used = process.cpuUsage(c0);
    cpu.push((used.user + used.system) / 1000);
  }
  const latent = { height: c.sample.height / vae.geometry.spatialRatio, width: c.sample.width / vae.geometry.spatialRatio };
  return {
    family: c.family,
    sample: c.sample,
    latent,
    ranks: c.ranks,
    candidates: result.candidates,
    frontier: result.frontier.length,
    picks: { coarse: windowText(result.picks.coarse), balanced: windowText(result.picks.balanced), fine: windowText(result.picks.fine) },
    medianMs: median(wall),
    minMs: Math.min(...wall),
    maxMs: Math.max(...wall),
    medianCpuMs: median(cpu),
  };
});

const fmt = (v: number) => v.toFixed(2).padStart(8);
const header = `${'family'.padEnd(15)}${'sample'.padEnd(17)}${'ranks'.padStart(6)}${'cand'.padStart(6)}${'front'.padStart(6)}${'median'.padStart(9)}${'min'.padStart(9)}${'max'.padStart(9)}${'cpu med'.padStart(9)}  picks (coarse / balanced / fine, px)`;
console.log(`searchPlans: ${warmup} warm-up + ${runs} timed runs per case (ms)`);
console.log(header);
for (const r of results) {
  const sample = `${r.sample.height}x${r.sample.width}${r.sample.frames ? `x${r.sample.frames}f` : ''}`;
  console.log(
    `${r.family.padEnd(15)}${sample.padEnd(17)}${String(r.ranks).padStart(6)}${String(r.candidates).padStart(6)}${String(r.frontier).padStart(6)} ${fmt(r.medianMs)} ${fmt(r.minMs)} ${fmt(r.maxMs)} ${fmt(r.medianCpuMs)}  ${r.picks.coarse} / ${r.picks.balanced} / ${r.picks.fine}`,
  );
}
const headline = results[0]!;
const verdict = headline.medianMs < BUDGET_MS ? 'within' : 'OVER';
console.log(
  `\n4096x4096 over 8 ranks: median ${headline.medianMs.toFixed(2)} ms (${verdict} the ${BUDGET_MS} ms budget); load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);

const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'plan-search.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      schema: 1,
      benchmark: 'plan-search',
      ran: {
        ...describeRun(['bench/plan-search.ts', ...process.argv.slice(2)], null),
        warmup,
        runs,
        budgetMs: BUDGET_MS,
      },
      headline: { case: '4096x4096 autoencoder-kl, 8 ranks', medianMs: headline.medianMs, withinBudget: headline.medianMs < BUDGET_MS },
      cells: results,
    },
    null,
    2,
  ) + '\n',
);
console.log(`wrote ${out}`);
