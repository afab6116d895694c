// `distvae bench`: measure decode paths for one family, size and rank count on this machine —
// the untiled baseline, row sharding, the family's default tile plan and the searched coarse /
// balanced / fine plans — on the same weights and latent, and write a JSON report (schema 1)
// with a Markdown table and one SVG per plan next to it. Every argument, the latent file and
// its shape are checked before any rank starts; progress goes to stderr, the report path last
// to stdout.

import { existsSync, statSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { ARM_NAMES, benchReport, describeRun, runBenchCell, writeBenchReport, type ArmName } from '../../entries/bench.js';
import { checkLatents } from '../../entries/decode.js';
import { latentShapeOf } from '../../entries/plan.js';
import { vaeSpecOfSource } from '../../entries/sources.js';
import { reason, refuse } from '../../errors.js';
import { loadVae, localGroup, readLatents, seededTensor, type SampleShape, type Tensor, type Vae, type VaeSpec } from '../../index.js';
import type { Args, CommandSpec } from '../args.js';
import { readBudgetOptions } from '../memory-options.js';
import { FAMILY_OPTIONS, SIZE_OPTIONS, readSampleShape } from '../tiling-options.js';
import { printSourceNotes, RUNTIME_OPTIONS, VAE_SOURCE_OPTIONS, readLoadOptions, readVaeSourceOptions } from '../vae-options.js';

const MAX_RANKS = 64;

export const benchCommand: CommandSpec = {
  name: 'bench',
  summary: 'measure the baseline, row sharding, the default tile plan and the searched plans on this machine; write a report',
  usage: [
    'distvae bench --family F [--vae PATH | --config config.json] --height H --width W [--frames N] --ranks R [--arms none,shard,tile,coarse,balanced,fine] [--repeat N] [--out report.json]',
  ],
  options: [
    ...VAE_SOURCE_OPTIONS.filter((o) => o.name !== 'synthetic').map((o) =>
      o.name === 'vae'
        ? { ...o, description: `${o.description}; absent: seeded synthetic weights` }
        : o.name === 'seed'
          ? { ...o, description: 'seed of the synthetic weights and of the seeded latent' }
          : o,
    ),
    ...FAMILY_OPTIONS,
    ...SIZE_OPTIONS,
    {
      name: 'ranks',
      kind: 'string',
      value: 'R',
      description: `local process ranks (1..${MAX_RANKS}); the baseline and untiled plans use one`,
    },
    { name: 'arms', kind: 'string', value: 'LIST', description: `comma-separated arms: ${ARM_NAMES.join(', ')}`, defaultText: 'all' },
    { name: 'repeat', kind: 'string', value: 'N', description: 'timed runs per arm (latency min / median / max)', defaultText: '3' },
    { name: 'warmup', kind: 'string', value: 'N', description: 'untimed runs per arm before the timed ones', defaultText: '1' },
    {
      name: 'latents',
      kind: 'string',
      value: 'PATH',
      description: 'latents to decode (.npy / .safetensors, 1 batch item); must match --height/--width',
      defaultText: 'a latent seeded by --seed',
    },
    ...RUNTIME_OPTIONS.map((o) => (o.name === 'threads' ? { ...o, defaultText: 'cores / ranks, at least 1' } : o)),
    {
      name: 'out',
      kind: 'string',
      value: 'PATH',
      description: 'report .json; the Markdown (.md) and one SVG per plan (.<arm>.svg) go next to it',
      defaultText: 'bench-report.json',
    },
    {
      name: 'max-memory',
      kind: 'string',
      value: 'SIZE',
      description:
        "memory budget (1.5GiB, 800MiB, bytes): an arm whose predicted peak (the memory model's) exceeds it is recorded as failed without running",
      defaultText: 'none: every arm runs, and one that runs out of memory is recorded',
    },
  ],
  details: [
    'Arms: none = one untiled decoder call on one rank (an out-of-memory failure or a refusal is recorded as the',
    "result); shard = row sharding over R ranks; tile = the family's default window; coarse / balanced / fine = the",
    'plans `distvae plan --search` picks. Every arm gets fresh process ranks that load the VAE before timing, so each',
    "rank's peak RSS is the arm's own. Agreement (max abs, PSNR; seam bands vs interior for tiled arms) and the",
    'speedup / memory ratio are against the baseline, or against the exact shard arm when the baseline failed.',
    'The report is rewritten after every arm ("complete": false until the last), so an interrupted run keeps its arms.',
    '--threads is per rank. Progress goes to stderr; the report path is printed last on stdout.',
  ],
  async run(args, io) {
    const ranks = args.int('ranks', { required: true, min: 1, max: MAX_RANKS });
    const arms = readArms(args);
    const repeat = args.int('repeat', { min: 1, max: 1000 }) ?? 3;
    const warmup = args.int('warmup', { min: 0, max: 100 }) ?? 1;
    const latentsPath = args.string('latents');
    const out = resolve(args.string('out') ?? 'bench-report.json');
    if (!out.endsWith('.json'))
      args.refuse('--out', out, 'a path ending in .json', `--out ${out}: the report is JSON and must end in .json`);
    else if (!existsSync(dirname(out)) || !statSync(dirname(out)).isDirectory())
      args.refuse('--out', out, 'a path in an existing folder', `--out ${out}: the folder ${dirname(out)} does not exist`);
    if (latentsPath !== undefined && !existsSync(latentsPath))
      args.refuse('--latents', latentsPath, 'an existing .npy or .safetensors file', `--latents ${latentsPath}: no such file`);
    const source = readVaeSourceOptions(args, { syntheticWithoutVae: true });
    printSourceNotes(source, io);
    const given = readLoadOptions(args);
    // Only an explicit budget skips arms: a benchmark records out-of-memory failures as results.
    const budget = args.has('max-memory') ? readBudgetOptions(args).budget.bytes : undefined;
    args.done();
    const threads = given.threads ?? Math.max(1, Math.floor(cpus().length / ranks!));
    const loadOptions = { ...given, threads };

    const latents = latentsPath !== undefined ? await readLatents(latentsPath) : null;
    // The architecture is known without weights except for a bare weights file: check the size and
    // latent now when it is, else right after loading and before any rank starts.
    const spec = vaeSpecOfSource(source);
    const checked = spec ? checkRequest(args, spec, latents, latentsPath) : null;
    // Described before the run: the commit recorded is the code that runs.
    const ran = describeRun(commandLine(args), threads);
    let vae: Vae | null = null;
    try {
      io.stderr(`bench: loading the VAE on the coordinator\n`);
      vae = await loadVae(source, loadOptions);
      const { sample } = checked ?? checkRequest(args, vae, latents, latentsPath);
      const seed = 'seed' in source ? source.seed : (args.int('seed', { min: 0 }) ?? 0);
      const decodeLatents = latents ?? seededLatent(vae, sample, seed);
      const cell = await runBenchCell({
        vae,
        ranks: ranks!,
        makeGroup: () => localGroup({ ranks: ranks!, isolation: 'process', threadsPerRank: threads }),
        sample,
        latents: decodeLatents,
        latentSource: latentsPath !== undefined ? `read from ${latentsPath}` : `seeded uniform in [-1, 1) with seed ${seed}`,
        arms,
        repeat,
        warmup,
        ...(budget !== undefined ? { memoryBudget: budget } : {}),
        onProgress: (line) => io.stderr(`bench: ${line}\n`),
        onArm: (partial) => writeBenchReport(out, benchReport(ran, [partial])),
      });
      const written = writeBenchReport(out, benchReport(ran, [cell]));
      io.stderr(`bench: wrote ${written.slice(1).join(', ')}\n`);
      io.stdout(`${out}\n`);
      return 0;
    } finally {
      await vae?.dispose();
    }
  },
};

/** The command line as parsed (options in table order), for the report. */
function commandLine(args: Args): string[] {
  const argv = ['bench'];
  for (const o of benchCommand.options) {
    const v = args.values[o.name];
    if (v === true) argv.push(`--${o.name}`);
    else if (typeof v === 'string') argv.push(`--${o.name}`, v);
  }
  return argv;
}

function readArms(args: Args): ArmName[] {
  const text = args.string('arms');
  if (text === undefined) return [...ARM_NAMES];
  const names = text.split(',').map((s) => s.trim());
  const unknown = names.filter((n) => !(ARM_NAMES as readonly string[]).includes(n));
  const repeated = names.filter((n, i) => names.indexOf(n) !== i);
  if (unknown.length > 0 || repeated.length > 0 || names.length === 0) {
    const what =
      unknown.length > 0
        ? `unknown arm(s) ${unknown.map((n) => JSON.stringify(n)).join(', ')}`
        : `repeated arm(s) ${[...new Set(repeated)].join(', ')}`;
    args.refuse(
      '--arms',
      text,
      `a comma-separated list of distinct arms from ${ARM_NAMES.join(', ')}`,
      `--arms ${JSON.stringify(text)}: ${what}; the arms are ${ARM_NAMES.join(', ')}`,
    );
  }
  return names as ArmName[];
}

/** The sample shape (refused when the VAE cannot produce it) and, with --latents, that they match it. */
function checkRequest(args: Args, vae: VaeSpec, latents: Tensor | null, path: string | undefined): { sample: Required<SampleShape> } {
  const sample = readSampleShape(args, vae);
  const full: Required<SampleShape> = { height: sample.height, width: sample.width, frames: sample.frames ?? 1 };
  if (latents) {
    const got = checkLatents(vae, latents, path);
    const want = latentShapeOf(vae.geometry, full);
    const reasons = [];
    if (latents.dims[0] !== 1)
      reasons.push(
        reason(
          'LATENT_BATCH',
          'latents.dims[0]',
          latents.dims[0],
          'one batch item',
          `--latents ${path} holds ${latents.dims[0]} batch items; the benchmark decodes one`,
        ),
      );
    if (got.height !== want.height || got.width !== want.width || got.frames !== want.frames) {
      reasons.push(
        reason(
          'LATENT_SIZE',
          'latents.dims',
          [...latents.dims],
          `a latent of ${want.frames > 1 ? `${want.frames}×` : ''}${want.height}×${want.width} for ${full.height}×${full.width} px`,
          `--latents ${path} is ${got.frames > 1 ? `${got.frames}×` : ''}${got.height}×${got.width} latent units, but --height ${full.height} --width ${full.width} need ${want.height}×${want.width}`,
        ),
      );
    }
    if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  }
  return { sample: full };
}

function seededLatent(vae: VaeSpec, sample: Required<SampleShape>, seed: number): Tensor {
  const l = latentShapeOf(vae.geometry, sample);
  const dims = vae.geometry.fiveDimLatents
    ? [1, vae.geometry.latentChannels, l.frames, l.height, l.width]
    : [1, vae.geometry.latentChannels, l.height, l.width];
  return seededTensor(dims, seed);
}
