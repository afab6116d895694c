// `distvae decode`: latents (.npy / .safetensors) → decoded sample (.npy, exactly diffusers'
// `decode(z).sample`), image (.png with the family's value mapping) or video (.mp4 / .webm
// through the system ffmpeg, same mapping). Arguments, files, the latent shape, the tile plan,
// the row-sharding bands and ffmpeg's presence are all checked before the decoder is built.
// --strategy picks the spatial strategy (the library's useStrategy); without plan options the
// memory policy picks the plan (memory/).

import { extname, join } from 'node:path';
import {
  applyMemoryPlan,
  budgetRefusal,
  checkFfmpeg,
  checkFiniteOutput,
  checkLatents,
  chooseWithinBudget,
  createVae,
  decodeToBands,
  decodeToFrames,
  DEFAULT_FPS,
  DEFAULT_QUEUE,
  describePlan,
  disableTiling,
  DistVaeError,
  DISTVAE_VERSION,
  expandLatentsArg,
  FAMILIES,
  formatBytes,
  hasMemoryModel,
  ISOLATIONS,
  isVideoPath,
  ladderRungs,
  latentScalingOf,
  latentsStem,
  loadVae,
  localGroup,
  MAX_LADDER_ATTEMPTS,
  NpyBandWriter,
  peakRssBytes,
  planOfTiling,
  PngBandWriter,
  predictMemory,
  queueGroup,
  readLatents,
  reason,
  runLadder,
  sampleShapeOf,
  scheduleGrid,
  setTiling,
  splitBands,
  STRATEGIES,
  throwIfAborted,
  untilAborted,
  tileGrid,
  unscaleLatents,
  useStrategy,
  vaeSpecOfSource,
  VIDEO_EXTENSIONS,
  VideoFrameWriter,
  writeNpy,
  writeSamplePng,
  writeSampleVideo,
  type DecodeOptions,
  type Isolation,
  type LadderAttempt,
  type LatentShape,
  type LoadOptions,
  type LocalGroup,
  type MemoryPlan,
  type MemoryPrediction,
  type PlanAlternative,
  type RankGroup,
  type SampleShape,
  type Strategy,
  type StrategyReport,
  type Tensor,
  type TileGrid,
  type Vae,
  type VaeSource,
  type VaeSpec,
} from '../../index.js';
import { JSON_OPTION, type Args, type CliIO, type CommandSpec } from '../args.js';
import { formatCollectives } from '../locality-format.js';
import { checkOutputPath, checkOutputsAgainstInputs } from '../output-path.js';
import { progressBar } from '../progress.js';
import { checkRankMemory } from '../rank-memory.js';
import { FAMILY_OPTIONS, TILING_OPTIONS, applyTilingOptions } from '../tiling-options.js';
import { REDIS_OPTIONS } from './redis-options.js';
import { printSourceNotes, RUNTIME_OPTIONS, VAE_SOURCE_OPTIONS, readLoadOptions, readVaeSourceOptions } from '../vae-options.js';
import { MEMORY_OPTIONS, choiceJson, memoryJson, readBudgetOptions, type BudgetOption } from '../memory-options.js';

/** The families the memory policy cannot read (named in the help from the registry, so the list cannot go stale). */
function familiesWithoutMemoryModel(): string[] {
  return FAMILIES.filter((f) => !hasMemoryModel(createVae(f.name))).map((f) => f.name);
}

/** How long an interrupted queue decode may take to remove its jobs from Redis. */
const QUEUE_SIGNAL_GRACE_MS = 8000;

const OUTPUT_EXTENSIONS = ['.npy', '.png', ...VIDEO_EXTENSIONS];

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
    'choice: the best plan whose predicted peak fits the budget (--max-memory, else 80% of the memory this process tree',
    'may use) — with --ranks R > 1 row sharding on the R ranks, then the whole decode; with one rank the whole decode;',
    'then halo-exact tiles; then the blended tiles with the largest window. Nothing fits: exit 2, naming the smallest',
    'predicted peak. The chosen decode runs in rank processes with a fallback ladder: an attempt that runs out of memory',
    'is retried with the next plan that fits (exit 3, LADDER_EXHAUSTED, when none is left). Plan options are exact',
    'requests: over an explicit --max-memory they are refused (exit 2), over the default budget they warn. Families',
    `without a memory model (${familiesWithoutMemoryModel().join(', ') || 'none'}) keep the family's default plan with tiling on.`,
    'With --json: memory { budgetBytes, predictedPeakBytes, predictedMaxTensorBytes, measuredPeakBytes, coordinator, ranks },',
    'choice { strategy, window, overlap, frames, ranks, reason } and, after a fallback, attempts [...].',
    'With --json: { shape, tiles, seconds, ranks: [...] } where seconds is the decode time without loading.',
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
    const request = readRequest(args);
    printSourceNotes(request.source, io);
    return new DecodeRun(request, args, io).execute();
  },
};

