// `distvae decode`: latents (.npy / .safetensors) → decoded sample (.npy, exactly diffusers'
// `decode(z).sample`), image (.png with the family's value mapping) or video (.mp4 / .webm
// through the system ffmpeg, same mapping). The command reads its arguments into the library's
// decode session (decodeFiles: the plan, the ranks, the fallback ladder, the outputs, the
// report), then prints what it reports: a line or two of text, or one JSON object per file.

import { decodeFilesReasons, OUTPUT_FORMATS, type OptionLabels } from '../../entries/decode.js';
import { FAMILIES } from '../../entries/families.js';
import { DEFAULT_FPS } from '../../entries/io.js';
import { formatSeconds, hasMemoryModel } from '../../entries/memory.js';
import { ISOLATIONS } from '../../entries/ranks.js';
import { planningVae, decodeFiles, formatBytes, STRATEGIES, type DecodedFile, type DecodeFilesOptions } from '../../index.js';
import { JSON_OPTION, type Args, type CliIO, type CommandSpec } from '../args.js';
import { formatCollectives } from '../locality-format.js';
import { progressBar } from '../progress.js';
import { FAMILY_OPTIONS, TILING_OPTIONS, readTilingOptions } from '../tiling-options.js';
import { REDIS_OPTIONS } from './redis-options.js';
import { printSourceNotes, RUNTIME_OPTIONS, VAE_SOURCE_OPTIONS, readLoadOptions, readVaeSourceOptions } from '../vae-options.js';
import { MEMORY_OPTIONS, readMemoryLimits } from '../memory-options.js';

/** The families the memory policy cannot read (named in the help from the registry, so the list cannot go stale). */
function familiesWithoutMemoryModel(): string[] {
  return FAMILIES.filter((f) => !hasMemoryModel(planningVae(f.name))).map((f) => f.name);
}

/** How long an interrupted queue decode may take to remove its jobs from Redis. */
const QUEUE_SIGNAL_GRACE_MS = 8000;

