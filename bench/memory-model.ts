// Accuracy and calibration of the memory model (src/memory/): each case decodes through the CLI
// (`distvae decode --json`, process ranks) — or, for an encode case, encodes an image
// (`distvae encode --json`: the encoder's own graphs, the image read band by band) — and compares
// the model's predicted peak of every process with the measured peak RSS (VmHWM) of every rank
// and of the coordinator.
//
//   npx tsx bench/memory-model.ts [--cases all|quick|NAME,NAME] [--jobs N] [--repeat N] [--out bench/results/memory-model.json]
//   npx tsx bench/memory-model.ts predict [--cases ...]
//   npx tsx bench/memory-model.ts calibrate [--from bench/results/memory-model.json]
//   npx tsx bench/memory-model.ts report [--from bench/results/memory-model.json]
//
// The first runs the matrix; `--cases NAME,NAME` reruns only those cases and merges them into the
// report at --out (the other cases kept as measured, re-predicted under the current model), e.g.
// the shard cases after a change to src/strategies/shard/:
//   npx tsx bench/memory-model.ts --cases taef2-shard-1024-r2,taef2-shard-1024-r3,taef2-shard-2048-r4,sd-shard-512-r2,sd-shard-768-r3,sd-shard-1024-r2 --repeat 5
// The report is written after every case, so a run cut short keeps what it measured. The trained
// TAEF2 decoder is read from ../shared (DISTVAE_SHARED=/path/to/shared from a git worktree).
// Memory is load-independent, so a busy machine is fine; each case is one decode, the heaviest
// ~4.7 GiB, and cases with a process over 3 GiB or over 6 GiB in all take /work/meas/bigmem.lock
// where it exists. It writes the JSON and a Markdown table next to it. `predict` prints the
// model's terms per process without decoding. `calibrate` derives every case's terms again from the
// current model, fits the per-provider factors of src/memory/calibration.ts to the measured peaks
// by non-negative least squares on the relative error, and prints each process's refitted error
// and the entry to paste; `report` then rewrites predictions and errors under the committed calibration. So a
// change to the model is refitted without decoding; a change to the graphs or the runtime (what
// the processes really hold) needs the matrix again: run it, calibrate, paste, report.
//
// This is the model-accuracy mode of the project's one memory harness; once bench/memory.ts (the
// side-by-side harness) lands it becomes a mode there.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { planningVae } from '../src/families/registry.js';
import type { VaeSpec } from '../src/families/types.js';
import { calibrationImageFile, calibrationLatentFile } from './latent-file.js';
import { CALIBRATIONS, type RuntimeCalibration } from '../src/memory/calibration.js';
import { peakOfTerms, predictMemory, type MemoryPlan, type MemoryTerms } from '../src/memory/model.js';
import { describePlan } from '../src/memory/policy.js';
import { latentShapeOf } from '../src/plan/shapes.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
// The trained TAEF2 decoder, from the shared folder beside the checkout (DISTVAE_SHARED overrides it,
// e.g. for a git worktree whose parent folder has none).
const SHARED = process.env['DISTVAE_SHARED'] ?? join(ROOT, '..', 'shared');
const TAEF2 = join(SHARED, 'models', 'taef2', 'taef2_decoder.pth');
// Its encoder, and the shared photo the TAEF2 encode cases read (a JPEG: read whole).
const TAEF2_ENCODER = join(SHARED, 'models', 'taef2', 'taef2_encoder.pth');
const PHOTO = join(SHARED, 'data', 'photo-2048x768.jpg');
// Latents and outputs of this run (its own folder: other runs on the machine clean up theirs).
const TMP = join(tmpdir(), `distvae-memory-model-${process.pid}`);
const BIG_LOCK = '/work/meas/bigmem.lock';
const BIG_BYTES = 3 * 2 ** 30;
// How the rank processes this run starts set up their allocator (ranks/local/process/allocator-env.ts).
const RANK_ALLOCATOR: 'default' | 'inherit' = process.env['DISTVAE_RANK_ALLOCATOR'] === 'inherit' ? 'inherit' : 'default';

interface Case {
  name: string;
  family: 'autoencoder-kl' | 'flux2' | 'tae' | 'wan' | 'hunyuan-video' | 'hunyuan-image' | 'dc-ae' | 'hunyuan-video-1.5' | 'minimax-h3';
  /** A diffusers config.json (path from the checkout's root) instead of the family's published one (synthetic weights). */
  config?: string;
  /** Trained TAEF2 weights instead of synthetic ones. */
  taef2?: boolean;
  height: number;
  width: number;
  /** Output frames (video families). */
  frames?: number;
  plan: MemoryPlan;
  /** Decoded by the policy's default path (no plan options: one process rank, a ladder). */
  auto?: boolean;
  quick?: boolean;
  /** Intra-op threads of each decoding process (default 1; an auto case without it: the CLI's default, every core). */
  threads?: number;
  /** Written as a PNG (the coordinator encodes it band by band) instead of .npy. */
  png?: boolean;
  /** At most this many decodes of the case, whatever --repeat says (the slowest cases). */
  maxRepeat?: number;
  /** Queued after the other cases (slow): a matrix cut short loses these first. */
  late?: boolean;
  /** Queued before the other cases (kinds the fit lacked): a matrix cut short keeps these. */
  first?: boolean;
  /**
   * An encode of an image of height × width (`distvae encode`): the shared photo (`photo`, a JPEG
   * read whole) or a PNG of the fixed stream (read band by band); the plan in input pixels.
   */
  encode?: { photo?: boolean };
}

const tile = (ranks: number, w: number, o: number): Pick<MemoryPlan, 'strategy' | 'ranks' | 'window' | 'overlap'> => ({
  strategy: 'tile',
  ranks,
  window: { height: w, width: w },
  overlap: { height: o, width: o },
});