/** What the command line asks for, read and checked before any file is read. */
interface DecodeRequest {
  latentsPath: string | undefined;
  /** The latent files, and the output each decodes to (same order). */
  inputs: string[];
  outputs: string[];
  /** The first output (the only one without --out-dir). */
  out: string | undefined;
  video: boolean;
  bitDepth: 8 | 16;
  fps: number | undefined;
  latentsScaled: boolean;
  strategy: Strategy;
  full: boolean;
  source: VaeSource;
  loadOptions: LoadOptions;
  ranks: number;
  ranksGiven: boolean;
  isolation: Isolation;
  redis: string | undefined;
  queue: string | undefined;
  queueTimeout: number | undefined;
  budgetOption: BudgetOption;
  /** No plan option at all: the memory policy's choice. */
  auto: boolean;
  /** The policy's choice runs with a fallback ladder of rank processes. */
  ladder: boolean;
  json: boolean;
}

/** Row sharding has no tile plan; exact tiles need the plan's tiles. */
const PLAN_OPTIONS = ['window', 'overlap', 'frame-window', 'frame-overlap', 'no-frame-tiling', 'full'];

/** Reads and checks every option, in the order their refusals are reported; throws them all at once. */
function readRequest(args: Args): DecodeRequest {
  const outputs = readOutputs(args);
  const strategy = readStrategy(args);
  const source = readSource(args);
  const loadOptions = readLoadOptions(args);
  const placement = readPlacement(args, strategy);
  const budgetOption = readBudgetOptions(args);
  // No plan option at all: the memory policy's choice (docs/design.md §9). Any plan option or an
  // explicit --strategy is an exact request, decoded as asked.
  const auto = placement.redis === undefined && ![...PLAN_OPTIONS, 'strategy'].some((name) => args.has(name));
  if (!auto && args.has('no-fallback'))
    args.refuse(
      '--no-fallback',
      true,
      'only without plan options',
      "--no-fallback applies to the memory policy's choice (a decode without --window/--overlap/--full/--strategy)",
    );
  // A ladder runs every attempt in rank processes; threads asked for explicitly keep the plain decode.
  const ladder = auto && !args.flag('no-fallback') && !(args.has('isolation') && placement.isolation === 'thread');
  args.done();
  return {
    ...outputs,
    strategy,
    full: args.flag('full'),
    source,
    loadOptions,
    ...placement,
    budgetOption,
    auto,
    ladder,
    latentsScaled: args.flag('latents-scaled'),
    json: args.flag('json'),
  };
}

/** --latents, --out / --out-dir and the output format's own options. */
function readOutputs(args: Args): Pick<DecodeRequest, 'latentsPath' | 'inputs' | 'outputs' | 'out' | 'video' | 'bitDepth' | 'fps'> {
  const latentsPath = args.string('latents', { required: true });
  // Several latents (a folder or a glob) decode with one load, each to --out-dir/<stem>.<format>.
  const outDir = args.string('out-dir');
  const outFormat = args.choice('out-format', ['png', 'npy', 'mp4', 'webm'] as const);
  const inputs = latentsPath === undefined ? [] : expandLatentsArg(latentsPath);
  if (outDir === undefined && inputs.length > 1)
    args.refuse(
      '--latents',
      latentsPath,
      'one file, or several with --out-dir',
      `--latents ${latentsPath} names ${inputs.length} files: give --out-dir DIR (one output per latent)`,
    );
  if (outDir !== undefined && args.has('out'))
    args.refuse('--out', args.values['out'], 'absent with --out-dir', '--out and --out-dir are exclusive');
  if (outDir === undefined && outFormat !== undefined)
    args.refuse(
      '--out-format',
      outFormat,
      'only with --out-dir',
      '--out-format names the outputs of --out-dir; --out carries its own extension',
    );
  const outputs =
    outDir !== undefined
      ? inputs.map((p) => join(outDir, `${latentsStem(p)}.${outFormat ?? 'png'}`))
      : [args.string('out', { required: true })];
  const out = outputs[0];
  const bitDepth = args.choice('bit-depth', ['8', '16'] as const);
  const fps = args.number('fps');
  const video = out !== undefined && isVideoPath(out);
  if (out !== undefined && !OUTPUT_EXTENSIONS.includes(extname(out).toLowerCase())) {
    args.refuse(
      '--out',
      out,
      `a path ending in ${OUTPUT_EXTENSIONS.join(' or ')}`,
      `--out ${out}: the output must end in ${OUTPUT_EXTENSIONS.join(' or ')}`,
    );
  }
  if (fps !== undefined && !(fps > 0)) args.refuse('--fps', fps, 'a number > 0', `--fps ${fps}: frames per second must be > 0`);
  if (fps !== undefined && !video)
    args.refuse('--fps', fps, 'only with --out .mp4/.webm', '--fps applies only to video output (--out .mp4 or .webm)');
  if (bitDepth !== undefined && out !== undefined && extname(out).toLowerCase() !== '.png')
    args.refuse('--bit-depth', bitDepth, 'only with --out .png', `--bit-depth applies only to PNG output; --out ${out} is not a .png`);
  if (out !== undefined) checkOutputPath(args, out, { latents: latentsPath, vae: args.string('vae'), config: args.string('config') });
  if (outDir !== undefined) checkOutputsAgainstInputs(args, outDir, outputs as string[], inputs);
  // A missing --out is a reason already: done() throws before any output is used.
  return { latentsPath, inputs, outputs: outputs as string[], out, video, bitDepth: bitDepth === '16' ? 16 : 8, fps };
}

