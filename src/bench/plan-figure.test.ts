import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import { tileOverlapPlan, tileShapePlan, setTiling } from '../plan/planner.js';
import { planReport, type PlanReport } from '../plan/report.js';
import type { SampleShape } from '../plan/shapes.js';
import { escapeXml, formatPercent, formatRatio, planFigureSvg, planMetricLines, rankColour } from './plan-figure.js';

function report(sample: SampleShape, window: [number, number], overlap: [number, number], ranks: number): PlanReport {
  const vae = planningVae('autoencoder-kl');
  setTiling(vae, tileShapePlan(vae, window[0], window[1], { sampleShape: sample })!);
  setTiling(vae, tileOverlapPlan(vae, overlap[0], overlap[1], { sampleShape: sample })!);
  return planReport(vae, sample, ranks);
}

interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
  attrs: Record<string, string>;
}

function rects(svg: string, selector: RegExp): Rect[] {
  return [...svg.matchAll(/<rect ([^>]*?)\/?>/g)]
    .map((m) => Object.fromEntries([...m[1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1]!, a[2]!])))
    .filter((attrs) =>
      selector.test(
        Object.entries(attrs)
          .map(([k, v]) => `${k}=${v}`)
          .join(' '),
      ),
    )
    .map((attrs) => ({
      x: Number(attrs['x']),
      y: Number(attrs['y']),
      width: Number(attrs['width']),
      height: Number(attrs['height']),
      attrs,
    }));
}

/** Every element opened is closed in order (a well-formedness check without an XML parser). */
function assertBalanced(svg: string): void {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-zA-Z]+)[^>]*?(\/?)>/g)) {
    if (m[3] === '/') continue;
    if (m[1] === '/') assert.equal(stack.pop(), m[2], `closing </${m[2]}> out of order`);
    else stack.push(m[2]!);
  }
  assert.deepEqual(stack, []);
}

// 1024 × 1536 px on AutoencoderKL (8 px per latent unit): latent 128 × 192, window 64 latent,
// stride 48 → row starts 0, 48, 96 and column starts 0, 48, 96, 144.
const sample = { height: 1024, width: 1536 };
const grid = report(sample, [512, 512], [128, 128], 3);
const svg = planFigureSvg(grid, { drawingSize: 384 });

test('kept crops are drawn to scale and partition the image', () => {
  const scale = 384 / 1536; // SVG units per output pixel
  const tiles = rects(svg, /data-tile=/);
  assert.equal(tiles.length, 12);
  const rowStarts = [0, 48, 96];
  const colStarts = [0, 48, 96, 144];
  const owned = (starts: number[], i: number, length: number) => [starts[i]!, starts[i + 1] ?? length];
  for (const t of tiles) {
    const index = Number(t.attrs['data-tile']);
    const [y0, y1] = owned(rowStarts, Math.floor(index / 4), 128);
    const [x0, x1] = owned(colStarts, index % 4, 192);
    assert.ok(Math.abs(t.x - (16 + x0! * 8 * scale)) < 0.01, `tile ${index} x`);
    assert.ok(Math.abs(t.y - (40 + y0! * 8 * scale)) < 0.01, `tile ${index} y`);
    assert.ok(Math.abs(t.width - (x1! - x0!) * 8 * scale) < 0.01, `tile ${index} width`);
    assert.ok(Math.abs(t.height - (y1! - y0!) * 8 * scale) < 0.01, `tile ${index} height`);
  }
  const area = tiles.reduce((s, t) => s + t.width * t.height, 0);
  assert.ok(Math.abs(area - 1024 * scale * 1536 * scale) < 0.1);
});

test('tiles are coloured by the rank the schedule gave them', () => {
  const tiles = rects(svg, /data-tile=/);
  for (const r of grid.ranks) {
    for (const index of r.tiles) {
      const t = tiles.find((x) => x.attrs['data-tile'] === String(index))!;
      assert.equal(t.attrs['data-rank'], String(r.rank));
      assert.equal(t.attrs['fill'], rankColour(r.rank));
    }
  }
  assert.equal(new Set(grid.ranks.map((r) => rankColour(r.rank))).size, 3);
  assert.equal(new Set(Array.from({ length: 40 }, (_, r) => rankColour(r))).size, 40);
});

test('overlap bands: one per interior crop line, as deep as the overlap', () => {
  const bands = rects(svg, /class=overlap-band/);
  assert.equal(bands.filter((b) => b.attrs['data-axis'] === 'height').length, 2);
  assert.equal(bands.filter((b) => b.attrs['data-axis'] === 'width').length, 3);
  for (const b of bands) {
    const depth = b.attrs['data-axis'] === 'height' ? b.height : b.width;
    assert.ok(Math.abs(depth - 128 * (384 / 1536)) < 0.01);
  }
});

test('the metrics beside the drawing are the report numbers, formatted once', () => {
  // Σ tile extents: rows 64 + 64 + 32 = 160, columns 64 + 64 + 64 + 48 = 240 → 38400 / 24576.
  assert.equal(formatRatio(grid.decodedAreaRatio), '1.563');
  assert.ok(svg.includes('Decoded-area ratio:</tspan> 1.563'));
  assert.ok(svg.includes(`Imbalance:</tspan> ${formatPercent(grid.imbalance)}`));
  assert.ok(svg.includes('Seams:</tspan> 17'));
  assert.ok(svg.includes('Tiles:</tspan> 12 (3 rows × 4 columns)'));
  assert.equal(planMetricLines(grid).find((l) => l.label === 'Activation share')!.value, '16.7%');
  assert.match(svg, /data-tiles="12" data-ranks="3"/);
  assertBalanced(svg);
});

test('an untiled latent is one crop without bands; idle ranks are listed', () => {
  const whole = report({ height: 256, width: 256 }, [512, 512], [0, 0], 2);
  const figure = planFigureSvg(whole);
  assert.equal(rects(figure, /data-tile=/).length, 1);
  assert.equal(rects(figure, /class=overlap-band/).length, 0);
  assert.ok(figure.includes('rank 1: idle'));
  assert.ok(figure.includes('Ranks:</tspan> 2 (1 idle)'));
  assertBalanced(figure);
});

test('text is escaped and ids carry the given prefix', () => {
  const figure = planFigureSvg({ ...grid, family: 'a<b&"c"' }, { idPrefix: 'fig7' });
  assert.ok(figure.includes('a&lt;b&amp;&quot;c&quot;'));
  assert.ok(!figure.includes('a<b'));
  assert.match(figure, /<pattern id="fig7-hatch"/);
  assert.equal(escapeXml('<&>"'), '&lt;&amp;&gt;&quot;');
  assertBalanced(figure);
});
