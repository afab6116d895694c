// The cost-scaling chart: how a term proportional to area (local operations) and one
// proportional to area² (global attention over all positions) grow with a square image's side,
// both set to 1 at 512 × 512. It shows shapes of growth only; it is not a measurement.

import { escapeXml } from '../../src/bench/plan-figure.js';

const SIDES = [256, 512, 1024, 2048];
const REFERENCE_SIDE = 512;

export const localCost = (side: number) => (side / REFERENCE_SIDE) ** 2;
export const attentionCost = (side: number) => (side / REFERENCE_SIDE) ** 4;

export function scalingChartSvg(): string {
  const w = 560;
  const h = 320;
  const left = 64;
  const right = 150;
  const top = 20;
  const bottom = 48;
  const xMin = Math.log2(SIDES[0]!);
  const xMax = Math.log2(SIDES[SIDES.length - 1]!);
  const yMin = -4;
  const yMax = 8;
  const x = (side: number) => left + ((Math.log2(side) - xMin) / (xMax - xMin)) * (w - left - right);
  const y = (cost: number) => top + (1 - (Math.log2(cost) - yMin) / (yMax - yMin)) * (h - top - bottom);
  const curve = (f: (s: number) => number) =>
    Array.from({ length: 61 }, (_, i) => 2 ** (xMin + ((xMax - xMin) * i) / 60))
      .map((s) => `${x(s).toFixed(1)},${y(f(s)).toFixed(1)}`)
      .join(' ');
  const yTicks = Array.from({ length: (yMax - yMin) / 2 + 1 }, (_, i) => yMin + 2 * i);
  const grid = [
    ...yTicks.map(
      (t) =>
        `<line x1="${left}" x2="${w - right}" y1="${y(2 ** t).toFixed(1)}" y2="${y(2 ** t).toFixed(1)}" stroke="#dddddd"/><text x="${left - 8}" y="${(y(2 ** t) + 4).toFixed(1)}" text-anchor="end">${t < 0 ? `1/${2 ** -t}` : 2 ** t}</text>`,
    ),
    ...SIDES.map(
      (s) =>
        `<line x1="${x(s).toFixed(1)}" x2="${x(s).toFixed(1)}" y1="${top}" y2="${h - bottom}" stroke="#dddddd"/><text x="${x(s).toFixed(1)}" y="${h - bottom + 18}" text-anchor="middle">${s}²</text>`,
    ),
  ];
  const last = SIDES[SIDES.length - 1]!;
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-labelledby="scaling-title" font-family="system-ui, sans-serif" font-size="12">` +
    `<title id="scaling-title">Relative cost against image size: area and area squared, both 1 at ${REFERENCE_SIDE} × ${REFERENCE_SIDE}</title>` +
    grid.join('') +
    `<polyline points="${curve(localCost)}" fill="none" stroke="#0072B2" stroke-width="2.5"/>` +
    `<polyline points="${curve(attentionCost)}" fill="none" stroke="#D55E00" stroke-width="2.5" stroke-dasharray="6 4"/>` +
    `<text x="${x(last) + 8}" y="${y(localCost(last)) + 4}" fill="#0072B2">local ops ∝ area</text>` +
    `<text x="${x(last) + 8}" y="${y(attentionCost(last)) + 4}" fill="#D55E00">attention ∝ area²</text>` +
    `<text x="${(left + w - right) / 2}" y="${h - 8}" text-anchor="middle">image size (px, square, log scale)</text>` +
    `<text x="14" y="${(top + h - bottom) / 2}" text-anchor="middle" transform="rotate(-90 14 ${(top + h - bottom) / 2})">relative cost (log scale)</text>` +
    `</svg>`;
  const rows = SIDES.map((s) => `<tr><th scope="row">${s} × ${s}</th><td>${localCost(s)}</td><td>${attentionCost(s)}</td></tr>`).join('');
  const table = `<table class="scaling"><thead><tr><th scope="col">image</th><th scope="col">area term</th><th scope="col">area² term</th></tr></thead><tbody>${rows}</tbody></table>`;
  return `<figure class="scaling" id="fig-scaling">${svg}<figcaption>${escapeXml(`Growth of a cost term proportional to area and one proportional to area², both 1 at ${REFERENCE_SIDE} × ${REFERENCE_SIDE}. Shapes of growth, not measured times.`)}</figcaption>${table}</figure>`;
}