/** --strategy, refusing the plan options it cannot take. */
function readStrategy(args: Args): Strategy {
  const strategy = args.choice('strategy', STRATEGIES) ?? 'tile';
  const refusedWith = strategy === 'shard' ? PLAN_OPTIONS : strategy === 'exact-tile' ? ['full'] : [];
  for (const name of refusedWith) {
    if (args.has(name))
      args.refuse(
        `--${name}`,
        args.values[name],
        `absent with --strategy ${strategy}`,
        `--${name} cannot be combined with --strategy ${strategy} (${strategy === 'shard' ? 'row sharding splits every layer into bands, it has no tile plan' : "halo-exact tiles are the plan's tiles"})`,
      );
  }
  if (args.flag('full') && strategy !== 'shard') {
    for (const name of ['window', 'overlap', 'frame-window', 'frame-overlap']) {
      if (args.has(name))
        args.refuse(
          `--${name}`,
          args.values[name],
          'absent with --full',
          `--${name} cannot be combined with --full (one decoder call over everything)`,
        );
    }
  }
  return strategy;
}

/** The VAE source; --decode-timestep overrides the config's (docs/design.md §9: a config setting). */
function readSource(args: Args): VaeSource {
  const decodeTimestep = args.number('decode-timestep');
  const given = readVaeSourceOptions(args);
  return decodeTimestep === undefined ? given : { ...given, config: { ...(given.config ?? {}), decode_timestep: decodeTimestep } };
}

/** Where the decoder calls run: local ranks (--ranks, --isolation) or a queue (--redis ...). */
function readPlacement(
  args: Args,
  strategy: Strategy,
): Pick<DecodeRequest, 'ranks' | 'ranksGiven' | 'isolation' | 'redis' | 'queue' | 'queueTimeout'> {
  const ranks = args.int('ranks', { min: 1, max: 1024 }) ?? 1;
  const isolation = args.choice('isolation', ISOLATIONS) ?? 'thread';
  const redis = args.string('redis');
  const queue = args.string('queue');
  const queueTimeout = args.int('queue-timeout', { min: 1 });
  if (redis === undefined) {
    for (const name of ['queue', 'queue-timeout'])
      if (args.has(name))
        args.refuse(`--${name}`, args.values[name], 'only with --redis', `--${name} applies only to a queue decode (--redis URL)`);
  } else {
    if (strategy !== 'tile')
      args.refuse(
        '--strategy',
        strategy,
        'tile with --redis',
        `--strategy ${strategy} needs local ranks; a queue decode deals blended tiles (--strategy tile)`,
      );
    if (args.has('ranks') && ranks < 2)
      args.refuse(
        '--ranks',
        ranks,
        'an integer >= 2 with --redis',
        `--ranks ${ranks}: a queue decode deals its tiles into at least 2 runs`,
      );
    if (args.has('isolation'))
      args.refuse(
        '--isolation',
        isolation,
        'absent with --redis',
        '--isolation applies to local ranks; with --redis the tiles are decoded by `distvae worker` processes',
      );
    // The coordinator of a queue decode never runs the decoder: these would do nothing.
    for (const name of ['threads', 'device', 'provider']) {
      if (args.has(name))
        args.refuse(
          `--${name}`,
          args.values[name],
          'absent with --redis',
          `--${name} sets how ranks decode; with --redis the tiles are decoded by \`distvae worker\` processes: give --${name} to each worker`,
        );
    }
  }
  if (redis === undefined && args.has('isolation') && !args.has('ranks') && strategy !== 'shard') {
    args.refuse(
      '--isolation',
      isolation,
      'with --ranks R',
      '--isolation says how --ranks are run; without --ranks the decode runs on one decoder thread',
    );
  }
  return { ranks, ranksGiven: args.has('ranks'), isolation, redis, queue, queueTimeout };
}