const CASES: Case[] = [
  { name: 'taef2-whole-512', family: 'tae', taef2: true, height: 512, width: 512, plan: { strategy: 'whole', ranks: 1 }, quick: true },
  { name: 'taef2-whole-1024', family: 'tae', taef2: true, height: 1024, width: 1024, plan: { strategy: 'whole', ranks: 1 } },
  { name: 'taef2-whole-2048', family: 'tae', taef2: true, height: 2048, width: 2048, plan: { strategy: 'whole', ranks: 1 } },
  {
    name: 'taef2-default-768x2048',
    family: 'tae',
    taef2: true,
    height: 768,
    width: 2048,
    plan: { strategy: 'whole', ranks: 1, isolated: true },
    auto: true,
    quick: true,
  },
  { name: 'taef2-tile512-1024-r1', family: 'tae', taef2: true, height: 1024, width: 1024, plan: tile(1, 512, 128) },
  { name: 'taef2-tile512-2048-r2', family: 'tae', taef2: true, height: 2048, width: 2048, plan: tile(2, 512, 128) },
  { name: 'taef2-tile512-1024-r4', family: 'tae', taef2: true, height: 1024, width: 1024, plan: tile(4, 512, 128) },
  { name: 'taef2-shard-1024-r2', family: 'tae', taef2: true, height: 1024, width: 1024, plan: { strategy: 'shard', ranks: 2 } },
  {
    name: 'taesd-exact512-1024-r2',
    family: 'tae',
    height: 1024,
    width: 1024,
    plan: { strategy: 'exact-tile', ranks: 2, window: { height: 512, width: 512 }, overlap: { height: 0, width: 0 } },
  },
  { name: 'taef2-shard-1024-r3', family: 'tae', taef2: true, height: 1024, width: 1024, plan: { strategy: 'shard', ranks: 3 } },
  { name: 'taef2-shard-2048-r4', family: 'tae', taef2: true, height: 2048, width: 2048, plan: { strategy: 'shard', ranks: 4 } },
  { name: 'sd-whole-256', family: 'autoencoder-kl', height: 256, width: 256, plan: { strategy: 'whole', ranks: 1 }, quick: true },
  { name: 'sd-whole-512', family: 'autoencoder-kl', height: 512, width: 512, plan: { strategy: 'whole', ranks: 1 } },
  { name: 'sd-whole-768', family: 'autoencoder-kl', height: 768, width: 768, plan: { strategy: 'whole', ranks: 1 } },
  {
    name: 'sd-whole-1024',
    family: 'autoencoder-kl',
    height: 1024,
    width: 1024,
    plan: { strategy: 'whole', ranks: 1 },
    maxRepeat: 2,
    late: true,
  },
  { name: 'sd-tile256-512-r1', family: 'autoencoder-kl', height: 512, width: 512, plan: tile(1, 256, 64) },
  // 688 px tiles of 1024²: full tiles chunk their attention in two, clipped ones not, so the runner replaces its session.
  { name: 'sd-tile688-1024-r1', family: 'autoencoder-kl', height: 1024, width: 1024, plan: tile(1, 688, 176) },
  { name: 'sd-tile256-768-r2', family: 'autoencoder-kl', height: 768, width: 768, plan: tile(2, 256, 64) },
  { name: 'sd-tile256-512-r4', family: 'autoencoder-kl', height: 512, width: 512, plan: tile(4, 256, 64) },
  { name: 'sd-shard-512-r2', family: 'autoencoder-kl', height: 512, width: 512, plan: { strategy: 'shard', ranks: 2 } },
  {
    name: 'sd-shard-768-r3',
    family: 'autoencoder-kl',
    height: 768,
    width: 768,
    plan: { strategy: 'shard', ranks: 3 },
    maxRepeat: 2,
    late: true,
  },
  // The README's worked choice under --ranks 2 --max-memory 6GiB.
  {
    name: 'sd-shard-1024-r2',
    family: 'autoencoder-kl',
    height: 1024,
    width: 1024,
    plan: { strategy: 'shard', ranks: 2 },
    maxRepeat: 1,
    late: true,
  },
  {
    name: 'sd-default-512',
    family: 'autoencoder-kl',
    height: 512,
    width: 512,
    plan: { strategy: 'whole', ranks: 1, isolated: true },
    auto: true,
  },
  { name: 'flux2-whole-256', family: 'flux2', height: 256, width: 256, plan: { strategy: 'whole', ranks: 1 } },
  { name: 'flux2-whole-512', family: 'flux2', height: 512, width: 512, plan: { strategy: 'whole', ranks: 1 } },
  { name: 'flux2-tile256-512-r2', family: 'flux2', height: 512, width: 512, plan: tile(2, 256, 64) },
  { name: 'flux2-tile384-768-r3', family: 'flux2', height: 768, width: 768, plan: tile(3, 384, 96) },
  { name: 'wan-whole-128x9', family: 'wan', height: 128, width: 128, frames: 9, plan: { strategy: 'whole', ranks: 1 } },
  { name: 'wan-whole-256x5', family: 'wan', height: 256, width: 256, frames: 5, plan: { strategy: 'whole', ranks: 1 } },
  { name: 'wan-tile128-256x5-r2', family: 'wan', height: 256, width: 256, frames: 5, plan: tile(2, 128, 32) },
  { name: 'hunyuan-whole-128x9', family: 'hunyuan-video', height: 128, width: 128, frames: 9, plan: { strategy: 'whole', ranks: 1 } },
  { name: 'hunyuan-chunks-128x21', family: 'hunyuan-video', height: 128, width: 128, frames: 21, plan: tile(1, 128, 32) },
  // HunyuanImage 2.1's published 32× decoder (1 GiB of float32 weights) at the class's own 384 px tiles.
  { name: 'hunyuan-image-tile384-512', family: 'hunyuan-image', height: 512, width: 512, plan: tile(1, 384, 96), maxRepeat: 1, late: true },
  // The same decoder on a 2x2 latent: the weights alone (what its sessions and prepacked kernels hold).
  { name: 'hunyuan-image-whole-64', family: 'hunyuan-image', height: 64, width: 64, plan: { strategy: 'whole', ranks: 1 }, first: true },
  // Two intra-op threads (the CLI's default on this machine) and PNG output: what the budget's
  // held-out decodes ran (bench/results/budget-cap.md) and the 1-thread .npy matrix never measured.
  {
    name: 'taef2-tile512-1024-r2-t2',
    family: 'tae',
    taef2: true,
    height: 1024,
    width: 1024,
    plan: { ...tile(2, 512, 128), threads: 2 },
    threads: 2,
    first: true,
  },
  {
    name: 'taef2-tile384-1536x1024-r2-t2-png',
    family: 'tae',
    taef2: true,
    height: 1536,
    width: 1024,
    plan: { ...tile(2, 384, 96), threads: 2 },
    threads: 2,
    png: true,
    first: true,
  },
  {
    name: 'taef2-default-1024x1536-t2-png',
    family: 'tae',
    taef2: true,
    height: 1024,
    width: 1536,
    plan: { strategy: 'whole', ranks: 1, isolated: true, threads: 2 },
    auto: true,
    threads: 2,
    png: true,
    first: true,
  },
  {
    name: 'taef2-whole-1024-t2',
    family: 'tae',
    taef2: true,
    height: 1024,
    width: 1024,
    plan: { strategy: 'whole', ranks: 1, threads: 2 },
    threads: 2,
    first: true,
  },
  {
    name: 'taef2-shard-1024-r2-t2',
    family: 'tae',
    taef2: true,
    height: 1024,
    width: 1024,
    plan: { strategy: 'shard', ranks: 2, threads: 2 },
    threads: 2,
    first: true,
  },
  {
    name: 'sd-whole-512-t2',
    family: 'autoencoder-kl',
    height: 512,
    width: 512,
    plan: { strategy: 'whole', ranks: 1, threads: 2 },
    threads: 2,
    first: true,
  },
  {
    name: 'sd-tile256-512-r2-t2',
    family: 'autoencoder-kl',
    height: 512,
    width: 512,
    plan: { ...tile(2, 256, 64), threads: 2 },
    threads: 2,
    first: true,
  },
  // The held-out stress decode of bench/results/budget-cap.md: explicit 512x560 tiles of the photo's
  // 768x2048 latent decoded in the coordinator's own process (no rank processes: glibc's defaults, one
  // arena per allocating thread) with 2 intra-op threads, written as a PNG.
  {
    name: 'taef2-tile512x560-768x2048-t2-png',
    family: 'tae',
    taef2: true,
    height: 768,
    width: 2048,
    plan: { strategy: 'tile', ranks: 1, window: { height: 512, width: 560 }, overlap: { height: 128, width: 144 }, threads: 2 },
    threads: 2,
    png: true,
    first: true,
  },
  // SANA's published DC-AE decoder (32×, RMSNorm, linear attention): whole at 256², and the class's own 512/448 px tiles at 768².
  { name: 'dc-ae-whole-256', family: 'dc-ae', height: 256, width: 256, plan: { strategy: 'whole', ranks: 1 } },
  { name: 'dc-ae-tile512-768', family: 'dc-ae', height: 768, width: 768, plan: tile(1, 512, 64) },
  // HunyuanVideo 1.5's published decoder (3.3 GiB of float32 3-D kernels) on a 4x4x1 latent: the
  // weights alone, by the default path (one rank process). Its kernels are read in place from the
  // mapped weights file (MemoryTerms.mappedWeights). ~30 min on the loaded 2-core box (generating and
  // hashing the weights), so one run.
  {
    name: 'hunyuan-video-1.5-default-64x1',
    family: 'hunyuan-video-1.5',
    height: 64,
    width: 64,
    frames: 1,
    plan: { strategy: 'whole', ranks: 1, isolated: true },
    auto: true,
    maxRepeat: 1,
    late: true,
  },
  // MiniMax-H3's difref --small config (published depth: 36 ViT layers of 2 x 16; 16x / 4x) on 7
  // latent frames of 16x16 (22 frames of 256x256, one clip): whole, and the class's loop with 128 px
  // tiles and a 32 px minimum overlap (3 x 3 tiles), both decoded in the coordinator.
  {
    name: 'minimax-h3-small-whole-256x22',
    family: 'minimax-h3',
    config: 'bench/results/minimax-h3-small-config/config.json',
    height: 256,
    width: 256,
    frames: 22,
    plan: { strategy: 'whole', ranks: 1 },
  },
  {
    name: 'minimax-h3-small-tile128-256x22',
    family: 'minimax-h3',
    config: 'bench/results/minimax-h3-small-config/config.json',
    height: 256,
    width: 256,
    frames: 22,
    plan: tile(1, 128, 32),
  },
  // Encodes (issue 28): the SD-architecture encoder (synthetic weights) on a PNG read band by band —
  // whole at 512², 256-px tiles in this process and on 2 process ranks — and the trained TAEF2
  // encoder on the shared photo (a JPEG, read whole), whole and in 512-px tiles on 2 ranks.
  {
    name: 'sd-encode-whole-512',
    family: 'autoencoder-kl',
    height: 512,
    width: 512,
    plan: { strategy: 'whole', ranks: 1 },
    encode: {},
    first: true,
  },
  { name: 'sd-encode-tile256-512-r1', family: 'autoencoder-kl', height: 512, width: 512, plan: tile(1, 256, 64), encode: {}, first: true },
  { name: 'sd-encode-tile256-512-r2', family: 'autoencoder-kl', height: 512, width: 512, plan: tile(2, 256, 64), encode: {}, first: true },
  {
    name: 'taef2-encode-photo-whole',
    family: 'tae',
    taef2: true,
    height: 768,
    width: 2048,
    plan: { strategy: 'whole', ranks: 1 },
    encode: { photo: true },
    first: true,
  },
  {
    name: 'taef2-encode-photo-tile512-r2',
    family: 'tae',
    taef2: true,
    height: 768,
    width: 2048,
    plan: tile(2, 512, 128),
    encode: { photo: true },
    first: true,
  },
  // Exact encodes the memory policy offers (row sharding: the encoder's bands in input rows, its
  // GroupNorm statistics merged, its attention gathered; halo-exact tiles of a local encoder).
  {
    name: 'sd-encode-shard-512-r2',
    family: 'autoencoder-kl',
    height: 512,
    width: 512,
    plan: { strategy: 'shard', ranks: 2 },
    encode: {},
    first: true,
  },
  {
    name: 'taef2-encode-photo-shard-r2',
    family: 'tae',
    taef2: true,
    height: 768,
    width: 2048,
    plan: { strategy: 'shard', ranks: 2 },
    encode: { photo: true },
    first: true,
  },
  {
    name: 'taesd-encode-exact512-1024-r2',
    family: 'tae',
    height: 1024,
    width: 1024,
    plan: { strategy: 'exact-tile', ranks: 2, window: { height: 512, width: 512 }, overlap: { height: 0, width: 0 } },
    encode: {},
    first: true,
  },
];

