// The benchmark report: JSON (`{ schema: 1, ran, cells }`, the shape bench/results/ and the
// documentation site read), a Markdown table of the arms next to it, and one SVG figure per
// tiled plan (the plan figure with the arm's measurements beside it).

import { writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { planFigureSvg } from './plan-figure.js';
import type { ArmResult, BenchCell } from './arms.js';
import type { RunDescription } from './machine.js';

/** A `distvae bench` report (schema 1): what ran, and its cells. */
export interface BenchReport {
  schema: 1;
  benchmark: 'distvae bench';
  ran: RunDescription;
  cells: BenchCell[];
}

/** The report of cells run on the machine `ran` describes. */
export function benchReport(ran: RunDescription, cells: BenchCell[]): BenchReport {
  return { schema: 1, benchmark: 'distvae bench', ran, cells };
}

const mib = (bytes: number | undefined) => (bytes === undefined ? '–' : (bytes / 2 ** 20).toFixed(0));
const fixed = (v: number | null | undefined, digits: number) => (v === null || v === undefined ? '–' : v.toFixed(digits));
const db = (v: number | null | undefined, identical: boolean) => (identical ? 'identical' : fixed(v, 1));

function agreementCells(arm: ArmResult): [string, string, string] {
  const a = arm.agreement;
  if (!a) return ['–', '–', '–'];
  const seams =
    a.seamBand || a.interior
      ? `${db(a.seamBand?.psnr, a.seamBand?.maxAbs === 0)} / ${db(a.interior?.psnr, a.interior?.maxAbs === 0)}`
      : '–';
  return [a.maxAbs.toExponential(2), db(a.psnr, a.maxAbs === 0), seams];
}

/** The arms of one cell as a Markdown table, then what failed and why. */
export function cellMarkdown(cell: BenchCell): string {
  const sample = `${cell.sample.height}×${cell.sample.width}${cell.sample.frames > 1 ? `×${cell.sample.frames}f` : ''}`;
  const lines = [
    `### ${cell.family} (${cell.className}), ${sample} px, ${cell.ranks} rank(s)`,
    '',
    ...(cell.complete ? [] : [`**Incomplete**: written after ${cell.arms.length} arm(s); the run did not finish the others.`, '']),
    `Latent [${cell.latentDims.join(', ')}] (${cell.latentSource}); ${cell.warmup} warm-up + ${cell.repeat} timed run(s) per arm; reference: ${cell.reference ?? 'none available'}${cell.referenceNote ? ` (${cell.referenceNote})` : ''}; search: ${cell.search.candidates} candidate(s), ${cell.search.frontier} on the frontier.`,
    '',
    '| arm | window (px) | overlap | tiles | ranks | latency median (min–max) s | speedup | peak RSS MiB (per rank) | memory ratio | decoded area | activation share | seams | imbalance | collectives (calls / MiB) | max abs | PSNR dB | seam / interior PSNR dB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const notes: string[] = [];
  for (const arm of cell.arms) {
    if (arm.status !== 'ok') {
      notes.push(`- **${arm.name}**: ${arm.status} — ${arm.reason ?? ''}`);
      lines.push(
        `| ${arm.name} | ${arm.window ?? '–'} | ${arm.overlap ?? '–'} | ${arm.tiles ?? '–'} | ${arm.ranksUsed ?? '–'} | ${arm.status} |${' – |'.repeat(11)}`,
      );
      continue;
    }
    const lat = arm.latency!;
    const peaks = (arm.peakRssBytes ?? []).map((p) => (p === null ? 'idle' : mib(p))).join(' / ');
    const coll = arm.collectives!;
    lines.push(
      `| ${arm.name} | ${arm.window} | ${arm.overlap} | ${arm.tiles} | ${arm.ranksUsed} | ${lat.median.toFixed(2)} (${lat.min.toFixed(2)}–${lat.max.toFixed(2)}) | ${fixed(arm.speedup, 2)} | ${peaks} | ${fixed(arm.memoryRatio, 2)} | ${fixed(arm.decodedAreaRatio, 3)} | ${fixed(arm.activationShare, 3)} | ${arm.seams} | ${fixed(arm.imbalance, 3)} | ${coll.calls} / ${(coll.bytes / 2 ** 20).toFixed(1)} | ${agreementCells(arm).join(' | ')} |`,
    );
  }
  if (notes.length > 0) lines.push('', ...notes);
  return lines.join('\n') + '\n';
}

export function reportMarkdown(report: BenchReport, svgs: string[]): string {
  const r = report.ran;
  return [
    `# distvae bench`,
    '',
    `Ran ${r.date} on ${r.machine}, ${r.cpu} (${r.cores} cores), Node ${r.node}, onnxruntime ${r.onnxruntime}, commit ${r.commit ?? 'unknown'}, ${r.threads ?? 'default'} thread(s) per rank.`,
    '',
    `\`distvae ${r.argv.join(' ')}\``,
    '',
    ...report.cells.map(cellMarkdown),
    "Latency: wall time of the whole decode on the coordinator (latent out, output back). Peak RSS: each process rank's VmHWM during a timed run (idle ranks: idle). Speedup and memory ratio: against the reference arm. Max abs on the raw sample; PSNR on the [0, 1] image; seam bands are E output pixels on each side of a crop line (E = blend extent).",
    '',
    ...svgs.map((s) => `![${s}](${s})`),
    '',
  ].join('\n');
}

/** The SVG of a tiled arm: the plan drawn to scale, with the arm's measurements in its title. */
export function armFigure(cell: BenchCell, arm: ArmResult): string | null {
  if (!arm.plan) return null;
  const measured = arm.latency
    ? `, median ${arm.latency.median.toFixed(2)} s, peak RSS ${mib(arm.maxPeakRssBytes)} MiB, PSNR ${arm.agreement ? db(arm.agreement.psnr, arm.agreement.maxAbs === 0) : '–'} dB`
    : ` (${arm.status})`;
  return planFigureSvg(arm.plan, {
    idPrefix: `bench-${cell.family}-${cell.sample.height}x${cell.sample.width}-r${cell.ranks}-${arm.name}`,
    title: `${arm.name}: ${cell.family} ${cell.sample.height}×${cell.sample.width}, window ${arm.window}, ${arm.ranksUsed} rank(s)${measured}`,
  });
}

/** Writes `out` (JSON), the Markdown next to it and one SVG per plan; returns every path written. */
export function writeBenchReport(out: string, report: BenchReport): string[] {
  const base = join(dirname(out), basename(out, '.json'));
  const svgs: string[] = [];
  for (const cell of report.cells) {
    for (const arm of cell.arms) {
      const svg = armFigure(cell, arm);
      if (!svg) continue;
      const path = `${base}.${report.cells.length > 1 ? `${cell.family}-${cell.sample.height}x${cell.sample.width}-r${cell.ranks}.` : ''}${arm.name}.svg`;
      writeFileSync(path, svg);
      svgs.push(path);
    }
  }
  const md = `${base}.md`;
  writeFileSync(
    md,
    reportMarkdown(
      report,
      svgs.map((p) => basename(p)),
    ),
  );
  writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
  return [out, md, ...svgs];
}
