// Half precision on the WebGPU provider against the float32 decode of the same plan (whole
// latent, one tile), on whatever adapter onnxruntime finds (lavapipe in CI and here):
// (a) the trained TAEF2 on a real photo's latents: a 256² crop of ../shared/data/photo-2048x768.jpg
//     encoded by the TAEF2 encoder (CPU, float32), decoded on webgpu in fp32 and fp16; PSNR of
//     the fp16 image against the fp32 image (both mapped to [0, 1] as written), ≥ 40 dB asked;
// (b) a small SD-layout AutoencoderKL (4 levels, 8× up, mid-block attention) at 512² output whose
//     synthetic conv weights are scaled until its activations reach the real SD decoder's
//     magnitudes: the largest GroupNorm input is ≥ 2048, so the squares a GroupNorm's variance
//     sums exceed float16's 65504 by far. Shown three ways: the largest GroupNorm input and the
//     largest mean of squares per (sample, group) from a CPU float32 run; the distvae fp16 graph
//     (statistics, softmax, reductions in float32) has no NaN or Inf; the same graph with every
//     op in float16 (`keepFloat32: false`) is run too and its non-finite count reported.
// Not a test: it measures. Results: bench/results/fp16.json and .md.
//
//   npx tsx bench/fp16.ts [--only taef2|sd] [--scale S]

import { execSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sliceLatent } from '../src/decode/latents.js';
import { loadVae } from '../src/decode/vae.js';
import { loadEncoder } from '../src/encode/encoder.js';
import type { ModelProto, TensorProto } from '../src/graph/onnx-proto.js';
import { GraphBuilder } from '../src/graph/builder.js';
import { modelInPrecision } from '../src/graph/precision.js';
import { externalBytesOf } from '../src/graph/tensor-proto.js';
import { readExternalBytes } from '../src/bytes/external-bytes.js';
import { syncRegionsOf } from '../src/graph/sync.js';
import { readImage, sampleToImage } from '../src/io/image.js';
import { psnr } from '../src/io/quality.js';
import { createSession } from '../src/runtime/session.js';
import type { SessionOptions } from '../src/runtime/session-types.js';
import { seededTensor, type Tensor } from '../src/tensor.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const SHARED = join(HERE, '../../../shared');
const RESULTS = join(HERE, 'results');
const { values: args } = parseArgs({ options: { only: { type: 'string' }, scale: { type: 'string' } } });

const uptime = () => execSync('uptime').toString().trim();
const results: Record<string, unknown> = {
  command: `npx tsx bench/fp16.ts${process.argv.slice(2).length ? ' ' + process.argv.slice(2).join(' ') : ''}`,
  commit: execSync('git rev-parse --short HEAD').toString().trim(),
  machine: `${execSync('uname -m').toString().trim()}, ${execSync('nproc').toString().trim()} cores, WebGPU adapter: Mesa lavapipe (software Vulkan) unless stated`,
  uptimeBefore: uptime(),
};
// A run of one part (--only) keeps the other part's last results.
const previous = join(RESULTS, 'fp16.json');
if (args.only !== undefined && existsSync(previous)) {
  const old = JSON.parse(readFileSync(previous, 'utf8')) as { ran: Record<string, unknown>; cells: { part: string }[] };
  for (const { part, ...cell } of old.cells) results[part] = { ...cell, ranAt: old.ran['commit'] };
}
// Written in the docs site's bench report schema (docs/lib/bench-reports.ts): the run in `ran`, each part a cell.
const save = () => {
  mkdirSync(RESULTS, { recursive: true });
  const { taef2, sdLayout, ...ran } = results;
  const cells = Object.entries({ taef2, sdLayout })
    .filter(([, cell]) => cell !== undefined)
    .map(([part, cell]) => ({ part, ...(cell as object) }));
  writeFileSync(join(RESULTS, 'fp16.json'), JSON.stringify({ schema: 1, ran, cells }, null, 2) + '\n');
};

function stats(t: Tensor): { maxAbs: number; nonFinite: number } {
  let maxAbs = 0;
  let nonFinite = 0;
  for (const v of t.data) {
    if (!Number.isFinite(v)) nonFinite++;
    else maxAbs = Math.max(maxAbs, Math.abs(v));
  }
  return { maxAbs, nonFinite };
}

function compare(half: Tensor, full: Tensor): { maxAbsDiff: number; relativeDiff: number } {
  let maxAbsDiff = 0;
  for (let i = 0; i < full.data.length; i++) maxAbsDiff = Math.max(maxAbsDiff, Math.abs(half.data[i]! - full.data[i]!));
  return { maxAbsDiff, relativeDiff: maxAbsDiff / stats(full).maxAbs };
}