interface ProcessResult {
  process: string;
  predictedBytes: number;
  /** The median of `runs`. */
  measuredBytes: number | null;
  /** Peak of each run of the case (one unless it ran with --repeat). */
  runs?: (number | null)[];
  error: number | null;
  terms: MemoryTerms;
  activationShare: number;
}

interface CaseResult {
  name: string;
  family: string;
  weights: string;
  size: string;
  plan: string;
  processes: ProcessResult[];
  worstError: number | null;
  failed?: string;
  /**
   * How its rank processes started their allocator (MemoryModelOptions.rankAllocator): cells
   * without it were measured before distvae gave rank processes their allocator settings
   * (2026-12-03), under glibc's own, and are predicted so.
   */
  allocator?: 'default' | 'inherit';
}

function cliArgs(c: Case, input: string): string[] {
  const source = c.taef2
    ? ['--vae', c.encode ? TAEF2_ENCODER : TAEF2, '--family', 'tae']
    : ['--synthetic', '--family', c.family, ...(c.config ? ['--config', join(ROOT, c.config)] : [])];
  const plan = c.plan;
  const planArgs: string[] = c.auto
    ? []
    : plan.strategy === 'whole'
      ? ['--full']
      : plan.strategy === 'shard'
        ? ['--strategy', 'shard']
        : [
            ...(plan.strategy === 'exact-tile' ? ['--strategy', 'exact-tile'] : []),
            '--window',
            `${plan.window!.height}x${plan.window!.width}`,
            '--overlap',
            `${plan.overlap!.height}x${plan.overlap!.width}`,
          ];
  const ranks = plan.ranks > 1 || plan.strategy === 'shard' ? ['--ranks', String(plan.ranks), '--isolation', 'process'] : [];
  return [
    c.encode ? 'encode' : 'decode',
    ...source,
    c.encode ? '--image' : '--latents',
    input,
    '--out',
    // Each case its own output: with --jobs N two decodes write at once.
    join(TMP, `out-${c.name}.${c.png ? 'png' : 'npy'}`),
    ...planArgs,
    ...ranks,
    '--threads',
    String(c.threads ?? 1),
    '--max-memory',
    '64GiB',
    '--json',
  ];
}