/** A decoded latent file: what was written and what the ranks did. */
interface DecodedFile {
  sample: { dims: readonly number[] };
  written: string[];
  stats: StrategyReport | null;
  used: RankGroup | null;
  attempts: LadderAttempt[] | null;
}

/**
 * One invocation: checks the latents and the plan (before the weights when the architecture is
 * known without them), starts the ranks while the VAE loads, decodes each latent file and reports it.
 */
class DecodeRun {
  private readonly warned = new Set<string>();
  private readonly warnOnce = { stderr: (text: string) => void (this.warned.has(text) || (this.warned.add(text), this.io.stderr(text))) };
  private decision: Decision | null = null;
  private group: RankGroup | null = null;
  private started: Promise<void> | undefined;

  constructor(
    private readonly request: DecodeRequest,
    private readonly args: Args,
    private readonly io: CliIO,
  ) {}

  async execute(): Promise<number> {
    const { request } = this;
    const storedAll = await Promise.all(request.inputs.map((p) => readLatents(p)));
    // A plan-only view checks the latent and the plan before any weights are read, when the
    // architecture is known without them (a bare weights file names its variant only in its keys).
    const spec = vaeSpecOfSource(request.source);
    storedAll.slice(1).forEach((stored, i) => spec && this.configure(spec, stored, request.inputs[i + 1]!));
    const planned = spec ? this.ranksFor(spec, this.configure(spec, storedAll[0]!, request.inputs[0]!)) : null;
    if (planned !== null && request.redis === undefined && !this.laddered())
      checkRankMemory(spec!, planned, request.ranks, request.loadOptions);
    if (request.video) checkFfmpeg();
    // Ranks start (or Redis is reached) while the coordinator loads the VAE; the timed decode
    // then includes each rank's own VAE load (once per rank) but not starting it.
    if (request.redis !== undefined) await this.connectQueue(request.redis);
    else if (planned !== null && !this.laddered()) this.startLocal(planned);
    let vae: Vae | null = null;
    try {
      vae = await loadVae(request.source, request.loadOptions);
      // A signal that came during the (synchronous) load is acted on now: no rank is started after it.
      throwIfAborted(this.io.signal);
      const first = this.configure(vae, storedAll[0]!, request.inputs[0]!);
      if (request.redis === undefined && this.group === null && !this.laddered()) {
        const n = this.ranksFor(vae, first);
        checkRankMemory(vae, n, request.ranks, request.loadOptions);
        this.startLocal(n);
      }
      // Ranks still starting when a signal comes are ended by the group's close.
      await untilAborted(this.started ?? Promise.resolve(), this.io.signal);
      for (const [i, stored] of storedAll.entries()) {
        await this.decodeOne(vae, stored, request.inputs[i]!, request.outputs[i]!);
      }
      return 0;
    } finally {
      await this.group?.close();
      await vae?.dispose();
    }
  }

  /** Checks a latent against the VAE and decides its plan (the policy's choice or the exact request). */
  private configure(vae: VaeSpec, stored: Tensor, latentsPath: string): LatentShape {
    const { request, args } = this;
    const latent = checkLatents(vae, stored, latentsPath);
    if (request.video && !vae.geometry.fiveDimLatents) {
      args.refuse(
        '--out',
        request.out,
        '.npy or .png for an image family',
        `--out ${request.out}: ${vae.family.name} decodes images, not video; write .npy or .png`,
      );
      args.done();
    }
    const sample = sampleShapeOf(vae.geometry, latent);
    const batch = stored.dims[0] ?? 1;
    if (request.auto) {
      this.decision = decide(vae, sample, request.budgetOption, { ranks: request.ranks, batch, isolated: request.ladder });
      return latent;
    }
    if (request.strategy === 'shard') splitBands(latent.height, request.ranks, vae.geometry.spatialRatio);
    else if (request.full) disableTiling(vae);
    else applyTilingOptions(args, vae, undefined);
    // Predicted for the ranks that will start (at most one per tile), warned about once (the
    // plan-only view and the loaded VAE both come here).
    this.decision = exactRequest(
      vae,
      sample,
      request.budgetOption,
      request.strategy,
      this.ranksFor(vae, latent),
      batch,
      request.redis !== undefined,
      this.warnOnce,
      streamsBands(vae, request.outputs[0], batch),
    );
    return latent;
  }

  // The policy's choice decides the strategy and ranks of a decode without plan options; with a
  // ladder, every attempt starts its own process ranks.
  private chosenPlan(): MemoryPlan | null {
    return this.request.auto ? (this.decision?.choice?.plan ?? null) : null;
  }

  private strategyNow(): Strategy {
    const plan = this.chosenPlan();
    return plan ? strategyOf(plan) : this.request.strategy;
  }

