import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { planningVae } from '../../src/families/registry.js';
import { setTiling } from '../../src/plan/planner.js';
import { planReport } from '../../src/plan/report.js';
import { flatten, parseBenchReport, readBenchReports, renderBenchReports } from './bench-reports.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-bench-'));
after(() => rmSync(dir, { recursive: true }));

const vae = planningVae('autoencoder-kl');
setTiling(vae);
const plan = planReport(vae, { height: 1024, width: 1024 }, 2);
const report = {
  schema: 1,
  ran: { machine: 'test box', cores: 2, node: 'v20' },
  cells: [
    {
      family: 'autoencoder-kl',
      height: 1024,
      width: 1024,
      ranks: 2,
      arms: [
        { name: 'none', latency: { min: 1.5, median: 1.75, max: 2 }, peakRssBytes: [1000, 2000], failed: false },
        { name: 'tile', latency: { min: 1.25, median: 1.3333333, max: 1.5 }, psnr: 41.23456, plan },
      ],
    },
  ],
};

test('no reports: the page says there are none yet', () => {
  assert.deepEqual(readBenchReports(join(dir, 'absent')), []);
  assert.match(renderBenchReports([]), /No committed reports yet/);
});

test('a report renders its machine, one table per cell with a row per arm, and its plans as figures', () => {
  writeFileSync(join(dir, 'b.json'), JSON.stringify(report));
  writeFileSync(join(dir, 'notes.txt'), 'ignored');
  const reports = readBenchReports(dir);
  assert.equal(reports.length, 1);
  const html = renderBenchReports(reports);
  assert.match(html, /<dt>machine<\/dt><dd>test box<\/dd>/);
  assert.match(html, /<h3>Cell 1: family autoencoder-kl · height 1024 · width 1024 · ranks 2<\/h3>/);
  assert.match(html, /<th scope="col">latency\.median<\/th>/);
  assert.match(html, /<th scope="row">tile<\/th><td>1\.25<\/td><td>1\.333<\/td><td>1\.5<\/td><td>–<\/td><td>–<\/td><td>41\.23<\/td>/);
  assert.match(html, /<th scope="row">none<\/th><td>1\.5<\/td><td>1\.75<\/td><td>2<\/td><td>1000 2000<\/td><td>no<\/td><td>–<\/td>/);
  assert.match(html, /<figure class="plan"><svg [^>]*data-tiles="9" data-ranks="2"/);
  assert.match(html, /<figcaption>arms\[1\]\.plan<\/figcaption>/);
});

test('flattening keeps scalars, dots nested objects and leaves plans to the figures', () => {
  assert.deepEqual(flatten({ a: 1, b: { c: 'x', d: { e: null } }, plan, list: [{ x: 1 }], scalars: [1, 2] }), [
    ['a', 1],
    ['b.c', 'x'],
    ['b.d.e', null],
    ['scalars', [1, 2]],
  ]);
});

test('a file that is not a schema-1 report fails the build with its name', () => {
  assert.throws(() => parseBenchReport('x.json', '[]'), /bench\/results\/x\.json: not a JSON object/);
  assert.throws(() => parseBenchReport('x.json', '{"schema":2,"ran":{},"cells":[]}'), /schema is 2, this site renders schema 1/);
  assert.throws(() => parseBenchReport('x.json', '{"schema":1,"ran":{},"cells":[1]}'), /"cells" is not a list of objects/);
});