function vaeOf(c: Case): VaeSpec {
  const vae = c.config
    ? planningVae(c.family, JSON.parse(readFileSync(join(ROOT, c.config), 'utf8')) as Record<string, unknown>)
    : planningVae(c.family, c.taef2 ? { variant: 'taef2' } : undefined);
  return c.encode ? { ...vae, part: 'encoder' } : vae;
}

/** The file a case reads: an encode's image, else the latents it decodes. */
function inputFile(vae: VaeSpec, c: Case): string {
  if (!c.encode) return latentFile(vae, c);
  return c.encode.photo ? PHOTO : calibrationImageFile(TMP, c.height, c.width);
}

function latentFile(vae: VaeSpec, c: Case): string {
  const latent = latentShapeOf(vae.geometry, sampleOf(c));
  const channels = vae.geometry.latentChannels;
  const dims = vae.geometry.fiveDimLatents
    ? [1, channels, latent.frames, latent.height, latent.width]
    : [1, channels, latent.height, latent.width];
  return calibrationLatentFile(TMP, c.family, dims);
}

const sampleOf = (c: Case) => ({ height: c.height, width: c.width, ...(c.frames ? { frames: c.frames } : {}) });

/** The model's prediction for a case's processes: the coordinator, then each rank. */
function predict(
  c: Case,
  rankAllocator: 'default' | 'inherit' = RANK_ALLOCATOR,
): { process: string; predictedBytes: number; terms: MemoryTerms }[] {
  // Image cases write .npy band by band (tiles dealt round-robin); the auto cases decode on a ladder, whole.
  // Each case's decode is given --threads (cliArgs): c.threads, default 1.
  const prediction = predictMemory(vaeOf(c), c.plan, sampleOf(c), {
    streamed: !c.auto && !c.frames && !c.encode,
    // An encode's PNG is read band by band (a JPEG whole).
    bands: c.encode !== undefined && !c.encode.photo,
    rankAllocator,
    threads: c.threads ?? 1,
  });
  return [
    { process: 'coordinator', predictedBytes: prediction.coordinatorBytes, terms: prediction.coordinator.terms },
    ...prediction.ranks.map((r) => ({ process: `rank ${r.rank}`, predictedBytes: r.peakBytes, terms: r.terms })),
  ];
}

