// Benchmark reports (`bench/results/*.json`, schema 1: `{ schema, ran, cells }`) rendered as
// HTML without knowing every field in advance: `ran` becomes a definition list; each cell's
// scalar fields become its heading line, and each list (or map) of objects inside a cell — the
// arms — becomes a table whose columns are the union of their scalar fields, nested objects
// flattened to dotted names. Anything shaped like a plan report is also drawn as a plan figure.

import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { escapeXml, planFigureSvg } from '../../src/bench/plan-figure.js';
import type { PlanReport } from '../../src/plan/report.js';

export interface BenchReport {
  file: string;
  schema: number;
  ran: Record<string, unknown>;
  cells: Record<string, unknown>[];
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function readBenchReports(dir: string): BenchReport[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => parseBenchReport(file, readFileSync(join(dir, file), 'utf8')));
}

export function parseBenchReport(file: string, text: string): BenchReport {
  const data = JSON.parse(text) as Json;
  const fail = (what: string): never => {
    throw new Error(`bench/results/${file}: ${what} (expected { "schema": 1, "ran": {...}, "cells": [...] })`);
  };
  if (!isObject(data)) return fail('not a JSON object');
  if (data['schema'] !== 1) fail(`schema is ${JSON.stringify(data['schema'])}, this site renders schema 1`);
  if (!isObject(data['ran'])) fail('"ran" is not an object');
  if (!Array.isArray(data['cells']) || !data['cells'].every(isObject)) fail('"cells" is not a list of objects');
  return { file, schema: 1, ran: data['ran'] as Record<string, unknown>, cells: data['cells'] as Record<string, unknown>[] };
}

function isObject(v: unknown): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isScalar(v: unknown): v is string | number | boolean | null {
  return v === null || ['string', 'number', 'boolean'].includes(typeof v);
}

export function formatValue(v: unknown): string {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : Number(v.toPrecision(4)).toString();
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (Array.isArray(v)) return v.every(isScalar) ? v.map(formatValue).join(' ') : `${v.length} item(s)`;
  return String(v);
}

/** Scalar fields of an object, nested objects flattened to dotted names (plan reports left out). */
export function flatten(value: Record<string, unknown>, prefix = ''): [string, unknown][] {
  return Object.entries(value).flatMap(([k, v]): [string, unknown][] => {
    const key = prefix + k;
    if (isObject(v)) return looksLikePlanReport(v) ? [] : flatten(v, `${key}.`);
    if (Array.isArray(v) && !v.every(isScalar)) return [];
    return [[key, v]];
  });
}

export function looksLikePlanReport(v: unknown): v is PlanReport {
  return (
    isObject(v) &&
    Array.isArray(v['tileList']) &&
    Array.isArray(v['ranks']) &&
    isObject(v['sample']) &&
    isObject(v['latent']) &&
    isObject(v['window']) &&
    isObject(v['overlap'])
  );
}

/** Lists (or maps) of objects inside a cell: the cell's arms or other per-row data. */
function rowGroups(cell: Record<string, unknown>): { name: string; rows: { label: string; value: Record<string, unknown> }[] }[] {
  const groups: { name: string; rows: { label: string; value: Record<string, unknown> }[] }[] = [];
  for (const [name, v] of Object.entries(cell)) {
    if (Array.isArray(v) && v.length > 0 && v.every(isObject)) {
      groups.push({ name, rows: v.map((row, i) => ({ label: String(row['name'] ?? row['arm'] ?? i), value: row })) });
    } else if (isObject(v) && !looksLikePlanReport(v) && Object.values(v).length > 0 && Object.values(v).every(isObject)) {
      groups.push({ name, rows: Object.entries(v).map(([label, row]) => ({ label, value: row as Record<string, unknown> })) });
    }
  }
  return groups;
}

function table(rows: { label: string; value: Record<string, unknown> }[]): string {
  const flat = rows.map((r) => new Map(flatten(r.value)));
  const columns = [...new Set(flat.flatMap((m) => [...m.keys()]))].filter((c) => c !== 'name' && c !== 'arm');
  const head = `<tr><th scope="col">arm</th>${columns.map((c) => `<th scope="col">${escapeXml(c)}</th>`).join('')}</tr>`;
  const body = rows
    .map(
      (r, i) =>
        `<tr><th scope="row">${escapeXml(r.label)}</th>${columns.map((c) => `<td>${escapeXml(formatValue(flat[i]!.get(c)))}</td>`).join('')}</tr>`,
    )
    .join('');
  return `<div class="table-scroll"><table class="bench-table"><thead>${head}</thead><tbody>${body}</tbody></table></div>`;
}

function planFigures(value: unknown, idPrefix: string, path = ''): string[] {
  if (looksLikePlanReport(value))
    return [
      `<figure class="plan">${planFigureSvg(value, { idPrefix: `${idPrefix}-${path.replace(/[^A-Za-z0-9]+/g, '-')}` })}<figcaption>${escapeXml(path)}</figcaption></figure>`,
    ];
  if (Array.isArray(value)) return value.flatMap((v, i) => planFigures(v, idPrefix, `${path}[${i}]`));
  if (isObject(value)) return Object.entries(value).flatMap(([k, v]) => planFigures(v, idPrefix, path ? `${path}.${k}` : k));
  return [];
}

export function renderBenchReports(reports: BenchReport[]): string {
  if (reports.length === 0)
    return '<p class="notice">No committed reports yet: <code>bench/results/</code> holds no <code>*.json</code> report in this build.</p>';
  return reports
    .map((report, r) => {
      const ran = Object.entries(report.ran)
        .map(([k, v]) => `<dt>${escapeXml(k)}</dt><dd>${escapeXml(isObject(v) ? JSON.stringify(v) : formatValue(v))}</dd>`)
        .join('');
      const cells = report.cells.map((cell, c) => {
        const heading = Object.entries(cell)
          .filter(([, v]) => isScalar(v))
          .map(([k, v]) => `${k} ${formatValue(v)}`)
          .join(' · ');
        const groups = rowGroups(cell).map((g) => `<h4>${escapeXml(g.name)}</h4>${table(g.rows)}`);
        return `<section class="bench-cell"><h3>Cell ${c + 1}${heading ? `: ${escapeXml(heading)}` : ''}</h3>${groups.join('')}${planFigures(cell, `bench${r}-cell${c}`).join('')}</section>`;
      });
      return `<section class="bench-report" id="report-${r + 1}"><h2><code>${escapeXml(report.file)}</code></h2><dl class="bench-ran">${ran}</dl>${cells.join('')}</section>`;
    })
    .join('');
}
