import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { publicEntries, readApi, renderApi } from './api-reference.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const entryFiles = publicEntries(ROOT, JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')));
const modules = entryFiles.flatMap(({ entry, file }) => readApi(file, entry));
const entries = new Map(modules.flatMap((m) => m.entries.map((e) => [e.name, { ...e, path: m.path, entry: m.entry }] as const)));

test('every runtime export of every public entry has an entry, under the entry and the module that declare it', async () => {
  assert.deepEqual(
    entryFiles.map((e) => e.entry),
    [
      'distvae',
      'distvae/plan',
      'distvae/families',
      'distvae/sources',
      'distvae/io',
      'distvae/decode',
      'distvae/graph',
      'distvae/memory',
      'distvae/ranks',
      'distvae/bench',
    ],
  );
  for (const { entry, file } of entryFiles) {
    const api = (await import(file)) as Record<string, unknown>;
    assert.deepEqual(
      Object.keys(api).filter((name) => entries.get(name)?.entry !== entry),
      [],
      entry,
    );
  }
  assert.equal(entries.get('planningVae')!.path, 'families/registry.ts');
  assert.equal(entries.get('tileShapePlan')!.path, 'plan/planner.ts');
  assert.equal(entries.get('tileShapePlan')!.entry, 'distvae/plan');
  assert.equal(entries.get('setTiling')!.entry, 'distvae');
  // Type-only exports are read from the code too.
  assert.equal(entries.get('PlanReport')!.kind, 'interface');
  assert.equal(entries.get('BucketPolicy')!.kind, 'type');
});

test('every export of every public entry, types included, carries JSDoc (the API page shows it)', () => {
  const undocumented = modules.flatMap((m) => m.entries.filter((e) => e.doc.trim() === '').map((e) => `${m.path}: ${e.kind} ${e.name}`));
  assert.deepEqual(undocumented, []);
});

test('signatures come without bodies or export keywords, with their JSDoc', () => {
  const e = entries.get('tileOverlapPlan')!;
  assert.equal(
    e.signature,
    'function tileOverlapPlan(vae: VaeSpec, overlapH: number, overlapW: number, options: PlanOptions = {}): TileOverlapPlan | null',
  );
  assert.equal(e.doc, 'Validates an exact overlap (output pixels) for the installed window; null when refused.');
  assert.equal(entries.get('FAMILIES')!.signature, 'const FAMILIES: readonly FamilySpec[]');
  const cls = entries.get('DistVaeError')!.signature;
  assert.match(cls, /^class DistVaeError extends Error \{\n/);
  assert.ok(cls.includes('  toJSON(): { code: ErrorCode; message: string; reasons: Reason[] }'));
  assert.ok(!cls.includes('return'));
  assert.match(modules.find((m) => m.path === 'plan/planner.ts')!.header, /^The planner contract/);
});

test('the HTML links type names to their entries', () => {
  const html = renderApi(modules);
  assert.match(html, /<section class="api-entry" id="api-tileOverlapPlan">/);
  assert.match(html, /tileOverlapPlan\(vae: <a href="#api-VaeSpec">VaeSpec<\/a>/);
  // Not inside comments: Reason's field comment mentions the word "reason", which is also an export.
  assert.match(html, /\/\*\* The request field the reason is about/);
});