const webgpu = (precision: 'fp32' | 'fp16'): SessionOptions => ({ provider: 'webgpu', precision, intraOpThreads: 2 });

async function runModel(
  model: ModelProto,
  input: Tensor,
  options: SessionOptions,
): Promise<{ out: Record<string, Tensor>; seconds: number }> {
  const t0 = performance.now();
  const session = await createSession(model, options);
  try {
    const out = await session.run({ [model.graph!.input![0]!.name!]: input });
    return { out, seconds: (performance.now() - t0) / 1000 };
  } finally {
    await session.dispose();
  }
}

async function taef2(): Promise<void> {
  const decoder = join(SHARED, 'models/taef2/taef2_decoder.pth');
  const encoder = join(SHARED, 'models/taef2/taef2_encoder.pth');
  const photo = join(SHARED, 'data/photo-2048x768.jpg');
  if (![decoder, encoder, photo].every(existsSync)) throw new Error('TAEF2 or the photo is missing under ../shared');
  const crop = sliceLatent(readImage(photo), { y0: 64, y1: 320, x0: 64, x1: 320 });
  const enc = await loadEncoder(encoder, { family: 'tae', threads: 2 });
  const latents = await enc.encode(crop);
  await enc.dispose();
  const cell: Record<string, unknown> = { crop: 'photo-2048x768.jpg rows 64..320, cols 64..320 (256²)', latent: latents.dims };
  const images: Record<string, Tensor> = {};
  for (const precision of ['fp32', 'fp16'] as const) {
    const vae = await loadVae(decoder, { family: 'tae', threads: 2, provider: 'webgpu', precision });
    const t0 = performance.now();
    const out = await vae.decode(latents);
    cell[`${precision}Seconds`] = (performance.now() - t0) / 1000;
    images[precision] = sampleToImage(out, vae.family.sampleRange);
    cell[`${precision}NonFinite`] = stats(out).nonFinite;
    cell[`${precision}PsnrVsPhoto`] = psnr(images[precision], crop);
    await vae.dispose();
  }
  cell['psnrFp16VsFp32'] = psnr(images['fp16']!, images['fp32']!);
  cell['maxAbsFp16VsFp32'] = compare(images['fp16']!, images['fp32']!).maxAbsDiff;
  results['taef2'] = cell;
  save();
  console.log('taef2', cell);
}

/** The SD layout at a small width: 4 levels (8× up), 2 resnets per up block, mid-block attention, 32 → 512 px. */
const SD_LAYOUT = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [16, 32, 32, 32],
  layers_per_block: 2,
  norm_num_groups: 8,
  latent_channels: 4,
  force_upcast: false,
};

/** The model with every weight read in and every conv weight multiplied by `scale` (a copy). */
function scaledModel(model: ModelProto, scale: number): ModelProto {
  const initializer = (model.graph!.initializer ?? []).map((t): TensorProto => {
    const file = externalBytesOf(t);
    const bytes = file ? readExternalBytes(file) : t.raw_data!;
    const { external_data: _, data_location: __, ...rest } = t;
    const values = new Float32Array(bytes.slice().buffer);
    const factor = /conv[^.]*\.weight$|conv_shortcut\.weight$/.test(t.name ?? '') ? scale : 1;
    return { ...rest, raw_data: new Uint8Array(values.map((v) => v * factor).buffer) };
  });
  return { ...model, graph: { ...model.graph, initializer } };
}

/** The model with every GroupNorm's input as an extra output (for the CPU float32 magnitudes). */
function withNormInputs(model: ModelProto): { model: ModelProto; names: string[] } {
  const names = [...new Set(syncRegionsOf(model).flatMap((r) => (r.kind === 'group-norm' ? [r.input] : [])))];
  const output = [...(model.graph!.output ?? []), ...names.map((name) => ({ name, type: { tensor_type: { elem_type: 1 } } }))];
  return { model: { ...model, graph: { ...model.graph, output } }, names };
}

/** Largest |x| and largest mean of x² per (sample, group) over the GroupNorm inputs, and the input holding the largest |x|. */
function normMagnitudes(
  out: Record<string, Tensor>,
  names: string[],
  groups: number,
): { maxAbs: number; maxMeanSquare: number; largest: Tensor } {
  let maxAbs = 0;
  let maxMeanSquare = 0;
  let largest = out[names[0]!]!;
  for (const name of names) {
    const t = out[name]!;
    if (stats(t).maxAbs > maxAbs) largest = t;
    const perGroup = t.data.length / t.dims[0]! / groups;
    for (let g = 0; g < t.data.length / perGroup; g++) {
      let sum = 0;
      for (let i = g * perGroup; i < (g + 1) * perGroup; i++) {
        const v = t.data[i]!;
        maxAbs = Math.max(maxAbs, Math.abs(v));
        sum += v * v;
      }
      maxMeanSquare = Math.max(maxMeanSquare, sum / perGroup);
    }
  }
  return { maxAbs, maxMeanSquare, largest };
}

