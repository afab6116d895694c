// Plan figures: a plan report drawn to scale as an SVG string — each tile's kept crop filled
// with its rank's colour (the crops partition the output exactly), the overlap bands that are
// decoded twice and blended hatched, and the plan's metrics beside the drawing. Pure (no DOM,
// no I/O) so the documentation build, the in-page explorer and the benchmark report draw the
// same picture from the same numbers; the metric formatters here are the ones prose quotes.

import type { PlanReport } from '../plan/report.js';

export interface PlanFigureOptions {
  /** Longest side of the drawing in SVG units (the image is scaled uniformly to it). */
  drawingSize?: number;
  /** Prefix for the ids inside the SVG; must be unique among figures on one HTML page. */
  idPrefix?: string;
  /** Caption line above the drawing; defaults to family, size, window and overlap. */
  title?: string;
}

export interface MetricLine {
  label: string;
  value: string;
}

/** Colour-blind-safe rank colours (Okabe–Ito without black); ranks beyond them get spread hues. */
const RANK_COLOURS = ['#E69F00', '#56B4E9', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7', '#999999'];

export function rankColour(rank: number): string {
  if (rank < RANK_COLOURS.length) return RANK_COLOURS[rank]!;
  const hue = Math.round((rank * 137.508) % 360);
  return `hsl(${hue}, 60%, 62%)`;
}

export function formatRatio(v: number): string {
  return v.toFixed(3);
}

export function formatPercent(v: number): string {
  return `${(v * 100).toFixed(1)}%`;
}

export function formatSize(s: { height: number; width: number }, unit = ''): string {
  return `${s.height} × ${s.width}${unit}`;
}

/** The metrics shown beside a plan figure (and by the explorer), in reading order. */
export function planMetricLines(report: PlanReport): MetricLine[] {
  const video = report.sample.frames > 1 || report.latent.frames > 1;
  const lines: MetricLine[] = [
    { label: 'Family', value: `${report.family} (${report.className})` },
    { label: 'Sample', value: formatSize(report.sample, ' px') + (video ? ` × ${report.sample.frames} frames` : '') },
    { label: 'Latent', value: formatSize(report.latent) + (video ? ` × ${report.latent.frames} frames` : '') },
    { label: 'Window', value: formatSize(report.window, ' px') },
    { label: 'Overlap', value: formatSize(report.overlap, ' px') },
    { label: 'Stride', value: formatSize(report.stride, ' latent') },
    { label: 'Tiles', value: `${report.tiles} (${count(report.rows, 'row')} × ${count(report.columns, 'column')})` },
    { label: 'Decoded-area ratio', value: formatRatio(report.decodedAreaRatio) },
    { label: 'Activation share', value: formatPercent(report.activationShare) },
    { label: 'Seams', value: String(report.seams) },
    { label: 'Ranks', value: `${report.ranks.length}${report.idleRanks > 0 ? ` (${report.idleRanks} idle)` : ''}` },
    { label: 'Imbalance', value: formatPercent(report.imbalance) },
  ];
  if (report.frames) {
    lines.push({
      label: 'Frame tiling',
      value: report.frames.enabled ? `${report.frames.window} / ${report.frames.overlap} frames, ${report.frames.chunks} chunk(s)` : 'off',
    });
  }
  lines.push({ label: 'diffusers-equivalent', value: report.diffusersEquivalent ? 'yes' : 'no' });
  return lines;
}

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Distinct tile starts along one axis with the kept (owned) range of each: [start, next start). */
function ownedRanges(starts: number[], length: number): Map<number, { start: number; end: number }> {
  const sorted = [...new Set(starts)].sort((a, b) => a - b);
  return new Map(sorted.map((s, i) => [s, { start: s, end: sorted[i + 1] ?? length }]));
}

/** Bands decoded by two neighbouring tiles on one axis: [next start, previous end). */
function overlapBands(spans: { start: number; end: number }[]): { start: number; end: number }[] {
  const sorted = [...new Map(spans.map((s) => [s.start, s])).values()].sort((a, b) => a.start - b.start);
  const bands: { start: number; end: number }[] = [];
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i - 1]!.end > sorted[i]!.start) bands.push({ start: sorted[i]!.start, end: sorted[i - 1]!.end });
  }
  return bands;
}

const fmtCoord = (v: number) => Number(v.toFixed(2)).toString();

