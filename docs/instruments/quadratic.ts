// The function instrument in the page: inputs `a`, `x` and `Prediction`, and Reset / Step /
// Play. Step reveals one stage of y = a·x²; Play runs the remaining stages as an animation; the
// last stage shows y, plots the point on the curve and judges the prediction. Native inputs and
// buttons, so it works from the keyboard (Tab, Enter, Space) and with screen readers.

import { escapeXml } from '../../src/bench/plan-figure.js';
import { STAGE_COUNT, formatNumber, plotScale, stageLines, verdict, verdictText } from './quadratic-model.js';

const PLAY_STEP_MS = 450;
const PLOT = { width: 340, height: 230, pad: 28 };

function mount(root: HTMLElement): void {
  root.innerHTML =
    `<div class="quad-inputs">` +
    `<div class="field"><label for="quad-a">a</label><input id="quad-a" type="number" step="any" inputmode="decimal" value="${escapeXml(root.dataset['a'] ?? '0.5')}"></div>` +
    `<div class="field"><label for="quad-x">x</label><input id="quad-x" type="number" step="any" inputmode="decimal" value="${escapeXml(root.dataset['x'] ?? '2')}"></div>` +
    `<div class="field"><label for="quad-prediction">Prediction</label><input id="quad-prediction" type="number" step="any" inputmode="decimal" aria-describedby="quad-prediction-hint"></div>` +
    `</div>` +
    `<p id="quad-prediction-hint" class="hint">Write what you expect y to be before you press Step or Play.</p>` +
    `<div class="quad-buttons"><button type="button" data-action="reset">Reset</button><button type="button" data-action="step">Step</button><button type="button" data-action="play">Play</button></div>` +
    `<p class="quad-progress" aria-live="polite"></p>` +
    `<ol class="quad-stages" aria-label="Stages"></ol>` +
    `<p class="quad-result">y = <output id="quad-y" for="quad-a quad-x">?</output></p>` +
    `<p class="quad-verdict" role="status" aria-live="polite"></p>` +
    `<svg class="quad-plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${PLOT.width} ${PLOT.height}" width="${PLOT.width}" height="${PLOT.height}" role="img" aria-label="Plot of y = a·x²"></svg>`;

  const field = (id: string) => root.querySelector<HTMLInputElement>(`#${id}`)!;
  const progress = root.querySelector<HTMLElement>('.quad-progress')!;
  const stages = root.querySelector<HTMLElement>('.quad-stages')!;
  const yOut = root.querySelector<HTMLOutputElement>('#quad-y')!;
  const verdictEl = root.querySelector<HTMLElement>('.quad-verdict')!;
  const plot = root.querySelector<SVGSVGElement>('.quad-plot')!;
  let stage = 0;
  let timer: ReturnType<typeof setInterval> | null = null;

  const number = (id: string): number | null => {
    const text = field(id).value.trim();
    return text === '' || !Number.isFinite(Number(text)) ? null : Number(text);
  };

  const stop = () => {
    if (timer !== null) clearInterval(timer);
    timer = null;
    root.dataset['playing'] = 'false';
  };

  const draw = (a: number, x: number, prediction: number | null, final: boolean) => {
    const s = plotScale(a, x, final ? prediction : null);
    const { width, height, pad } = PLOT;
    const px = (v: number) => pad + ((v - s.xMin) / (s.xMax - s.xMin)) * (width - 2 * pad);
    const py = (v: number) => height - pad - ((v - s.yMin) / (s.yMax - s.yMin)) * (height - 2 * pad);
    const parts = [
      `<line x1="${pad}" x2="${width - pad}" y1="${py(0)}" y2="${py(0)}" stroke="#888"/>`,
      `<line x1="${px(0)}" x2="${px(0)}" y1="${pad}" y2="${height - pad}" stroke="#888"/>`,
      `<text x="${width - pad + 4}" y="${py(0) + 4}" font-size="12">x</text><text x="${px(0) + 4}" y="${pad - 8}" font-size="12">y</text>`,
    ];
    if (final) {
      const points = Array.from({ length: 81 }, (_, i) => s.xMin + ((s.xMax - s.xMin) * i) / 80).map(
        (t) => `${px(t).toFixed(1)},${py(a * t * t).toFixed(1)}`,
      );
      parts.push(`<polyline class="curve" points="${points.join(' ')}" fill="none" stroke="#0072B2" stroke-width="2"/>`);
      if (prediction !== null) {
        parts.push(
          `<line x1="${px(x)}" x2="${px(x)}" y1="${py(prediction)}" y2="${py(a * x * x)}" stroke="#D55E00" stroke-dasharray="4 3"/>`,
        );
        parts.push(
          `<circle class="prediction" cx="${px(x)}" cy="${py(prediction)}" r="5" fill="none" stroke="#D55E00" stroke-width="2"><title>your prediction ${formatNumber(prediction)}</title></circle>`,
        );
      }
      parts.push(
        `<circle class="point" cx="${px(x)}" cy="${py(a * x * x)}" r="5" fill="#0072B2"><title>(${formatNumber(x)}, ${formatNumber(a * x * x)})</title></circle>`,
      );
      // The label goes on the side of the point with more room, clear of the dashed prediction line.
      const right = px(x) < width / 2;
      parts.push(
        `<text x="${px(x) + (right ? 10 : -10)}" y="${Math.max(py(a * x * x) + 4, 14)}" font-size="12" text-anchor="${right ? 'start' : 'end'}">(${formatNumber(x)}, ${formatNumber(a * x * x)})</text>`,
      );
    }
    plot.innerHTML = parts.join('');
  };

  const render = () => {
    const a = number('quad-a');
    const x = number('quad-x');
    root.dataset['stage'] = String(stage);
    if (a === null || x === null) {
      progress.textContent = `Write numbers for ${[a === null ? 'a' : '', x === null ? 'x' : ''].filter(Boolean).join(' and ')} to compute.`;
      stages.innerHTML = '';
      yOut.textContent = '?';
      verdictEl.textContent = '';
      delete root.dataset['verdict'];
      plot.innerHTML = '';
      return;
    }
    const final = stage === STAGE_COUNT;
    progress.textContent = stage === 0 ? `Ready: ${STAGE_COUNT} stages. Press Step or Play.` : `Stage ${stage} of ${STAGE_COUNT}.`;
    stages.innerHTML = stageLines(a, x, stage)
      .map((l) => `<li>${l}</li>`)
      .join('');
    const prediction = number('quad-prediction');
    draw(a, x, prediction, final);
    if (final) {
      const v = verdict(a, x, prediction);
      yOut.textContent = formatNumber(v.y);
      verdictEl.textContent = verdictText(v);
      root.dataset['verdict'] = v.kind;
    } else {
      yOut.textContent = '?';
      verdictEl.textContent = '';
      delete root.dataset['verdict'];
    }
  };

  const canCompute = () => number('quad-a') !== null && number('quad-x') !== null;
  const step = () => {
    if (canCompute() && stage < STAGE_COUNT) stage++;
    if (stage === STAGE_COUNT) stop();
    render();
  };

  root.querySelector('[data-action="reset"]')!.addEventListener('click', () => {
    stop();
    stage = 0;
    render();
  });
  root.querySelector('[data-action="step"]')!.addEventListener('click', () => {
    stop();
    step();
  });
  root.querySelector('[data-action="play"]')!.addEventListener('click', () => {
    if (timer !== null || !canCompute()) return render();
    if (stage === STAGE_COUNT) stage = 0;
    root.dataset['playing'] = 'true';
    render();
    timer = setInterval(step, PLAY_STEP_MS);
  });
  // New inputs make the shown stages stale; a new prediction is judged again at the end.
  for (const id of ['quad-a', 'quad-x']) {
    field(id).addEventListener('input', () => {
      stop();
      stage = 0;
      render();
    });
  }
  field('quad-prediction').addEventListener('input', render);
  render();
}

for (const root of document.querySelectorAll<HTMLElement>('[data-instrument="quadratic"]')) mount(root);
