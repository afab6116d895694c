// The in-browser demo (docs/demo.html): pick weights and a latent or a photo, see the plan
// drawn, watch tiles land with progress and Cancel, compare whole and tiled, download the PNG.
// Query parameters drive it without a person (the automation contract on the page): with
// run=1 it decodes on load and leaves `data-distvae-state` and `window.distvaeResult`.

import {
  cropToMultiple,
  decodeInPage,
  drawSample,
  inputOfRgba,
  isDistVaeError,
  loadWebEncoder,
  loadWebVae,
  parseNpy,
  planWebDecode,
  readBytes,
  type ByteInput,
  type DecodeMode,
  type SampleRange,
  type Size2,
  type Tensor,
  type WebDecodePlan,
  type WebVae,
} from '../../src/web.js';

interface DemoResult {
  backend?: string;
  tiles?: number;
  window?: Size2;
  overlap?: Size2;
  seconds?: number;
  sessionSeconds?: number;
  width?: number;
  height?: number;
  maxTensorBytes?: number;
  limitBytes?: number;
  deviceLimits?: { maxBufferSize: number; maxStorageBufferBindingSize: number };
  mode?: DecodeMode;
  error?: string;
  code?: string;
  sample?: Float32Array;
}

declare global {
  interface Window {
    distvaeResult?: DemoResult;
  }
}

const params = new URLSearchParams(location.search);
const el = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const input = (id: string) => el<HTMLInputElement>(id);
const status = el<HTMLSpanElement>('status');
const progress = el<HTMLProgressElement>('progress');
const output = el<HTMLCanvasElement>('distvae-output');
let controller: AbortController | null = null;
let loaded: { key: string; vae: WebVae } | null = null;

function setState(state: 'running' | 'done' | 'error'): void {
  document.documentElement.dataset['distvaeState'] = state;
}

function parseSize(text: string, field: string): Size2 | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  const m = /^(\d+)x(\d+)$/.exec(t);
  if (!m) throw new Error(`${field} "${t}" is not HEIGHTxWIDTH in pixels (e.g. 512x512)`);
  return { height: Number(m[1]), width: Number(m[2]) };
}

/** A file picked in `fileId`, else the URL typed in `urlId` (resolved against the page). */
function picked(urlId: string, fileId: string): ByteInput | undefined {
  const file = input(fileId).files?.[0];
  if (file) return file;
  const url = input(urlId).value.trim();
  return url === '' ? undefined : new URL(url, location.href).href;
}

/** A photo as a (1, 3, H, W) tensor in the family's input range `range`, cropped to multiples of `multiple`. */
async function photoTensor(source: ByteInput, range: SampleRange, multiple: number): Promise<Tensor> {
  const { bytes } = await readBytes(source);
  const bitmap = await createImageBitmap(new Blob([bytes as BlobPart]));
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const ctx = canvas.getContext('2d')!;
  ctx.drawImage(bitmap, 0, 0);
  return cropToMultiple(inputOfRgba(ctx.getImageData(0, 0, bitmap.width, bitmap.height), range), multiple);
}

function drawPlan(plan: WebDecodePlan, width: number, height: number): void {
  const scale = Math.min(1, 480 / width);
  const rects = plan.regions
    .map((r, i) => `<rect data-tile="${i}" x="${r.x * scale}" y="${r.y * scale}" width="${r.width * scale}" height="${r.height * scale}"/>`)
    .join('');
  el('plan').innerHTML =
    `<svg class="plan-figure" role="img" data-tiles="${plan.tiles}" width="${width * scale}" height="${height * scale}" viewBox="0 0 ${width * scale} ${height * scale}" aria-label="${plan.tiles} tile(s)"><rect class="frame" width="${width * scale}" height="${height * scale}"/>${rects}</svg>
<p>${plan.mode} decode of ${height}x${width} px: ${plan.tiles} tile(s), window ${plan.window.height}x${plan.window.width}, overlap ${plan.overlap.height}x${plan.overlap.width}; largest tensor ${(plan.largest.bytes / 2 ** 20).toFixed(1)} MiB (<code>${plan.largest.name}</code>) of ${(plan.limitBytes / 2 ** 20).toFixed(1)} MiB allowed by the ${plan.limits.source}.</p>`;
}