export const decodeCommand: CommandSpec = {
  name: 'decode',
  summary: 'decode latents to a sample (.npy), an image (.png) or a video (.mp4/.webm), whole or tiled',
  usage: [
    'distvae decode --vae PATH [--family F] --latents X.npy --out Y.(npy|png|mp4|webm) [--window HxW --overlap HxW | --full] [--threads N] [--json]',
    'distvae decode ... --ranks R [--isolation thread|process] [--threads N per rank]',
    'distvae decode ... --strategy shard --ranks R   (row sharding: equals the whole decode)',
    'distvae decode ... --strategy exact-tile [--window HxW --overlap HxW] [--ranks R]   (local decoders only)',
    'distvae decode ... --redis URL [--queue NAME] [--ranks R] [--queue-timeout MS]   (tiles decoded by `distvae worker`s)',
    'distvae decode --synthetic --family F [--config config.json] [--seed N] --latents X.npy --out Y.png',
  ],
  options: [
    ...VAE_SOURCE_OPTIONS,
    ...FAMILY_OPTIONS,
    {
      name: 'latents',
      kind: 'string',
      value: 'PATH',
      description:
        'latents as diffusers vae.decode receives them: .npy; .safetensors with a tensor named "latents", its only tensor, or FILE.safetensors:NAME; a ComfyUI .latent',
    },
    {
      name: 'out-dir',
      kind: 'string',
      value: 'DIR',
      description: 'with a folder or glob of latents: one output per latent, DIR/<stem>.<format>, all with one VAE load',
    },
    { name: 'out-format', kind: 'string', value: 'png|npy|mp4|webm', description: 'the outputs of --out-dir', defaultText: 'png' },
    {
      name: 'latents-scaled',
      kind: 'boolean',
      description:
        'the latents are a pipeline\'s (output_type="latent"): divide by the VAE config\'s scaling_factor and add its shift_factor first, as pipelines do',
    },
    {
      name: 'out',
      kind: 'string',
      value: 'PATH',
      description:
        ".npy: the raw decode(z).sample; .png: an image with the family's value mapping (one file per image/frame); .mp4/.webm: a video (one per batch item) through the system ffmpeg. Images go to .npy and a single PNG band by band as tile rows finish; video goes to ffmpeg chunk by chunk where the family decodes in temporal chunks (HunyuanVideo, LTX-2), else (Wan, Qwen-Image, one chunk) after the whole sample is held",
    },
    ...TILING_OPTIONS,
    { name: 'full', kind: 'boolean', description: 'one decoder call over everything: no spatial and no temporal tiling' },
    { name: 'bit-depth', kind: 'string', value: '8|16', description: 'PNG bit depth', defaultText: '8' },
    { name: 'fps', kind: 'string', value: 'N', description: 'frames per second of .mp4/.webm output', defaultText: String(DEFAULT_FPS) },
    {
      name: 'decode-timestep',
      kind: 'string',
      value: 'T',
      description:
        "timestep fed to a timestep-conditioned decoder (LTX-2 with timestep_conditioning); overrides the config's decode_timestep",
      defaultText: "the config's, else 0 as in diffusers' pipeline",
    },
    ...RUNTIME_OPTIONS,
    {
      name: 'strategy',
      kind: 'string',
      value: 'tile|shard|exact-tile',
      description:
        "tile: the plan's tiles, blended (diffusers); shard: every layer split into bands of latent rows across the ranks, with halos, GroupNorm statistics and attention keys/values exchanged (equals the whole decode; no plan); exact-tile: the plan's tiles decoded with the analysed halo and cropped (equals the whole decode; decoders without GroupNorm/attention only)",
      defaultText: 'tile',
    },
    {
      name: 'ranks',
      kind: 'string',
      value: 'R',
      description:
        'ranks the tiles (or bands) are dealt to (by work): local ranks, or with --redis the runs (jobs) workers take; --threads is per rank',
      defaultText: '1; with --redis the workers listening, at least 2',
    },
    {
      name: 'isolation',
      kind: 'string',
      value: 'thread|process',
      description: 'ranks as worker threads, or as child processes (a crash stays in its rank; per-rank peak RSS)',
      defaultText: 'thread',
    },
    ...REDIS_OPTIONS,
    {
      name: 'queue-timeout',
      kind: 'string',
      value: 'MS',
      description: 'with --redis: fail when no worker takes or finishes a tile for this long',
      defaultText: '120000',
    },
    ...MEMORY_OPTIONS,
    {
      name: 'no-fallback',
      kind: 'boolean',
      description:
        "with the memory policy's choice: no fallback ladder (the decode runs as chosen, on --isolation ranks, and fails if it runs out of memory)",
    },
    JSON_OPTION,
  ],
  details: [
    "Without any plan option (--window, --overlap, --frame-*, --full, --strategy) the decode takes the memory policy's",
    'choice among the plans whose predicted peak, at its bound, fits the budget (--max-memory, else 80% of the memory this process tree',
    'may use): the most exact class first — the whole decode or row sharding on the R ranks, then halo-exact tiles, then',
    "blended tiles — and within a class the fastest by the time model. Local ranks share this machine's cores, so with",
    '--ranks R the whole decode runs on one rank with R x --threads intra-op threads (all cores without --threads) when it fits and is predicted faster',
    'than row sharding (the plan line says so); ranks row-shard where the whole decode does not fit, or tile. Blended tiles',
    'on a decoder with GroupNorm or attention print (and --json gives toneDrift) that tiles may shift tone at their seams',
    'and the exact plan that fits instead, whether they were asked for or chosen. Nothing fits: exit 2, naming the smallest',
    'predicted peak. The chosen decode runs in rank processes with a fallback ladder: an attempt that runs out of memory',
    'is retried with the next plan that fits (exit 3, LADDER_EXHAUSTED, when none is left). Plan options are exact',
    'requests: over an explicit --max-memory they are refused (exit 2), over the default budget they warn. Families',
    `without a memory model (${familiesWithoutMemoryModel().join(', ') || 'none'}) keep the family's default plan with tiling on.`,
    'With --json: memory { budgetBytes, predictedPeakBytes, predictedBoundBytes, predictedMaxTensorBytes, measuredPeakBytes, coordinator, ranks, warning? },',
    'choice { strategy, window, overlap, frames, ranks, threads, reason, predictedSeconds }, alternatives [...] (the',
    "policy's plans with class, predicted peak and seconds), toneDrift { ops, alternative, message } and, after a fallback,",
    'attempts [...].',
    'With --json: { shape, tiles, seconds, provider, ranks: [...] } where seconds is the decode time without loading.',
    "A GPU provider decodes on rank processes (unless --isolation thread), whose stderr is filtered: the drivers' own",
    'lines (Dawn, the Vulkan loader, Mesa) show only with --verbose.',
    "With --ranks R > 1 the tiles are decoded on R local ranks (each loads the VAE once) and ranks[] gives each rank's",
    'tiles, load (latent area), seconds and, with --isolation process, peak RSS. At most one rank per tile is started',
    '(ranksRequested and a note say so when fewer than R ran); more ranks than the cores or the memory can hold are refused.',
    'Decoder calls always run on a rank (one thread without --ranks): SIGINT/SIGTERM stop a decode within about 2 s,',
    'end its ranks, write nothing and exit 130/143.',
    'With --strategy shard each rank decodes a band of at least one latent row (refused otherwise), the JSON adds',
    'strategy, bands, collectives ({ send, allReduce, allGather, ...: { calls, bytes } } summed over ranks) and each',
    "rank's band and collectives; tiles is 0. With --strategy exact-tile a decoder the locality analysis finds nonlocal",
    'is refused with the ops named (see distvae analyze).',
    'With --redis URL the tiles go to `distvae worker` processes serving the same --queue (on any machine, each with its',
    'own copy of the VAE); --ranks is then the number of runs (jobs) a decode is dealt into, by default the number of',
    'workers listening (at least 2). Redis is reached before the VAE is loaded; nothing of the decode stays in Redis.',
  ],
  async run(args, io) {
    const options = readDecodeOptions(args);
    printSourceNotes(options.vae, io);
    // Stopping is at once (the decode's keys go first), removing its jobs takes a round trip each.
    if (options.redis !== undefined) io.setSignalGrace?.(QUEUE_SIGNAL_GRACE_MS);
    await decodeWithProgress(options, args.flag('json'), io);
    return 0;
  },
};