async function runCase(c: Case, repeat: number): Promise<CaseResult> {
  const vae = vaeOf(c);
  const predicted = predict(c);
  const base = baseOf(c);
  // A case with a process predicted over 3 GiB (or all its processes over 6 GiB) takes the
  // machine's big-memory lock, so two never overlap.
  const command = [process.execPath, join(ROOT, 'bin', 'distvae.js'), ...cliArgs(c, inputFile(vae, c))];
  const largest = Math.max(...predicted.map((p) => p.predictedBytes));
  const total = predicted.reduce((a, p) => a + p.predictedBytes, 0);
  const big = largest > BIG_BYTES || total > 2 * BIG_BYTES;
  const [file, ...args] = big && existsSync(dirname(BIG_LOCK)) ? ['flock', BIG_LOCK, ...command] : command;
  const runs = new Map<string, (number | null)[]>(predicted.map((p) => [p.process, []]));
  for (let run = 0; run < Math.min(repeat, c.maxRepeat ?? repeat); run++) {
    let json: {
      memory: { coordinator: { measuredPeakBytes: number | null }; ranks: { rank: number; measuredPeakBytes: number | null }[] };
    };
    try {
      const { stdout } = await promisify(execFile)(file!, args, { encoding: 'utf8', maxBuffer: 1 << 24 });
      json = JSON.parse(stdout.trim().split('\n').pop()!);
    } catch (e) {
      const said = String((e as { stderr?: string }).stderr ?? '')
        .trim()
        .split('\n')
        .pop();
      return { ...base, processes: [], worstError: null, failed: said || (e as Error).message.split('\n')[0]! };
    }
    runs.get('coordinator')?.push(json.memory.coordinator.measuredPeakBytes);
    for (const r of json.memory.ranks) runs.get(`rank ${r.rank}`)?.push(r.measuredPeakBytes);
  }
  return withErrors({
    ...base,
    allocator: RANK_ALLOCATOR,
    processes: predicted.map((p) => {
      const measured = runs.get(p.process)!;
      return { ...p, measuredBytes: median(measured), runs: measured, error: null, activationShare: 0 };
    }),
    worstError: null,
  });
}

/** The median of the known values (the upper one of an even count), or null when none is known. */
function median(values: readonly (number | null)[]): number | null {
  const known = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
  return known.length ? known[Math.floor(known.length / 2)]! : null;
}

/** How a case is listed in the report. */
function baseOf(c: Case): Pick<CaseResult, 'name' | 'family' | 'weights' | 'size' | 'plan'> {
  return {
    name: c.name,
    family: c.family,
    weights: c.taef2 ? 'taef2 (trained)' : 'synthetic',
    size: `${c.height}x${c.width}${c.frames ? `x${c.frames}` : ''}`,
    plan: `${c.encode ? 'encode ' : ''}${describePlan(c.plan)}`,
  };
}

/**
 * A process's activations as the graphs give them (liveness peaks of its sessions' runs, a shard
 * rank's largest step), before any factor; what glibc's heap keeps of them is the allocator's, not
 * the graph's, and is left out (it would count every heap allocation, not what stays resident).
 */
function activationBytes(t: MemoryTerms): number {
  return t.activation + t.encoderActivation + t.pattern + t.growth + t.shard;
}

/** Errors and activation shares of a case's processes from their predictions and measured peaks. */
function withErrors(c: CaseResult): CaseResult {
  const processes = c.processes.map((p) => ({
    ...p,
    error: p.measuredBytes ? (p.predictedBytes - p.measuredBytes) / p.measuredBytes : null,
    activationShare: p.measuredBytes ? activationBytes(p.terms) / p.measuredBytes : 0,
  }));
  const errors = processes.flatMap((p) => (p.error === null ? [] : [Math.abs(p.error)]));
  return { ...c, processes, worstError: errors.length ? Math.max(...errors) : null };
}

function pct(x: number | null): string {
  return x === null ? '–' : `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %`;
}

const mib = (n: number | null) => (n === null ? '–' : String(Math.round(n / 2 ** 20)));

function markdown(report: { ran: Record<string, unknown>; calibration: RuntimeCalibration; cells: CaseResult[] }): string {
  const lines = [
    '# Memory model accuracy',
    '',
    `Ran ${report.ran['date']} on ${report.ran['machine']}; calibration \`${report.calibration.provider}\`: ${report.calibration.measured}.${report.ran['note'] ? ` ${report.ran['note']}` : ''}`,
    '',
    '`npx tsx bench/memory-model.ts` — each case is `distvae decode --json` (process ranks, 1 thread each), run `--repeat` times; predicted: the memory model of src/memory/ for the same plan; measured: the median of the VmHWM of each process over the runs (runs: the peak of each run). Activation share: the graph-derived activation bytes (liveness peaks, the largest step of a shard rank, before any factor) over the measured peak.',
    '',
    '| case | weights | size | plan | process | predicted MiB | measured MiB | runs MiB | error | activation share |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of report.cells) {
    if (c.failed) {
      lines.push(`| ${c.name} | ${c.weights} | ${c.size} | ${c.plan} | – | – | – | – | failed: ${c.failed.replace(/\|/g, '/')} | – |`);
      continue;
    }
    for (const p of c.processes)
      lines.push(
        `| ${c.name} | ${c.weights} | ${c.size} | ${c.plan} | ${p.process} | ${mib(p.predictedBytes)} | ${mib(p.measuredBytes)} | ${(p.runs ?? [p.measuredBytes]).map(mib).join(' / ')} | ${pct(p.error)} | ${(100 * p.activationShare).toFixed(0)} % |`,
      );
  }
  const all = report.cells.flatMap((c) => c.processes.flatMap((p) => (p.error === null ? [] : [Math.abs(p.error)])));
  const within = all.filter((e) => e <= 0.15).length;
  const heavy = report.cells.filter((c) => c.processes.some((p) => p.activationShare >= 0.5)).length;
  lines.push(
    '',
    `${within} of ${all.length} processes within ±15 %; largest |error| ${(100 * Math.max(...all)).toFixed(1)} %; ${heavy} case(s) where activations are at least half of a process's peak.`,
  );
  const cal = report.calibration as unknown as Record<string, number>;
  // The bound a budget is compared with: every run of every case against predicted × boundFactor.
  let runsWithin = 0;
  let runsAll = 0;
  for (const c of report.cells) {
    if (c.failed || c.processes.some((p) => !p.measuredBytes)) continue;
    const bound = c.processes.reduce((s, p) => s + p.predictedBytes, 0) * report.calibration.boundFactor;
    const runs = Math.max(...c.processes.map((p) => p.runs?.length ?? 1));
    for (let i = 0; i < runs; i++, runsAll++)
      if (c.processes.reduce((s, p) => s + ((p.runs ?? [])[i] ?? p.measuredBytes!), 0) <= bound) runsWithin++;
  }
  lines.push(
    '',
    `Bound (what a budget is compared with): predicted × boundFactor ${report.calibration.boundFactor}; ${runsWithin} of ${runsAll} decodes of the matrix (every run of every case, its processes' peaks summed) measured within it.`,
  );
  lines.push(
    '',
    '## What the runtime adds (the fitted calibration)',
    '',
    'predicted = fixed + Σ factor × term + buffers, each term derived from the graphs (src/memory/model.ts `MemoryTerms`):',
    '',
    '| factor | fitted | term it multiplies |',
    '|---|---|---|',
    ...CALIBRATION_TERMS.map(([key, , what]) => `| ${key} | ${key.endsWith('Bytes') ? `${mib(cal[key]!)} MiB` : cal[key]} | ${what} |`),
  );
  return lines.join('\n') + '\n';
}