function options(): { backend: 'auto' | 'webgpu' | 'wasm'; mode: DecodeMode; window?: Size2; overlap?: Size2; maxTensorBytes?: number } {
  const mib = input('max-buffer').value.trim();
  const window = parseSize(input('window').value, 'window');
  const overlap = parseSize(input('overlap').value, 'overlap');
  return {
    backend: el<HTMLSelectElement>('backend').value as 'auto' | 'webgpu' | 'wasm',
    mode: el<HTMLSelectElement>('mode').value as DecodeMode,
    ...(window ? { window } : {}),
    ...(overlap ? { overlap } : {}),
    ...(mib !== '' ? { maxTensorBytes: Number(mib) * 2 ** 20 } : {}),
  };
}

async function vaeFor(backend: 'auto' | 'webgpu' | 'wasm', signal: AbortSignal): Promise<WebVae> {
  const weights = picked('weights-url', 'weights-file');
  if (!weights) throw new Error('pick decoder weights (a URL or a file)');
  const key = typeof weights === 'string' ? weights : `file:${(weights as File).name}:${(weights as File).size}`;
  if (loaded?.key === key) return loaded.vae;
  const config = input('config-file').files?.[0];
  const family = input('family').value.trim();
  status.textContent = 'Loading the decoder…';
  const vae = await loadWebVae(
    { weights, ...(config ? { config } : {}), ...(family ? { family } : {}) },
    {
      backend,
      wasmPaths: new URL('assets/ort/', location.href).href,
      deviceLimits: params.get('limits') === 'default' ? 'default' : 'adapter',
      signal,
    },
  );
  loaded = { key, vae };
  return vae;
}

async function latentsFor(vae: WebVae, signal: AbortSignal): Promise<Tensor> {
  const latents = picked('latents-url', 'latents-file');
  if (latents) return parseNpy((await readBytes(latents, { signal })).bytes);
  const photo = picked('image-url', 'image-file');
  if (!photo) throw new Error('pick a latent (.npy) or a photo');
  const encoderWeights = picked('encoder-url', 'encoder-file');
  if (!encoderWeights) throw new Error('a photo needs encoder weights (a URL or a file)');
  status.textContent = 'Encoding the photo…';
  const encoder = await loadWebEncoder({ weights: encoderWeights, family: vae.family.name }, { signal });
  try {
    const image = await photoTensor(photo, encoder.family.sampleRange, vae.geometry.spatialRatio);
    return await encoder.encode(image, { signal });
  } finally {
    await encoder.dispose();
  }
}

async function decodeOnto(
  canvas: HTMLCanvasElement,
  vae: WebVae,
  latents: Tensor,
  opts: ReturnType<typeof options>,
  signal: AbortSignal,
): Promise<DemoResult & { sampleTensor: Tensor }> {
  const plan = planWebDecode(vae, latents.dims, opts);
  const r = vae.geometry.spatialRatio;
  const [h, w] = latents.dims.slice(-2) as [number, number];
  drawPlan(plan, w * r, h * r);
  canvas.width = w * r;
  canvas.height = h * r;
  const ctx = canvas.getContext('2d')!;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  progress.max = plan.tiles;
  progress.value = 0;
  status.textContent = `Decoding ${plan.tiles} tile(s) on ${vae.web.backend}…`;
  const result = await decodeInPage(vae, latents, {
    ...opts,
    signal,
    onTile: (e) => {
      drawSample(ctx, e.tile, vae.family.sampleRange, e.x, e.y);
      progress.value = e.tilesDone;
      status.textContent = `Tile ${e.tilesDone} of ${e.tilesTotal} on ${vae.web.backend}…`;
    },
  });
  drawSample(ctx, result.sample, vae.family.sampleRange);
  const { sample, plan: _plan, ...rest } = result;
  const { maxBufferSize, maxStorageBufferBindingSize } = vae.web.limits;
  return { ...rest, deviceLimits: { maxBufferSize, maxStorageBufferBindingSize }, sample: sample.data, sampleTensor: sample };
}