  private laddered(): boolean {
    return this.request.ladder && this.chosenPlan() !== null;
  }

  /**
   * Ranks without work are never started (each would load the VAE): blended and halo-exact tiles
   * use at most one rank per tile of a chunk; row sharding refuses more ranks than latent rows.
   */
  private ranksFor(vae: VaeSpec, latent: LatentShape): number {
    const ranks = this.chosenPlan()?.ranks ?? this.request.ranks;
    return this.strategyNow() === 'shard' ? ranks : Math.min(ranks, tileGrid(vae, latent, { spatialOnly: true }).tiles.length);
  }

  /**
   * Local decodes always run their decoder calls on ranks (one thread without --ranks): a call in
   * onnxruntime blocks its thread, and the CLI's own thread must stay free to act on SIGINT/SIGTERM.
   */
  private startLocal(ranks: number): void {
    throwIfAborted(this.io.signal);
    const local = this.localRanks(ranks, this.request.isolation);
    const started = local.start();
    started.catch(() => undefined);
    this.group = local;
    this.started = started;
  }

  private localRanks(ranks: number, isolation: Isolation): LocalGroup {
    const threads = this.request.loadOptions.threads;
    return localGroup({ ranks, isolation, ...(threads !== undefined ? { threadsPerRank: threads } : {}) });
  }

  /** Reaches Redis before any weights are read (an unreachable one is reported first). */
  private async connectQueue(connection: string): Promise<void> {
    const { queue, queueTimeout, ranks, ranksGiven } = this.request;
    const q = queueGroup({
      connection,
      ...(queue !== undefined ? { queue } : {}),
      ...(ranksGiven ? { ranks } : {}),
      ...(queueTimeout !== undefined ? { timeoutMs: queueTimeout } : {}),
    });
    this.group = q;
    // Stopping is at once (the decode's keys go first), removing its jobs takes a round trip each.
    this.io.setSignalGrace?.(QUEUE_SIGNAL_GRACE_MS);
    await q.connect().catch(async (e: unknown) => {
      await q.close();
      throw e;
    });
  }

  /** Decodes one latent file into its output, as decided for it, and reports it. */
  private async decodeOne(vae: Vae, stored: Tensor, latentsPath: string, out: string): Promise<void> {
    const latent = this.configure(vae, stored, latentsPath);
    const latents = this.request.latentsScaled ? unscaleLatents(stored, latentScalingOf(vae.config.fields, vae.family.name)) : stored;
    const grid = tileGrid(vae, latent);
    const bar = progressBar(this.io, 'decode');
    const t0 = performance.now();
    const options: DecodeOptions = { onProgress: bar.update, ...(this.io.signal ? { signal: this.io.signal } : {}) };
    const decoded = this.laddered()
      ? await this.decodeLaddered(vae, latent, latents, out, options).catch((e: unknown) => {
          bar.finish();
          throw e;
        })
      : await this.decodeAsPlanned(vae, latents, out, options);
    const seconds = (performance.now() - t0) / 1000;
    bar.finish();
    this.report(decoded, grid, seconds);
  }

  /** The policy's choice with its fallback ladder: each attempt on its own process ranks. */
  private async decodeLaddered(vae: Vae, latent: LatentShape, latents: Tensor, out: string, options: DecodeOptions): Promise<DecodedFile> {
    const decision = this.decision!;
    const rungs = ladderRungs(decision.alternatives, decision.choice!);
    let stats: StrategyReport | null = null;
    let used: RankGroup | null = this.group;
    const outcome = await runLadder(
      rungs,
      async (rung) => {
        applyMemoryPlan(vae, rung.plan, sampleShapeOf(vae.geometry, latent));
        const local = this.localRanks(Math.max(1, rung.plan.ranks), 'process');
        try {
          await local.start();
          stats = useStrategy(vae, strategyOf(rung.plan), local, { offThread: true });
          used = local;
          return await vae.decode(latents, options);
        } finally {
          await local.close();
        }
      },
      (attempt, i) => {
        if (attempt.outcome === 'out-of-memory')
          this.io.stderr(
            `attempt ${i + 1} (${describePlan(rungs[i]!.plan)}, predicted ${formatBytes(attempt.predictedPeakBytes)}) ran out of memory: ${attempt.error}${i + 1 < rungs.length ? `; trying ${describePlan(rungs[i + 1]!.plan)}` : ''}\n`,
          );
      },
    );
    const written = await this.writeWhole(vae, out, outcome.result);
    const fellBack =
      outcome.attempts.length > 1
        ? `${outcome.rung.reason}: attempt ${outcome.attempts.length}, after the plans above it ran out of memory`
        : outcome.rung.reason;
    this.decision = { ...decision, plan: outcome.rung.plan, reason: fellBack, choice: outcome.rung, prediction: outcome.rung.prediction };
    return { sample: outcome.result, written, stats, used, attempts: outcome.attempts.length > 1 ? outcome.attempts : null };
  }