/** Each calibration factor, the term of MemoryTerms it multiplies (null: the constant), and what that is. */
const CALIBRATION_TERMS: [keyof RuntimeCalibration, keyof MemoryTerms | null, string][] = [
  ['fixedBytes', null, 'every process: node, distvae, onnxruntime loaded'],
  ['decodingWeightCopies', 'decodingWeights', 'weight bytes of the VAE a decoding process loads'],
  ['sessionWeightCopies', 'sessionWeights', 'weight bytes of the sessions it opens (each holds its own)'],
  ['packedWeightCopies', 'packedWeights', "the sessions' 2-D convolution weights (onnxruntime's CPU EP keeps them prepacked too)"],
  [
    'heapWeightCopies',
    'heapWeights',
    "the sessions' weights in initializers under the process's mmap threshold (what onnxruntime reads and frees opening them stays in glibc's heap)",
  ],
  [
    'mappedWeightCopies',
    'mappedWeights',
    "the sessions' kernels read in place from the mapped weights file (not 2-D convolutions: 3-D kernels) at or over the process's mmap threshold",
  ],
  ['holdingWeightCopies', 'holdingWeights', 'weight bytes of the loaded VAE a coordinator holds'],
  ['activationFactor', 'activation', "each session's largest run's liveness peak (the arena's first-run regions)"],
  ['encoderActivationFactor', 'encoderActivation', "an encoder's sessions' largest runs' liveness peaks (its arenas)"],
  [
    'inputImageCopies',
    'inputImage',
    "an encode's image held whole by the assembling process (a JPEG decoded, mapped to the input range, copied)",
  ],
  ['patternFactor', 'pattern', 'the liveness peak of the largest shape a session runs twice (its memory-pattern block)'],
  [
    'recurrentFactor',
    'recurrent',
    "activation peaks of sessions run again within a tile on the history they keep (Wan's frame steps: their arena grows over the runs)",
  ],
  ['growthFactor', 'growth', 'runs larger than every earlier run of their session (regions added on the way)'],
  ['shardFactor', 'shard', "a row-sharded rank's largest step (kept band values + the step's work)"],
  [
    'heapFactor',
    'heap',
    "bytes glibc's heap served a row-sharded rank's stage runs (tensors under its dynamic mmap threshold, at most 32 MiB; freed chunks stay resident)",
  ],
  [
    'threadArenaFactor',
    'threadArena',
    "a multi-tile decode's activation peak per intra-op thread beyond the first, in a process under glibc's default arenas (one arena per allocating thread)",
  ],
  ['relayCopies', 'relay', 'the largest message a coordinator relays between its row-sharded rank processes (halo rows, keys and values)'],
  ['outputCopies', 'output', 'the decoded sample, in the process that assembles it'],
  [
    'largestTensorCopies',
    'largestTensor',
    "a decoding process's largest tensor: what onnxruntime adds beyond the graph (layout reorders of the largest convolutions' operands, the output copied out)",
  ],
  ['rankThreadBytes', 'rankThread', 'a rank thread in the coordinator (decoding in-process)'],
];

/**
 * Least squares on the relative error over the calibration's factors, none negative: the
 * Lawson–Hanson active set (a factor enters while the residual still pulls it up, and leaves when
 * the solution would take it below 0), so every factor is the best non-negative one given the
 * others. A factor no process has a term for keeps the committed value; one that no process tells
 * apart from the others (the weights a rank loads and those its one session holds, equal but for
 * Wan's sessions) never enters and is 0.
 */