/**
 * One GroupNorm spelt with explicit statistics ('reduce-mean': ReduceMean, x − mean, its square,
 * ReduceMean) on the decoder's largest GroupNorm input, run in fp32, distvae's fp16 and all-float16:
 * the float16 square of x − mean overflows to Inf without the float32 islands. (onnxruntime's WebGPU
 * InstanceNormalization, the decoder's default spelling, sums in float32 internally either way.)
 */
async function explicitStatistics(x: Tensor, groups: number): Promise<Record<string, unknown>> {
  const g = new GraphBuilder('group_norm');
  const c = x.dims[1]!;
  const scope = g.scope('norm');
  const y = scope.groupNorm(
    g.input('x', x.dims),
    scope.param('weight', { dims: [c], data: new Float32Array(c).fill(1) }),
    scope.param('bias', { dims: [c], data: new Float32Array(c) }),
    { groups, epsilon: 1e-6, form: 'reduce-mean' },
  );
  g.output('y', y, x.dims);
  const model = g.toModel();
  const full = Object.values((await runModel(model, x, webgpu('fp32'))).out)[0]!;
  const half = Object.values((await runModel(model, x, webgpu('fp16'))).out)[0]!;
  const naive = Object.values((await runModel(modelInPrecision(model, 'fp16', { keepFloat32: false }), x, webgpu('fp32'))).out)[0]!;
  return {
    input: { dims: x.dims, largest: stats(x).maxAbs },
    fp32: stats(full),
    fp16: { ...stats(half), ...compare(half, full) },
    allFp16: { ...stats(naive) },
  };
}

async function sdLayout(): Promise<void> {
  const vae = await loadVae({ config: SD_LAYOUT, weights: 'synthetic', seed: 1 }, { threads: 2 });
  // Read in while the VAE (and the scratch file of its synthetic weights) is alive.
  const base = scaledModel(vae.decoderModel(), 1);
  await vae.dispose();
  const latent = seededTensor([1, 4, 64, 64], 5);
  const cell: Record<string, unknown> = { config: SD_LAYOUT, latent: latent.dims, output: [1, 3, 512, 512] };
  // The scale: the first power of two whose largest GroupNorm input reaches 2048 on the CPU.
  let scale = args.scale !== undefined ? Number(args.scale) : 1;
  let model = scaledModel(base, scale);
  for (;;) {
    const probe = withNormInputs(model);
    const { out } = await runModel(probe.model, latent, { intraOpThreads: 2 });
    const m = normMagnitudes(out, probe.names, SD_LAYOUT.norm_num_groups);
    console.log(`scale ${scale}: largest GroupNorm input ${m.maxAbs.toFixed(0)}, largest mean square ${m.maxMeanSquare.toExponential(2)}`);
    if (m.maxAbs >= 2048 || args.scale !== undefined || scale >= 1024) {
      Object.assign(cell, { scale, cpuFp32: { largestNormInput: m.maxAbs, largestNormMeanSquare: m.maxMeanSquare, float16Max: 65504 } });
      cell['explicitStatistics'] = await explicitStatistics(m.largest, SD_LAYOUT.norm_num_groups);
      console.log('explicit statistics', cell['explicitStatistics']);
      save();
      break;
    }
    scale *= 2;
    model = scaledModel(base, scale);
  }
  const full = await runModel(model, latent, webgpu('fp32'));
  const half = await runModel(model, latent, webgpu('fp16'));
  const [f, h] = [Object.values(full.out)[0]!, Object.values(half.out)[0]!];
  cell['fp32'] = { seconds: full.seconds, ...stats(f) };
  cell['fp16'] = { seconds: half.seconds, ...stats(h), ...compare(h, f) };
  results['sdLayout'] = cell;
  save();
  console.log('sd', cell);
  // Every op in float16: what the float32 islands prevent.
  const naive = await runModel(modelInPrecision(model, 'fp16', { keepFloat32: false }), latent, webgpu('fp32'));
  cell['allFp16'] = stats(Object.values(naive.out)[0]!);
  results['sdLayout'] = cell;
  save();
  console.log('all fp16', cell['allFp16']);
}

if (args.only !== 'sd') await taef2();
if (args.only !== 'taef2') await sdLayout();
results['uptimeAfter'] = uptime();
save();