/** The session's options as the command line spells them (`outDir` is --out-dir). */
const CLI_LABELS: OptionLabels = (option) =>
  ({
    frameTiling: '--no-frame-tiling',
    fallback: '--no-fallback',
    deviceId: '--device',
    devices: '--device',
    precision: '--precision',
    forceFp16: '--force-fp16',
    queueTimeoutMs: '--queue-timeout',
    configPath: '--config',
  })[option as string] ?? `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/**
 * Reads every option into the session's options; values that do not parse, and the session's own
 * refusals of what they ask for together, are thrown at once.
 */
function readDecodeOptions(args: Args): DecodeFilesOptions {
  const latents = args.string('latents', { required: true });
  const outDir = args.string('out-dir');
  const outFormat = args.choice('out-format', OUTPUT_FORMATS);
  const out = args.string('out', { required: outDir === undefined });
  const bitDepth = args.choice('bit-depth', ['8', '16'] as const);
  const fps = args.number('fps');
  const strategy = args.choice('strategy', STRATEGIES);
  const decodeTimestep = args.number('decode-timestep');
  const tiling = readTilingOptions(args);
  const vae = readVaeSourceOptions(args);
  const load = readLoadOptions(args, { list: true });
  const ranks = args.int('ranks', { min: 1, max: 1024 });
  const isolation = args.choice('isolation', ISOLATIONS);
  const queueTimeoutMs = args.int('queue-timeout', { min: 1 });
  const limits = readMemoryLimits(args);
  const redis = args.string('redis');
  const queue = args.string('queue');
  const configPath = args.string('config');
  args.done();
  const options: DecodeFilesOptions = {
    vae,
    latents: latents!,
    ...tiling,
    ...limits,
    ...(configPath !== undefined ? { configPath } : {}),
    ...(out !== undefined ? { out } : {}),
    ...(outDir !== undefined ? { outDir } : {}),
    ...(outFormat !== undefined ? { outFormat } : {}),
    ...(bitDepth !== undefined ? { bitDepth: bitDepth === '16' ? 16 : 8 } : {}),
    ...(fps !== undefined ? { fps } : {}),
    ...(strategy !== undefined ? { strategy } : {}),
    ...(decodeTimestep !== undefined ? { decodeTimestep } : {}),
    ...(load.threads !== undefined ? { threads: load.threads } : {}),
    ...(load.provider !== undefined ? { provider: load.provider } : {}),
    ...(load.deviceId !== undefined ? { deviceId: load.deviceId } : {}),
    ...(load.devices !== undefined ? { devices: load.devices } : {}),
    ...(load.precision !== undefined ? { precision: load.precision } : {}),
    ...(load.forceFp16 !== undefined ? { forceFp16: load.forceFp16 } : {}),
    ...(ranks !== undefined ? { ranks } : {}),
    ...(isolation !== undefined ? { isolation } : {}),
    ...(redis !== undefined ? { redis } : {}),
    ...(queue !== undefined ? { queue } : {}),
    ...(queueTimeoutMs !== undefined ? { queueTimeoutMs } : {}),
    ...(args.flag('latents-scaled') ? { latentsScaled: true } : {}),
    ...(args.flag('no-fallback') ? { fallback: false } : {}),
  };
  args.add(...decodeFilesReasons(options, CLI_LABELS));
  args.done();
  return options;
}

/** Runs the session with a progress bar per file on a terminal, printing each file's report as it is written. */
async function decodeWithProgress(options: DecodeFilesOptions, json: boolean, io: CliIO): Promise<void> {
  // The bar of the file being decoded: drawn from its first tile, ended when it is reported.
  const bar: { current: ReturnType<typeof progressBar> | null } = { current: null };
  const endBar = () => {
    bar.current?.finish();
    bar.current = null;
  };
  try {
    await decodeFiles(options, {
      labels: CLI_LABELS,
      ...(io.signal ? { signal: io.signal } : {}),
      onNotice: (text) => io.stderr(`${text}\n`),
      onProgress: (e) => (bar.current ??= progressBar(io, 'decode')).update(e),
      onFile: (file) => {
        endBar();
        io.stdout(json ? JSON.stringify(file.report) + '\n' : describeDecoded(file));
      },
    });
  } finally {
    endBar();
  }
}

/** A decoded file in a line or two of text: shape, time, tiles or bands and ranks, files, notes and the plan. */
function describeDecoded({ report, placement, plan, bands, notes }: DecodedFile): string {
  const { shape, seconds, ranks, files } = report;
  const lines: string[] = [];
  const where = placement.kind === 'queue' ? `queue "${placement.queue}"` : placement.kind;
  const on = report.provider !== undefined ? ` on ${report.provider}${report.precision === 'fp16' ? ' in fp16' : ''}` : '';
  if (bands && report.collectives) {
    const rows = bands.map((b) => `rank ${b.rank} latent rows [${b.start}, ${b.end})`).join(', ');
    lines.push(
      `decoded [${shape.join(', ')}] in ${seconds.toFixed(2)} s${on} (row-sharded over ${placement.ranks} ${where} rank(s): ${rows}) -> ${files.join(', ')}`,
      `collectives (calls / bytes sent, all ranks): ${formatCollectives(report.collectives)}`,
    );
  } else {
    const over =
      placement.ranks > 1
        ? ` over ${placement.ranks} ${where} ranks: ${ranks.map((r) => `rank ${r.rank} ${r.tiles.length} tile(s)`).join(', ')}`
        : '';
    const exact = report.strategy === 'exact-tile' ? ' halo-exact' : '';
    lines.push(
      `decoded [${shape.join(', ')}] in ${seconds.toFixed(2)} s${on} (${report.tiles}${exact} tile(s)${over}) -> ${files.join(', ')}`,
    );
    for (const f of report.failures ?? []) lines.push(`rank ${f.rank} was lost (${f.cause}); its tiles were decoded by the others`);
    lines.push(...notes);
  }
  if (plan && report.choice) {
    const peak = report.memory.predictedPeakBytes;
    const bound = report.memory.predictedBoundBytes;
    lines.push(
      `plan: ${plan} (${report.choice.reason}); predicted peak ${peak !== null ? formatBytes(peak) : 'unknown'}${bound !== null ? ` (at most ${formatBytes(bound)})` : ''} of a ${formatBytes(report.memory.budgetBytes)} budget${report.choice.predictedSeconds !== null ? `, predicted time ${formatSeconds(report.choice.predictedSeconds)}` : ''}`,
    );
  }
  // A measured peak over the budget is said whatever the plan (never silently).
  if (report.memory.warning) lines.push(report.memory.warning.message);
  return lines.map((line) => `${line}\n`).join('');
}