function fit(cases: CaseResult[], base: RuntimeCalibration): RuntimeCalibration {
  const keys = CALIBRATION_TERMS.map(([key]) => key);
  const rows: { x: number[]; y: number }[] = [];
  for (const c of cases) {
    for (const p of c.processes) {
      if (!p.measuredBytes) continue;
      const t = p.terms;
      const w = 1 / p.measuredBytes;
      rows.push({ x: CALIBRATION_TERMS.map(([, term]) => (term === null ? 1 : t[term]) * w), y: (p.measuredBytes - t.buffers) * w });
    }
  }
  // Columns scaled to unit norm (bytes and copies differ by 8 orders of magnitude); unscaled at the end.
  const used = keys.map((_, i) => i).filter((i) => rows.some((r) => r.x[i] !== 0));
  const scale = used.map((i) => Math.sqrt(rows.reduce((s, r) => s + r.x[i]! ** 2, 0)));
  const a = rows.map((r) => used.map((i, k) => r.x[i]! / scale[k]!));
  const y = rows.map((r) => r.y);
  const n = used.length;
  const residual = (x: number[]) => y.map((v, r) => v - a[r]!.reduce((s, c, k) => s + c * x[k]!, 0));
  const gradient = (x: number[]) => {
    const res = residual(x);
    return used.map((_, k) => a.reduce((s, row, r) => s + row[k]! * res[r]!, 0));
  };
  /** Least squares over the columns in `set` (the others 0), by the normal equations. */
  const solveOn = (set: number[]): number[] => {
    const m = set.length;
    const g = Array.from({ length: m }, (_, i) => [
      ...set.map((cj) => a.reduce((s, row) => s + row[set[i]!]! * row[cj]!, 0)),
      a.reduce((s, row, r) => s + row[set[i]!]! * y[r]!, 0),
    ]);
    for (let i = 0; i < m; i++) {
      let p = i;
      for (let k = i + 1; k < m; k++) if (Math.abs(g[k]![i]!) > Math.abs(g[p]![i]!)) p = k;
      [g[i], g[p]] = [g[p]!, g[i]!];
      for (let k = 0; k < m; k++) {
        if (k === i || g[i]![i] === 0) continue;
        const f = g[k]![i]! / g[i]![i]!;
        for (let j = i; j <= m; j++) g[k]![j]! -= f * g[i]![j]!;
      }
    }
    const z = new Array<number>(n).fill(0);
    set.forEach((c, i) => (z[c] = g[i]![i] === 0 ? 0 : g[i]![m]! / g[i]![i]!));
    return z;
  };
  let x = new Array<number>(n).fill(0);
  const passive = new Set<number>();
  const tol = 1e-10;
  for (let iter = 0; iter < 10 * n; iter++) {
    const w = gradient(x);
    let j = -1;
    for (let k = 0; k < n; k++) if (!passive.has(k) && w[k]! > tol && (j < 0 || w[k]! > w[j]!)) j = k;
    if (j < 0) break;
    passive.add(j);
    for (;;) {
      const z = solveOn([...passive].sort((p, q) => p - q));
      const negative = [...passive].filter((k) => z[k]! <= 0);
      if (negative.length === 0) {
        x = z;
        break;
      }
      const alpha = Math.min(...negative.map((k) => x[k]! / (x[k]! - z[k]!)));
      x = x.map((v, k) => (passive.has(k) ? v + alpha * (z[k]! - v) : 0));
      for (const k of [...passive]) if (x[k]! <= tol) passive.delete(k);
    }
  }
  const solution = keys.map((key, i) => {
    const k = used.indexOf(i);
    return k < 0 ? (base[key] as number) : x[k]! / scale[k]!;
  });
  const fitted: RuntimeCalibration = { ...base };
  keys.forEach((k, i) => {
    (fitted as unknown as Record<string, number>)[k] =
      k === 'fixedBytes' || k === 'rankThreadBytes' ? Math.round(solution[i]!) : Number(solution[i]!.toFixed(3));
  });
  return fitted;
}

/**
 * The bound factor: the largest ratio over the cases of a decode's measured peak — its processes'
 * peaks in one run, summed — to its predicted peak (the sum of its processes' predictions), rounded
 * up to the hundredth. A budget is compared with predicted × this, so every measured run of the
 * matrix stays within the budget that admitted it.
 */
function boundFactorOf(cases: CaseResult[], cal: RuntimeCalibration): { factor: number; worst: string } {
  let factor = 1;
  let worst = 'none above 1';
  for (const c of cases) {
    if (c.failed || c.processes.some((p) => !p.measuredBytes)) continue;
    const predicted = c.processes.reduce((s, p) => s + peakOfTerms(p.terms, cal), 0);
    const runs = Math.max(...c.processes.map((p) => p.runs?.length ?? 1));
    for (let i = 0; i < runs; i++) {
      const measured = c.processes.reduce((s, p) => s + ((p.runs ?? [])[i] ?? p.measuredBytes!), 0);
      if (measured / predicted > factor) {
        factor = measured / predicted;
        worst = `${c.name} run ${i + 1}: ${mib(measured)} MiB measured / ${mib(predicted)} MiB predicted`;
      }
    }
  }
  return { factor: Math.ceil(factor * 100) / 100, worst };
}

/**
 * A case's predictions and errors under the current model and calibration, its measured peaks as
 * they were: the terms are derived again, so a change to the model is re-fitted without decoding.
 */
function repredict(c: CaseResult): CaseResult {
  const spec = CASES.find((x) => x.name === c.name);
  if (!spec || c.failed) return c;
  const predicted = new Map(predict(spec, c.allocator ?? 'inherit').map((p) => [p.process, p]));
  return withErrors({ ...c, ...baseOf(spec), processes: c.processes.map((p) => ({ ...p, ...predicted.get(p.process)! })) });
}

function parseFlags(argv: string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) if (argv[i]!.startsWith('--')) flags[argv[i]!.slice(2)] = argv[i + 1] ?? '';
  return flags;
}

const argv = process.argv.slice(2);
const mode = argv[0] === 'calibrate' || argv[0] === 'report' || argv[0] === 'predict' ? argv[0] : 'matrix';
const flags = parseFlags(mode === 'matrix' ? argv : argv.slice(1));
const outPath = flags['out'] ?? flags['from'] ?? join(ROOT, 'bench', 'results', 'memory-model.json');
const machine = `${process.platform} ${process.arch}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${cpus()[0]?.model ?? 'cpu'} (${cpus().length} cores), Node ${process.version}`;

