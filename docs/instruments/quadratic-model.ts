// The function instrument's arithmetic, without the DOM: y = a·x² computed in visible stages
// (x, then x², then a·x²), the tolerance a prediction is judged by, and the plot's scales.

export const STAGE_COUNT = 3;

/** The rule `tolerance` implements, in the words the page quotes. */
export const TOLERANCE_RULE = 'within 1% of y, or within 0.01 when |y| is below 1';

/** A prediction matches when it is within 1% of y, or within 0.01 when |y| < 1. */
export function tolerance(y: number): number {
  return 0.01 * Math.max(1, Math.abs(y));
}

export function predictionMatches(prediction: number, y: number): boolean {
  return Math.abs(prediction - y) <= tolerance(y) + Number.EPSILON * Math.abs(y);
}

/** Up to six significant digits, without trailing zeros. */
export function formatNumber(v: number): string {
  return Number(v.toPrecision(6)).toString();
}

/** The lines shown after `stage` steps (0 shows none). */
export function stageLines(a: number, x: number, stage: number): string[] {
  const lines = [
    `x = ${formatNumber(x)}`,
    `x² = ${formatNumber(x)} × ${formatNumber(x)} = ${formatNumber(x * x)}`,
    `y = a·x² = ${formatNumber(a)} × ${formatNumber(x * x)} = ${formatNumber(a * x * x)}`,
  ];
  return lines.slice(0, Math.max(0, Math.min(stage, STAGE_COUNT)));
}

export type Verdict =
  { kind: 'none'; y: number } | { kind: 'match' | 'mismatch'; y: number; prediction: number; error: number; tolerance: number };

export function verdict(a: number, x: number, prediction: number | null): Verdict {
  const y = a * x * x;
  if (prediction === null) return { kind: 'none', y };
  return {
    kind: predictionMatches(prediction, y) ? 'match' : 'mismatch',
    y,
    prediction,
    error: Math.abs(prediction - y),
    tolerance: tolerance(y),
  };
}

export function verdictText(v: Verdict): string {
  if (v.kind === 'none') return `y = ${formatNumber(v.y)}. No prediction was written.`;
  if (v.kind === 'match')
    return `Match: your prediction ${formatNumber(v.prediction)} is within ±${formatNumber(v.tolerance)} of y = ${formatNumber(v.y)}.`;
  return `Mismatch: your prediction ${formatNumber(v.prediction)} is off by ${formatNumber(v.error)} from y = ${formatNumber(v.y)} (tolerance ±${formatNumber(v.tolerance)}).`;
}

export interface PlotScale {
  xMin: number;
  xMax: number;
  yMin: number;
  yMax: number;
}

/** A symmetric x range that holds x with room to spare, and a y range that holds the curve, y = 0 and the prediction. */
export function plotScale(a: number, x: number, prediction: number | null): PlotScale {
  const span = Math.max(2, Math.abs(x) * 1.25);
  const ys = [0, a * span * span, a * x * x];
  if (prediction !== null) ys.push(prediction);
  let yMin = Math.min(...ys);
  let yMax = Math.max(...ys);
  if (yMax - yMin < 1e-9) {
    yMin -= 1;
    yMax += 1;
  }
  const margin = (yMax - yMin) * 0.08;
  return { xMin: -span, xMax: span, yMin: yMin - margin, yMax: yMax + margin };
}
