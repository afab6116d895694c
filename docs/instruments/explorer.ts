// The tile window explorer in the page: a form (family, image size, frames, window, overlap,
// ranks) that redraws the plan to scale on every input, with the same figure (metrics beside it)
// the built pages use, or the planner's reasons when it refuses the request.

import { escapeXml, formatPercent, formatRatio, planFigureSvg } from '../../src/bench/plan-figure.js';
import { FAMILY_NAMES } from '../../src/families/registry.js';
import { reasonsTableHtml } from '../lib/reasons-table.js';
import { defaultVae, explore, fieldValue, MAX_TILES_DRAWN, type ExplorerInput } from './explorer-model.js';

type Field = Exclude<keyof ExplorerInput, 'family'>;

const FIELDS: { key: Field; label: string; group: string }[] = [
  { key: 'height', label: 'Image height', group: 'Image (px)' },
  { key: 'width', label: 'Image width', group: 'Image (px)' },
  { key: 'frames', label: 'Frames', group: 'Image (px)' },
  { key: 'windowHeight', label: 'Window height', group: 'Window (px)' },
  { key: 'windowWidth', label: 'Window width', group: 'Window (px)' },
  { key: 'overlapHeight', label: 'Overlap height', group: 'Overlap (px)' },
  { key: 'overlapWidth', label: 'Overlap width', group: 'Overlap (px)' },
  { key: 'ranks', label: 'Ranks', group: 'Ranks' },
];

function mount(root: HTMLElement): void {
  const d = root.dataset;
  const initialFamily = d['family'] ?? 'autoencoder-kl';
  const [wh, ww] = (d['window'] ?? '512x512').split('x');
  const [oh, ow] = (d['overlap'] ?? '128x128').split('x');
  const values: Record<Field, string> = {
    height: d['h'] ?? '1024',
    width: d['w'] ?? '1536',
    frames: d['frames'] ?? '1',
    windowHeight: wh!,
    windowWidth: ww!,
    overlapHeight: oh!,
    overlapWidth: ow!,
    ranks: d['ranks'] ?? '2',
  };

  const groups = [...new Set(FIELDS.map((f) => f.group))];
  root.innerHTML =
    `<div class="explorer-form">` +
    `<div class="field"><label for="ex-family">Family</label><select id="ex-family">${FAMILY_NAMES.map((n) => `<option value="${n}"${n === initialFamily ? ' selected' : ''}>${n}</option>`).join('')}</select></div>` +
    groups
      .map(
        (g) =>
          `<fieldset><legend>${escapeXml(g)}</legend>${FIELDS.filter((f) => f.group === g)
            .map(
              (f) =>
                `<div class="field"><label for="ex-${f.key}">${f.label}</label><input id="ex-${f.key}" name="${f.key}" type="number" min="0" inputmode="numeric" value="${escapeXml(values[f.key])}"></div>`,
            )
            .join('')}</fieldset>`,
      )
      .join('') +
    `</div>` +
    `<p class="explorer-summary" role="status" aria-live="polite"></p>` +
    `<div class="explorer-result"></div>`;

  const family = root.querySelector<HTMLSelectElement>('#ex-family')!;
  const input = (key: Field) => root.querySelector<HTMLInputElement>(`#ex-${key}`)!;
  const summary = root.querySelector<HTMLElement>('.explorer-summary')!;
  const result = root.querySelector<HTMLElement>('.explorer-result')!;

  const setSteps = () => {
    const vae = defaultVae(family.value);
    if (Array.isArray(vae)) return;
    const g = vae.geometry;
    for (const key of ['height', 'width', 'windowHeight', 'windowWidth', 'overlapHeight', 'overlapWidth'] as const)
      input(key).step = String(g.spatialRatio);
    input('frames').step = String(g.temporalRatio);
  };

  const render = () => {
    const read = Object.fromEntries(FIELDS.map((f) => [f.key, fieldValue(input(f.key).value)])) as Record<Field, number | string>;
    const outcome = explore({ family: family.value, ...read });
    root.dataset['state'] = outcome.kind;
    if (outcome.kind === 'refused') {
      summary.textContent = `Refused by the planner (${outcome.stage}): ${outcome.reasons.length} reason(s).`;
      result.innerHTML = reasonsTableHtml(outcome.reasons);
      return;
    }
    if (outcome.kind === 'too-many-tiles') {
      const m = outcome.metrics;
      summary.textContent = `${m.tiles} tiles (${m.rows} × ${m.columns}): decoded-area ratio ${formatRatio(m.decodedAreaRatio)}, activation share ${formatPercent(m.activationShare)}, ${m.seams} seams.`;
      result.innerHTML = `<p class="notice">This explorer draws and schedules up to ${MAX_TILES_DRAWN} tiles; this window makes ${m.tiles}. Choose a larger window to see the grid and the per-rank loads.</p>`;
      return;
    }
    const r = outcome.report;
    summary.textContent = `${r.tiles} tile(s), decoded-area ratio ${formatRatio(r.decodedAreaRatio)}, activation share ${formatPercent(r.activationShare)}, ${r.seams} seam(s), imbalance ${formatPercent(r.imbalance)}.${r.note ? ` ${r.note}.` : ''}`;
    result.innerHTML = `<figure class="plan">${planFigureSvg(r, { idPrefix: 'explorer' })}</figure>`;
  };

  // A new family starts from its own default window and overlap.
  family.addEventListener('change', () => {
    const vae = defaultVae(family.value);
    if (!Array.isArray(vae)) {
      const t = vae.config.tiling;
      input('windowHeight').value = String(t.window.height);
      input('windowWidth').value = String(t.window.width);
      input('overlapHeight').value = String(t.overlap.height);
      input('overlapWidth').value = String(t.overlap.width);
      if (!vae.geometry.fiveDimLatents) input('frames').value = '1';
      setSteps();
    }
    render();
  });
  root.addEventListener('input', (e) => {
    if (e.target !== family) render();
  });
  setSteps();
  render();
}

for (const root of document.querySelectorAll<HTMLElement>('[data-instrument="explorer"]')) mount(root);