  /** The decision's plan on the ranks already started. */
  private async decodeAsPlanned(vae: Vae, latents: Tensor, out: string, options: DecodeOptions): Promise<DecodedFile> {
    const stats = useStrategy(vae, this.strategyNow(), this.group, { offThread: true });
    const decoded = { stats, used: this.group, attempts: null };
    // A single image goes to PNG, and any image batch to .npy, band by band as its tile rows
    // finish (memory independent of its height); PNGs of a batch and video .npy are written from
    // the whole sample.
    const ext = extname(out).toLowerCase();
    // (streamsBands says the same for the memory model: tiles of a streamed decode are dealt round-robin.)
    if (ext === '.png' && !vae.geometry.fiveDimLatents && latents.dims[0] === 1) {
      return { ...decoded, sample: await writeStreamedPng(vae, latents, out, this.request.bitDepth, options), written: [out] };
    }
    if (ext === '.npy' && !vae.geometry.fiveDimLatents) {
      return { ...decoded, sample: await writeStreamedNpy(vae, latents, out, options), written: [out] };
    }
    // Video goes to ffmpeg chunk by chunk where the family decodes in temporal chunks; a plan of
    // one chunk (or a family whose tiles span every frame) hands over the whole sample at once.
    if (this.request.video) return { ...decoded, ...(await writeStreamedVideo(vae, latents, out, this.request.fps, options)) };
    const whole = await vae.decode(latents, options);
    return { ...decoded, sample: whole, written: await this.writeWhole(vae, out, whole) };
  }

  /** Writes a whole sample as the output's extension asks: .npy, a video, or PNGs. */
  private async writeWhole(vae: Vae, out: string, whole: Tensor): Promise<string[]> {
    throwIfAborted(this.io.signal);
    checkFiniteOutput(whole.data, 'the decode');
    const { fps } = this.request;
    if (extname(out).toLowerCase() === '.npy') {
      writeNpy(out, whole);
      return [out];
    }
    if (this.request.video)
      return await writeSampleVideo(out, whole, vae.family.sampleRange, {
        ...(fps !== undefined ? { fps } : {}),
        ...(this.io.signal ? { signal: this.io.signal } : {}),
      });
    return writeSamplePng(out, whole, vae.family.sampleRange, { bitDepth: this.request.bitDepth });
  }

  /** Prints what a decode did: one JSON object with --json, else a line or two of text. */
  private report(decoded: DecodedFile, grid: TileGrid, seconds: number): void {
    const { request, io } = this;
    const { sample, written, stats, used, attempts } = decoded;
    const usedStrategy = this.strategyNow();
    const final = this.decision;
    const laddered = this.laddered();
    const single = scheduleGrid(grid, 1);
    const shard = stats?.shard() ?? null;
    const notes = [
      ...(request.redis === undefined && used !== null && used.size < request.ranks
        ? [
            `--ranks ${request.ranks} for ${grid.tiles.length} tile(s): ${used.size} rank(s) started (a rank without a tile is never started)`,
          ]
        : []),
      ...(stats?.notes() ?? []),
    ];
    const rankList = stats?.ranks() ?? [{ rank: 0, tiles: single.ranks[0]!, load: single.loads[0]!, seconds }];
    const summary = {
      shape: sample.dims,
      tiles: shard ? 0 : grid.tiles.length * grid.chunks.length,
      seconds,
      ranks: rankList,
      strategy: usedStrategy,
      ...(shard ? { bands: shard.bands.length, collectives: shard.collectives } : {}),
      ...(stats?.failures().length ? { failures: stats.failures() } : {}),
      ...(request.redis === undefined && request.ranksGiven ? { ranksRequested: request.ranks } : {}),
      ...(notes.length ? { note: notes.join('; ') } : {}),
      memory: memoryJson(request.budgetOption.budget, final?.prediction ?? null, {
        coordinator: peakRssBytes(),
        ranks: stats && used && used.transport !== 'queue' ? rankList : [],
      }),
      ...(final?.plan ? { choice: choiceJson(final.plan, final.reason) } : {}),
      ...(attempts ? { attempts } : {}),
      files: written,
    };
    if (request.json) {
      io.stdout(JSON.stringify(summary) + '\n');
      return;
    }
    if (shard) {
      const bands = shard.bands.map((b) => `rank ${b.rank} latent rows [${b.start}, ${b.end})`).join(', ');
      io.stdout(
        `decoded [${sample.dims.join(', ')}] in ${seconds.toFixed(2)} s (row-sharded over ${used!.size} ${laddered ? 'process' : request.isolation} rank(s): ${bands}) -> ${written.join(', ')}\n`,
      );
      io.stdout(`collectives (calls / bytes sent, all ranks): ${formatCollectives(shard.collectives)}\n`);
    } else {
      const where = request.redis !== undefined ? `queue "${request.queue ?? DEFAULT_QUEUE}"` : laddered ? 'process' : request.isolation;
      const over =
        used && used.size > 1
          ? ` over ${used.size} ${where} ranks: ${summary.ranks.map((r) => `rank ${r.rank} ${r.tiles.length} tile(s)`).join(', ')}`
          : '';
      const exact = usedStrategy === 'exact-tile' ? ' halo-exact' : '';
      io.stdout(
        `decoded [${sample.dims.join(', ')}] in ${seconds.toFixed(2)} s (${summary.tiles}${exact} tile(s)${over}) -> ${written.join(', ')}\n`,
      );
      for (const f of stats?.failures() ?? []) io.stdout(`rank ${f.rank} was lost (${f.cause}); its tiles were decoded by the others\n`);
      for (const note of notes) io.stdout(`${note}\n`);
    }
    if (final?.plan)
      io.stdout(
        `plan: ${describePlan(final.plan)} (${final.reason}); predicted peak ${final.prediction ? formatBytes(final.prediction.peakBytes) : 'unknown'} of a ${formatBytes(request.budgetOption.budget.bytes)} budget\n`,
      );
  }
}