export function planFigureSvg(report: PlanReport, options: PlanFigureOptions = {}): string {
  const drawingSize = options.drawingSize ?? 440;
  const id =
    options.idPrefix ??
    `plan-${report.family}-${report.sample.height}x${report.sample.width}-${report.window.height}x${report.window.width}-${report.overlap.height}x${report.overlap.width}-r${report.ranks.length}`;
  const ratio = report.sample.height / report.latent.height;
  const scale = drawingSize / Math.max(report.sample.height, report.sample.width);
  const drawW = report.sample.width * scale;
  const drawH = report.sample.height * scale;
  const pad = 16;
  const top = 40;
  const px = (latent: number) => latent * ratio * scale;

  const rankOf = new Map<number, number>();
  report.ranks.forEach((r) => r.tiles.forEach((t) => rankOf.set(t, r.rank)));
  const rowsOwned = ownedRanges(
    report.tileList.map((t) => t.y0),
    report.latent.height,
  );
  const colsOwned = ownedRanges(
    report.tileList.map((t) => t.x0),
    report.latent.width,
  );

  const owned: string[] = [];
  const labels: string[] = [];
  for (const t of report.tileList) {
    const rows = rowsOwned.get(t.y0)!;
    const cols = colsOwned.get(t.x0)!;
    const rank = rankOf.get(t.index) ?? 0;
    const x = pad + px(cols.start);
    const y = top + px(rows.start);
    const w = px(cols.end - cols.start);
    const h = px(rows.end - rows.start);
    owned.push(
      `<rect x="${fmtCoord(x)}" y="${fmtCoord(y)}" width="${fmtCoord(w)}" height="${fmtCoord(h)}" fill="${rankColour(rank)}" stroke="#ffffff" stroke-width="1" data-tile="${t.index}" data-rank="${rank}"><title>tile ${t.index} (row ${t.row}, column ${t.col}) on rank ${rank}: latent rows ${t.y0}–${t.y1}, columns ${t.x0}–${t.x1}</title></rect>`,
    );
    // A label only where it fits (about 0.6 em per character at this font).
    const label = `#${t.index} r${rank}`;
    const size = Math.min(12, h * 0.6);
    if (h >= 14 && w >= label.length * size * 0.6 + 4) {
      labels.push(
        `<text x="${fmtCoord(x + w / 2)}" y="${fmtCoord(y + h / 2 + size * 0.35)}" font-size="${fmtCoord(size)}" text-anchor="middle">${label}</text>`,
      );
    }
  }

  const bands: string[] = [];
  for (const b of overlapBands(report.tileList.map((t) => ({ start: t.y0, end: t.y1 })))) {
    bands.push(
      `<rect class="overlap-band" data-axis="height" x="${fmtCoord(pad)}" y="${fmtCoord(top + px(b.start))}" width="${fmtCoord(drawW)}" height="${fmtCoord(px(b.end - b.start))}" fill="url(#${id}-hatch)"/>`,
    );
  }
  for (const b of overlapBands(report.tileList.map((t) => ({ start: t.x0, end: t.x1 })))) {
    bands.push(
      `<rect class="overlap-band" data-axis="width" x="${fmtCoord(pad + px(b.start))}" y="${fmtCoord(top)}" width="${fmtCoord(px(b.end - b.start))}" height="${fmtCoord(drawH)}" fill="url(#${id}-hatch)"/>`,
    );
  }

  const panelX = pad + drawW + 28;
  const lineHeight = 18;
  const metricText = planMetricLines(report).map(
    (l, i) =>
      `<text x="${fmtCoord(panelX)}" y="${fmtCoord(top + 12 + i * lineHeight)}"><tspan font-weight="600">${escapeXml(l.label)}:</tspan> ${escapeXml(l.value)}</text>`,
  );
  const legendTop = top + 12 + (metricText.length + 0.5) * lineHeight;
  const legend = report.ranks.map((r, i) => {
    const y = legendTop + i * lineHeight;
    const tiles = r.tiles.length === 0 ? 'idle' : `tiles ${listText(r.tiles)} · load ${r.load}`;
    return `<rect x="${fmtCoord(panelX)}" y="${fmtCoord(y - 10)}" width="12" height="12" fill="${rankColour(r.rank)}" stroke="#333" stroke-width="0.5"/><text x="${fmtCoord(panelX + 18)}" y="${fmtCoord(y)}">rank ${r.rank}: ${tiles}</text>`;
  });
  const hatchLegendY = legendTop + report.ranks.length * lineHeight;
  const hatchLegend = `<rect x="${fmtCoord(panelX)}" y="${fmtCoord(hatchLegendY - 10)}" width="12" height="12" fill="url(#${id}-hatch)" stroke="#333" stroke-width="0.5"/><text x="${fmtCoord(panelX + 18)}" y="${fmtCoord(hatchLegendY)}">overlap: decoded twice, blended</text>`;

  const panelW = 400;
  const width = Math.ceil(panelX + panelW);
  const height = Math.ceil(Math.max(top + drawH, hatchLegendY + 8) + pad);
  const title =
    options.title ??
    `${report.family}: ${formatSize(report.sample, ' px')}, window ${formatSize(report.window)}, overlap ${formatSize(report.overlap)}, ${report.ranks.length} rank(s)`;
  const desc = `${report.tiles} tile(s) in ${report.rows} × ${report.columns}; decoded-area ratio ${formatRatio(report.decodedAreaRatio)}, activation share ${formatPercent(report.activationShare)}, ${report.seams} seam(s), imbalance ${formatPercent(report.imbalance)}`;

  return [
    `<svg xmlns="http://www.w3.org/2000/svg" class="plan-figure" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-labelledby="${id}-title ${id}-desc" data-tiles="${report.tiles}" data-ranks="${report.ranks.length}" font-family="system-ui, sans-serif" font-size="13">`,
    `<title id="${id}-title">${escapeXml(title)}</title>`,
    `<desc id="${id}-desc">${escapeXml(desc)}</desc>`,
    `<defs><pattern id="${id}-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="#000000" fill-opacity="0.08"/><line x1="0" y1="0" x2="0" y2="6" stroke="#000000" stroke-opacity="0.45" stroke-width="1.5"/></pattern></defs>`,
    `<text x="${pad}" y="24" font-size="14" font-weight="600">${escapeXml(title)}</text>`,
    `<g class="owned">${owned.join('')}</g>`,
    `<g class="overlap">${bands.join('')}</g>`,
    `<g class="labels" fill="#111111">${labels.join('')}</g>`,
    `<rect x="${fmtCoord(pad)}" y="${top}" width="${fmtCoord(drawW)}" height="${fmtCoord(drawH)}" fill="none" stroke="#222222" stroke-width="1.5"/>`,
    `<g class="metrics" fill="#111111">${metricText.join('')}${legend.join('')}${hatchLegend}</g>`,
    `</svg>`,
  ].join('');
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function listText(items: number[]): string {
  return items.length <= 8 ? items.join(', ') : `${items.slice(0, 8).join(', ')}, … (${items.length})`;
}