function fail(e: unknown): DemoResult {
  const error = e instanceof Error ? e.message : String(e);
  status.textContent = controller?.signal.aborted ? `Cancelled: ${error}` : `Error: ${error}`;
  return { error, ...(isDistVaeError(e) ? { code: e.code } : {}) };
}

async function run(): Promise<void> {
  controller = new AbortController();
  const signal = controller.signal;
  el<HTMLButtonElement>('cancel').disabled = false;
  el<HTMLButtonElement>('download').disabled = true;
  setState('running');
  let result: DemoResult;
  try {
    const opts = options();
    const vae = await vaeFor(opts.backend, signal);
    const latents = await latentsFor(vae, signal);
    const { sampleTensor: _s, ...decoded } = await decodeOnto(output, vae, latents, opts, signal);
    result = decoded;
    status.textContent = `Done: ${decoded.width}x${decoded.height} px, ${decoded.tiles} tile(s) on ${decoded.backend} in ${decoded.seconds!.toFixed(2)} s.`;
    el<HTMLButtonElement>('download').disabled = false;
  } catch (e) {
    result = fail(e);
  }
  el<HTMLButtonElement>('cancel').disabled = true;
  window.distvaeResult = result;
  const { sample: _sample, ...shown } = result;
  el('result').textContent = JSON.stringify(shown, null, 2);
  setState(result.error === undefined ? 'done' : 'error');
}

async function compare(): Promise<void> {
  controller = new AbortController();
  const signal = controller.signal;
  el<HTMLButtonElement>('cancel').disabled = false;
  setState('running');
  const caption = el('compare-caption');
  el('compare-figure').hidden = false;
  try {
    const opts = options();
    const vae = await vaeFor(opts.backend, signal);
    const latents = await latentsFor(vae, signal);
    const tiled = await decodeOnto(output, vae, latents, { ...opts, mode: opts.mode === 'whole' ? 'tiled' : opts.mode }, signal);
    let whole: Tensor;
    try {
      whole = (await decodeOnto(el<HTMLCanvasElement>('distvae-whole'), vae, latents, { ...opts, mode: 'whole' }, signal)).sampleTensor;
    } catch (e) {
      caption.textContent = `Whole decode refused: ${e instanceof Error ? e.message : e}`;
      setState('done');
      return;
    }
    let maxAbs = 0;
    for (let i = 0; i < whole.data.length; i++) maxAbs = Math.max(maxAbs, Math.abs(whole.data[i]! - tiled.sampleTensor.data[i]!));
    caption.textContent = `Whole decode; max |whole − ${tiled.mode}| = ${maxAbs.toExponential(3)} (${tiled.tiles} tiles)`;
    status.textContent = 'Compared.';
    setState('done');
  } catch (e) {
    fail(e);
    setState('error');
  } finally {
    el<HTMLButtonElement>('cancel').disabled = true;
  }
}

el<HTMLFormElement>('distvae-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void run();
});
el('cancel').addEventListener('click', () => controller?.abort(new Error('cancelled by the user')));
el('compare').addEventListener('click', () => void compare());
el('download').addEventListener('click', () => {
  output.toBlob((blob) => {
    if (!blob) return;
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = 'distvae.png';
    a.click();
    URL.revokeObjectURL(a.href);
  }, 'image/png');
});

// Query parameters fill the form; run=1 decodes at once.
const fields: Record<string, string> = {
  weights: 'weights-url',
  latents: 'latents-url',
  image: 'image-url',
  encoder: 'encoder-url',
  window: 'window',
  overlap: 'overlap',
  maxBufferMiB: 'max-buffer',
  family: 'family',
};
for (const [param, id] of Object.entries(fields)) {
  const v = params.get(param);
  if (v !== null) input(id).value = v;
}
if (params.get('image') !== null && params.get('latents') === null) input('latents-url').value = '';
for (const [param, id] of [
  ['backend', 'backend'],
  ['mode', 'mode'],
] as const) {
  const v = params.get(param);
  if (v !== null) el<HTMLSelectElement>(id).value = v;
}
if (params.get('run') === '1') void run();