/**
 * Decodes one image into a PNG written band by band, with the plan, the distvae version and the
 * VAE's content hash in its text chunks; nothing is left at `out` when the decode fails.
 */
async function writeStreamedPng(
  vae: Vae,
  latents: Tensor,
  out: string,
  bitDepth: 8 | 16,
  options: DecodeOptions,
): Promise<{ dims: number[] }> {
  const text = {
    'distvae:plan': JSON.stringify({ enabled: vae.tiling.enabled, window: vae.tiling.window, overlap: vae.tiling.overlap }),
    'distvae:version': DISTVAE_VERSION,
    'distvae:vae-sha256': vae.contentHash(),
  };
  return decodeIntoBands(
    vae,
    latents,
    options,
    (band, height) =>
      new PngBandWriter(out, { width: band.dims[3]!, height, channels: band.dims[1]!, bitDepth, range: vae.family.sampleRange, text }),
  );
}

/** Decodes image latents into an .npy written band by band (the raw decode(z).sample); nothing is left at `out` when the decode fails. */
async function writeStreamedNpy(vae: Vae, latents: Tensor, out: string, options: DecodeOptions): Promise<{ dims: number[] }> {
  const batch = latents.dims[0]!;
  return decodeIntoBands(
    vae,
    latents,
    options,
    (band, height) => new NpyBandWriter(out, { dims: [batch, band.dims[1]!, height, band.dims[3]!] }),
  );
}

/** A file written band by band (PngBandWriter, NpyBandWriter). */
interface BandWriter {
  writeBand(band: Tensor): void;
  finish(): void;
  abort(): void;
}

/**
 * Decodes image latents band by band into the writer `open` makes from the first band (and the
 * sample's height); every band is checked for non-finite values first, and the writer is
 * aborted (its file never appears) when the decode fails.
 */
async function decodeIntoBands(
  vae: Vae,
  latents: Tensor,
  options: DecodeOptions,
  open: (band: Tensor, sampleHeight: number) => BandWriter,
): Promise<{ dims: number[] }> {
  const [, , latentHeight, latentWidth] = latents.dims as number[];
  let writer: BandWriter | null = null;
  try {
    const result = await decodeToBands(
      vae,
      latents,
      (y0, band) => {
        checkFiniteOutput(band.data, `the decode's rows from ${y0}`);
        writer ??= open(band, (latentHeight! * band.dims[3]!) / latentWidth!);
        writer.writeBand(band);
      },
      options,
    );
    writer!.finish();
    return result;
  } catch (e) {
    (writer as BandWriter | null)?.abort();
    throw e;
  }
}