if (mode === 'predict') {
  // The model's predictions for the matrix, without decoding (what a case will ask of the machine).
  const which = flags['cases'] ?? 'all';
  for (const c of which === 'all' ? CASES : CASES.filter((x) => which.split(',').includes(x.name))) {
    const started = performance.now();
    const rows = predict(c);
    process.stdout.write(
      `${c.name} (${((performance.now() - started) / 1000).toFixed(1)} s): ${rows
        .map(
          (r) =>
            `${r.process} ${mib(r.predictedBytes)} MiB [${Object.entries(r.terms)
              .filter(([, v]) => v)
              .map(([k, v]) => `${k} ${mib(v)}`)
              .join(', ')}]`,
        )
        .join('; ')}\n`,
    );
  }
} else if (mode === 'calibrate') {
  const report = JSON.parse(readFileSync(outPath, 'utf8')) as { cells: CaseResult[] };
  const base = CALIBRATIONS['cpu']!;
  report.cells = report.cells.map(repredict);
  const fitted = fit(report.cells, base);
  const bound = boundFactorOf(report.cells, fitted);
  fitted.boundFactor = bound.factor;
  const errors = report.cells.flatMap((c) =>
    c.processes.flatMap((p) => (p.measuredBytes ? [(peakOfTerms(p.terms, fitted) - p.measuredBytes) / p.measuredBytes] : [])),
  );
  for (const c of report.cells) {
    for (const p of c.processes) {
      if (!p.measuredBytes) continue;
      const e = (peakOfTerms(p.terms, fitted) - p.measuredBytes) / p.measuredBytes;
      process.stderr.write(
        `${Math.abs(e) > 0.15 ? '!' : ' '} ${c.name} ${p.process}: ${mib(peakOfTerms(p.terms, fitted))}/${mib(p.measuredBytes)} MiB ${pct(e)}\n`,
      );
    }
  }
  process.stdout.write(
    `fitted to ${errors.length} processes of ${outPath}: largest |error| ${(100 * Math.max(...errors.map(Math.abs))).toFixed(1)} %, ${errors.filter((e) => Math.abs(e) <= 0.15).length} within ±15 %; boundFactor ${bound.factor} (${bound.worst})\n`,
  );
  process.stdout.write(
    JSON.stringify(
      {
        ...fitted,
        measured: `fitted by \`npx tsx bench/memory-model.ts calibrate\` to ${errors.length} processes of bench/results/memory-model.json (${new Date().toISOString().slice(0, 10)}, ${machine})`,
      },
      null,
      2,
    ) + '\n',
  );
} else if (mode === 'report') {
  // Rewrites the report's predictions and errors under the committed calibration, without decoding again.
  const report = JSON.parse(readFileSync(outPath, 'utf8')) as { ran: Record<string, unknown>; cells: CaseResult[] };
  const order = (r: CaseResult) => CASES.findIndex((c) => c.name === r.name);
  const updated = { ...report, calibration: CALIBRATIONS['cpu']!, cells: report.cells.map(repredict).sort((a, b) => order(a) - order(b)) };
  writeFileSync(outPath, JSON.stringify(updated, null, 2) + '\n');
  writeFileSync(outPath.replace(/\.json$/, '.md'), markdown(updated));
  process.stderr.write(`rewrote ${outPath} under the committed calibration\n`);
} else {
  mkdirSync(TMP, { recursive: true });
  const which = flags['cases'] ?? 'all';
  const cases =
    which === 'all'
      ? CASES
      : which === 'quick'
        ? CASES.filter((c) => c.quick)
        : // A named selection runs in the order named (the most wanted first, so a run cut short keeps them).
          which.split(',').map((name) => {
            const c = CASES.find((x) => x.name === name);
            if (!c) throw new Error(`--cases: no case ${name} (cases: ${CASES.map((x) => x.name).join(', ')})`);
            return c;
          });
  // `--jobs N` decodes N cases at once (peaks are per process, so they do not disturb each other;
  // cases over 3 GiB still take the big-memory lock one at a time).
  const jobs = Math.max(1, Number(flags['jobs'] ?? 1));
  // `--repeat N` decodes each case N times and takes each process's median: arena-less stage
  // sessions (row sharding) leave a run-dependent share of freed chunks in glibc's heap, so one
  // shard rank's peak varies by up to a third from run to run.
  const repeat = Math.max(1, Number(flags['repeat'] ?? 1));
  const results: CaseResult[] = [];
  const queue =
    which === 'all' || which === 'quick'
      ? [...cases.filter((c) => c.first), ...cases.filter((c) => !c.first && !c.late), ...cases.filter((c) => c.late)]
      : [...cases];
  // A selection of cases replaces those cases in an existing report (its other cases are kept and
  // re-predicted under the current model); the report is written after every case, so a matrix cut
  // short keeps what it measured (rerun the rest with --cases).
  const previous =
    which !== 'all' && existsSync(outPath)
      ? (JSON.parse(readFileSync(outPath, 'utf8')) as { ran?: Record<string, unknown>; cells: CaseResult[] })
      : null;
  const started = new Date().toISOString();
  const save = () => {
    const kept = previous ? previous.cells.filter((c) => !results.some((r) => r.name === c.name)).map(repredict) : [];
    const order = (r: CaseResult) => CASES.findIndex((c) => c.name === r.name);
    const merged = [...kept, ...results].sort((a, b) => order(a) - order(b));
    const left = cases.filter((c) => !results.some((r) => r.name === c.name)).map((c) => c.name);
    const report = {
      schema: 1,
      benchmark: 'memory-model',
      ran: {
        // A selection keeps the report's date and note, and says which cases it measured when.
        date: previous ? String(previous.ran?.['date'] ?? started) : started,
        machine,
        ...(previous
          ? {
              note: [previous.ran?.['note'], `Cases ${cases.map((c) => c.name).join(', ')} (re)measured from ${started}.`]
                .filter(Boolean)
                .join(' '),
            }
          : {}),
        ...(left.length ? { unfinished: left } : {}),
      },
      calibration: CALIBRATIONS['cpu']!,
      cells: merged,
    };
    writeFileSync(outPath, JSON.stringify(report, null, 2) + '\n');
    writeFileSync(outPath.replace(/\.json$/, '.md'), markdown(report));
  };
  await Promise.all(
    Array.from({ length: jobs }, async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        process.stderr.write(`${c.name} ...\n`);
        const r = await runCase(c, repeat);
        results.push(r);
        save();
        process.stderr.write(
          `${c.name}: ${r.failed ?? r.processes.map((p) => `${p.process} ${mib(p.predictedBytes)}/${mib(p.measuredBytes)} MiB (${pct(p.error)})`).join(', ')}\n`,
        );
      }
    }),
  );
  save();
  rmSync(TMP, { recursive: true, force: true });
  process.stderr.write(`wrote ${outPath}\n`);
}