/** Decodes video latents into video files fed to ffmpeg as each temporal chunk is assembled; nothing is left at `out` when the decode fails. */
async function writeStreamedVideo(
  vae: Vae,
  latents: Tensor,
  out: string,
  fps: number | undefined,
  options: DecodeOptions,
): Promise<{ sample: { dims: number[] }; written: string[] }> {
  const [batch, , latentFrames] = latents.dims as number[];
  let writer: VideoFrameWriter | null = null;
  try {
    const result = await decodeToFrames(
      vae,
      latents,
      async (t0, frames) => {
        const [, channels, , height, width] = frames.dims as number[];
        checkFiniteOutput(frames.data, `the decode's frames from ${t0}`);
        const shape = {
          batch: batch!,
          channels: channels!,
          frames: (latentFrames! - 1) * vae.geometry.temporalRatio + 1,
          height: height!,
          width: width!,
        };
        writer ??= new VideoFrameWriter(out, shape, vae.family.sampleRange, {
          ...(fps !== undefined ? { fps } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
        await writer.writeFrames(frames);
      },
      options,
    );
    return { sample: result, written: await writer!.finish() };
  } catch (e) {
    await (writer as VideoFrameWriter | null)?.abort();
    throw e;
  }
}

/** Whether a planned decode to `out` is written band by band (decodeAsPlanned: a single image to PNG, any image batch to .npy). */
function streamsBands(vae: VaeSpec, out: string | undefined, batch: number): boolean {
  const ext = extname(out ?? '').toLowerCase();
  return !vae.geometry.fiveDimLatents && (ext === '.npy' || (ext === '.png' && batch === 1));
}

/** What the memory policy decided for a decode (or predicted for an exact request). */
interface Decision {
  /** The plan decoded (the choice, or the exact request's own plan); null without a memory model. */
  plan: MemoryPlan | null;
  reason: string;
  prediction: MemoryPrediction | null;
  /** The policy's choice (auto only). */
  choice: PlanAlternative | null;
  alternatives: PlanAlternative[];
}

function strategyOf(plan: MemoryPlan): Strategy {
  return plan.strategy === 'whole' ? 'tile' : plan.strategy;
}

/** The memory policy's choice for a decode without plan options; the family default without a memory model. */
function decide(
  vae: VaeSpec,
  sample: SampleShape,
  option: BudgetOption,
  options: { ranks: number; batch: number; isolated: boolean },
): Decision {
  if (!hasMemoryModel(vae)) {
    setTiling(vae);
    return {
      plan: null,
      reason: `the ${vae.family.name} family has no memory model yet: its default plan`,
      prediction: null,
      choice: null,
      alternatives: [],
    };
  }
  const result = chooseWithinBudget(vae, sample, option.budget, {
    ranks: options.ranks,
    batch: options.batch,
    isolated: options.isolated,
    more: MAX_LADDER_ATTEMPTS,
  });
  if (!result.choice) throw budgetRefusal(result);
  applyMemoryPlan(vae, result.choice.plan, sample);
  const first = result.alternatives[0]!;
  const why =
    result.choice === first
      ? `${result.choice.reason} fits the budget`
      : `${result.choice.reason}: the first plan that fits (${describePlan(first.plan)} is predicted at ${formatBytes(first.prediction.peakBytes)})`;
  const choice = { ...result.choice, reason: why };
  return {
    plan: choice.plan,
    reason: why,
    prediction: choice.prediction,
    choice,
    alternatives: result.alternatives.map((a) => (a === result.choice ? choice : a)),
  };
}

/** An exact request: decoded as asked; over an explicit budget refused (exit 2), over the default one a warning. */
function exactRequest(
  vae: VaeSpec,
  sample: SampleShape,
  option: BudgetOption,
  strategy: Strategy,
  ranks: number,
  batch: number,
  queue: boolean,
  io: { stderr(text: string): void },
  streamed = false,
): Decision | null {
  if (queue || !hasMemoryModel(vae)) return null;
  const plan = planOfTiling(vae, strategy, ranks);
  const prediction = predictMemory(vae, plan, sample, { batch, streamed });
  const over = prediction.peakBytes > option.budget.bytes;
  const tensorOver = option.budget.maxTensorBytes !== undefined && prediction.maxTensorBytes > option.budget.maxTensorBytes;
  if ((over || tensorOver) && option.explicit) {
    const what = tensorOver
      ? `its largest tensor is predicted at ${formatBytes(prediction.maxTensorBytes)}, over --max-tensor ${formatBytes(option.budget.maxTensorBytes!)}`
      : `its predicted peak is ${formatBytes(prediction.peakBytes)}, over --max-memory ${formatBytes(option.budget.bytes)}`;
    const r = reason(
      'BUDGET_EXCEEDED',
      '--max-memory',
      option.budget.bytes,
      `at least ${formatBytes(prediction.peakBytes)} for ${describePlan(plan)}`,
      `the requested plan (${describePlan(plan)}) does not fit: ${what}; drop the plan options to let the memory policy choose one that fits`,
    );
    throw new DistVaeError('BUDGET_EXCEEDED', r.message, { reasons: [r] });
  }
  if (over)
    io.stderr(
      `warning: the requested plan (${describePlan(plan)}) is predicted to peak at ${formatBytes(prediction.peakBytes)}, over the default memory budget of ${formatBytes(option.budget.bytes)}; decoding as asked\n`,
    );
  return { plan, reason: 'as requested', prediction, choice: null, alternatives: [] };
}
