// `distvae encode`: an image (PNG / JPEG, or a .npy already in the family's input range) or, for a
// video family, a video (--video: mp4 / webm through ffmpeg, or a .npy (B, C, F, H, W)) through a
// family's encoder to latents in a .npy, .safetensors (tensor `latents`, docs/design.md §9) or
// ComfyUI .latent file, raw or scaled as a pipeline hands them on (--latents-scaled).
// The command reads its arguments with the decode command's own option parsers (source, family,
// plan, runtime, strategy, ranks, queue) into the library's encode session (encodeFile), then prints
// what it reports: a line, or one JSON object.

import { encodeFile, parseMemorySize, STRATEGIES, type EncodedFile, type EncodeFileOptions } from '../../index.js';
import { ISOLATIONS } from '../../entries/ranks.js';
import { latentsOutputReasons, outputPathReasons } from '../../entries/io.js';
import { reason } from '../../errors.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { MEMORY_OPTIONS } from '../memory-options.js';
import { FAMILY_OPTIONS, readTilingOptions, TILING_OPTIONS } from '../tiling-options.js';
import { printSourceNotes, RUNTIME_OPTIONS, VAE_SOURCE_OPTIONS, readLoadOptions, readVaeSourceOptions } from '../vae-options.js';
import { REDIS_OPTIONS } from './redis-options.js';

/** The flags outputPathReasons names the paths by. */
const PATH_FLAGS: Readonly<Record<string, string>> = { out: '--out', latents: '--image', vae: '--vae', configPath: '--config' };

export const encodeCommand: CommandSpec = {
  name: 'encode',
  summary:
    'encode an image (PNG, JPEG or .npy) or a video (mp4, webm or .npy) to latents with a VAE encoder, whole or tiled, on one or more ranks',
  usage: [
    'distvae encode --vae PATH [--family F] [--config config.json] --image IMAGE --out LATENTS.(npy|safetensors|latent) [--crop] [--latents-scaled] [--threads N] [--json]',
    'distvae encode --vae PATH --video VIDEO.(mp4|webm|npy) --out LATENTS.npy ...   (video families: Wan, Qwen-Image, ...)',
    'distvae encode ... --window HxW [--overlap HxW]   (tiles in input pixels, blended as diffusers tiled_encode)',
    'distvae encode ... --ranks R [--isolation thread|process]   (tiles dealt to R local ranks)',
    'distvae encode ... --strategy shard --ranks R   (row sharding: equal to the whole encode)',
    'distvae encode ... --redis URL [--queue NAME] [--ranks R] [--queue-timeout MS]   (tiles encoded by `distvae worker --encoder`s)',
    'distvae encode ... --video V [--frame-window F [--frame-overlap O] | --no-frame-tiling]   (HunyuanVideo, LTX-2: temporal chunks, in input frames)',
    'distvae encode --synthetic --family F [--config config.json] [--seed N] --image IMAGE --out LATENTS.npy',
  ],
  options: [
    ...VAE_SOURCE_OPTIONS,
    ...FAMILY_OPTIONS,
    {
      name: 'image',
      kind: 'string',
      value: 'PATH',
      description:
        "PNG (read band by band; Adam7-interlaced read whole) or JPEG (read whole): grey replicated to RGB, alpha dropped, values mapped to the family's input range ([-1, 1] for the diffusers classes, [0, 1] for TAE); or .npy (B, C, H, W) already in that range. A video family encodes it as one frame",
    },
    {
      name: 'video',
      kind: 'string',
      value: 'PATH',
      description:
        "for a video family: mp4 or webm (any container ffmpeg reads; frames read through ffmpeg chunk by chunk, values mapped as --image's), or .npy (B, C, F, H, W) already in the input range. The frame count must be one the encoder's loop takes (Wan, Qwen-Image: 1 + 4k), else it is refused with the nearest ones",
    },
    {
      name: 'out',
      kind: 'string',
      value: 'PATH',
      description: 'latents file: .npy, .safetensors with the tensor "latents", or a ComfyUI .latent',
    },
    {
      name: 'latents-scaled',
      kind: 'boolean',
      description:
        "write the latents as a pipeline hands them to its denoiser (scaling_factor / shift_factor, latents_mean / latents_std, Flux.2's batch-norm statistics): what decode --latents-scaled undoes",
    },
    {
      name: 'sample',
      kind: 'boolean',
      description:
        "draw the latents from the encoder's distribution instead of taking its mean, seeded by --seed (default 0; our generator: it cannot reproduce torch's stream); refused for tae and dc-ae, which have none; local ranks (any --strategy) load the moments, queue workers need `distvae worker --encoder --moments`",
    },
    {
      name: 'crop',
      kind: 'boolean',
      description: 'crop the image (centred) to the largest size whose sides are multiples of the spatial ratio, instead of refusing it',
    },
    {
      name: 'window',
      kind: 'string',
      value: 'HxW',
      description: 'tile window in input pixels (exact; refused, never rounded)',
      defaultText: 'whole; with --ranks R > 1 the family default',
    },
    {
      name: 'overlap',
      kind: 'string',
      value: 'HxW',
      description: 'tile overlap in input pixels (exact); blended over overlap / r latent units',
      defaultText: 'floor(window/4) latent units with --window, else the family default',
    },
    // decode's frame-tiling flags (the same parser): windows in input frames, for encoders that cut time.
    ...TILING_OPTIONS.filter((o) => o.name.startsWith('frame-') || o.name === 'no-frame-tiling'),
    {
      name: 'full',
      kind: 'boolean',
      description:
        'one encoder call over the whole input, every frame included (the spatial default without --window or --ranks; turns off frame tiling too)',
    },
    ...RUNTIME_OPTIONS,
    {
      name: 'strategy',
      kind: 'string',
      value: 'tile|shard|exact-tile',
      description:
        "tile: the plan's tiles, blended (diffusers' tiled encode); shard: row sharding on --ranks local ranks (equal to the whole encode; the plan is ignored); exact-tile: the plan's tiles with the analysed halo (local encoders, e.g. TAESD)",
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
      description: 'ranks as worker threads, or as child processes',
      defaultText: 'thread; process when the memory policy chose the plan',
    },
    // --max-memory only: encoders have no GPU buffer limits or device budget of their own yet.
    MEMORY_OPTIONS.find((o) => o.name === 'max-memory')!,
    ...REDIS_OPTIONS,
    {
      name: 'queue-timeout',
      kind: 'string',
      value: 'MS',
      description: 'with --redis: fail when no worker takes or finishes a tile for this long',
      defaultText: '120000',
    },
    JSON_OPTION,
  ],
  details: [
    "The latents are the distribution's mean (diffusers' encode(x).latent_dist.mode()), (B, C, H/r, W/r) — a video family's",
    '(B, C, f, H/r, W/r), f from its frame loop — unscaled: what',
    'distvae decode --latents takes with the same VAE. Without --window the encoder runs once over the whole image, as',
    "diffusers' encode does (tiling off); --window/--overlap tile it as diffusers' tiled_encode, in input pixels, through",
    "the same planner as decode (refused, never rounded). TAE's GroupNorm pools (TAEF2) normalise per tile when tiled.",
    'A video tile holds every frame (the video is held whole; Wan 2.2 windows are input pixels, twice the patchified',
    "numbers diffusers' tile_sample_min takes). Encoders that diffusers tiles over time (HunyuanVideo: on by default, 16",
    'frames overlapping 4; LTX-2: off) take --frame-window/--frame-overlap (input frames, multiples of the temporal',
    'ratio) and --no-frame-tiling; other families refuse them.',
    "Without any plan option (--window, --overlap, --full, --strategy) the encode takes the memory policy's choice, as",
    "decode does: the whole encode when it fits --max-memory (else 80% of this process tree's memory) at its bound, else",
    'the fastest blended tiles that fit; with --ranks R the whole encode runs here with R x --threads threads when it fits',
    'and is predicted faster, else tiles dealt to the R local ranks (bitwise the one-rank tiled encode). Nothing fits: exit',
    '2. An attempt that runs out of memory is retried with the next plan that fits (LADDER_EXHAUSTED, exit 3). A plan',
    'option over an explicit --max-memory is refused (exit 2). With --redis URL the tiles go to `distvae worker --encoder`',
    'processes serving the same --queue and encoder (bitwise too). --strategy shard row-shards the encoder over the local',
    'ranks and exact-tile encodes halo-exact tiles (local encoders only), both equal to the whole encode (run as asked: the',
    'policy does not choose them for encoders yet). PNG and .npy images are read band by band: a tiled encode holds the',
    'rows of the tiles in flight, never the float image (row sharding and halo-exact tiles read it whole); JPEG is read',
    'whole. --json prints { image: {height, width}, encoded: {height, width}, frames, shape, tiles, plan, strategy, seconds,',
    'ranks, notes, out, className, reading, scaled, decision, memory, attempts, bandBytes }, seconds being the encode time',
    'without loading, frames the input frames (null for image families), reading how the input was read (streamed, whole,',
    'or chunks: a video through ffmpeg). A .latent holds raw latents (ComfyUI scales them',
    'itself), so --latents-scaled refuses it.',
  ],
  async run(args, io) {
    const imagePath = args.string('image');
    const videoPath = args.string('video');
    if ((imagePath === undefined) === (videoPath === undefined))
      args.add(
        reason(
          'SOURCE_OPTION',
          '--image',
          imagePath ?? videoPath ?? null,
          'exactly one of --image and --video',
          imagePath === undefined ? 'encode needs --image or --video' : '--image and --video cannot be combined',
        ),
      );
    const inputPath = imagePath ?? videoPath;
    const out = args.string('out', { required: true });
    const tiling = readTilingOptions(args);
    const strategy = args.choice('strategy', STRATEGIES);
    const ranks = args.int('ranks', { min: 1, max: 1024 });
    const isolation = args.choice('isolation', ISOLATIONS);
    const redis = args.string('redis');
    const queue = args.string('queue');
    const queueTimeoutMs = args.int('queue-timeout', { min: 1 });
    const sample = args.flag('sample');
    // --seed seeds synthetic weights, and --sample's draw (our generator: it cannot reproduce torch's stream).
    const vae = readVaeSourceOptions(args, { seedSeedsMore: sample });
    const seed = sample ? args.int('seed', { min: 0 }) : undefined;
    const load = readLoadOptions(args);
    const scaled = args.flag('latents-scaled');
    const maxMemory = args.string('max-memory');
    if (out !== undefined) {
      args.add(...latentsOutputReasons(out, { scaled }, '--out', '--latents-scaled'));
      args.add(
        ...outputPathReasons(out, { latents: inputPath, ...('path' in vae ? { vae: vae.path } : {}) }, (o) =>
          o === 'latents' && videoPath !== undefined ? '--video' : (PATH_FLAGS[o] ?? `--${o}`),
        ),
      );
    }
    args.done();
    const options: EncodeFileOptions = {
      vae,
      ...(videoPath !== undefined ? { video: videoPath } : { image: imagePath! }),
      out: out!,
      ...(scaled ? { scaled: true } : {}),
      ...(sample ? { sample: true, ...(seed !== undefined ? { seed } : {}) } : {}),
      ...(tiling.window ? { window: tiling.window } : {}),
      ...(tiling.overlap ? { overlap: tiling.overlap } : {}),
      ...(tiling.full ? { full: true } : {}),
      ...(tiling.frameWindow !== undefined ? { frameWindow: tiling.frameWindow } : {}),
      ...(tiling.frameOverlap !== undefined ? { frameOverlap: tiling.frameOverlap } : {}),
      ...(tiling.frameTiling === false ? { frameTiling: false } : {}),
      ...(args.flag('crop') ? { crop: true } : {}),
      ...(strategy !== undefined ? { strategy } : {}),
      ...(ranks !== undefined ? { ranks } : {}),
      ...(isolation !== undefined ? { isolation } : {}),
      ...(maxMemory !== undefined ? { maxMemory: parseMemorySize(maxMemory, '--max-memory') } : {}),
      ...(redis !== undefined ? { redis } : {}),
      ...(queue !== undefined ? { queue } : {}),
      ...(queueTimeoutMs !== undefined ? { queueTimeoutMs } : {}),
      ...(load.threads !== undefined ? { threads: load.threads } : {}),
      ...(load.provider !== undefined ? { provider: load.provider } : {}),
      ...(load.deviceId !== undefined ? { deviceId: load.deviceId } : {}),
      ...(load.precision !== undefined ? { precision: load.precision } : {}),
      ...(load.forceFp16 !== undefined ? { forceFp16: load.forceFp16 } : {}),
    };
    printSourceNotes(vae, io);
    const report = await encodeFile(options, {
      crop: '--crop',
      sample: '--sample',
      video: '--video',
      image: '--image',
      frameWindow: '--frame-window',
      frameOverlap: '--frame-overlap',
      frameTiling: '--no-frame-tiling',
      maxMemory: '--max-memory',
      ...(io.signal ? { signal: io.signal } : {}),
    });
    io.stdout(args.flag('json') ? JSON.stringify(report) + '\n' : describeEncoded(inputPath!, report));
    return 0;
  },
};

/** An encoded file in a line or two of text. */
function describeEncoded(imagePath: string, report: EncodedFile): string {
  const { image, encoded, shape, seconds, plan, ranks, out, frames } = report;
  const cropped =
    encoded.height !== image.height || encoded.width !== image.width ? ` (cropped to ${encoded.height}x${encoded.width})` : '';
  const tiles = plan
    ? ` in ${report.tiles} tile(s) of ${plan.window.height}x${plan.window.width} px, overlap ${plan.overlap.height}x${plan.overlap.width}${ranks.length > 1 ? ` over ${ranks.length} ranks: ${ranks.map((r) => `rank ${r.rank} ${r.tiles.length}`).join(', ')}` : ''}`
    : ' whole';
  const lines = [
    `encoded ${imagePath} (${frames !== null && frames > 1 ? `${frames} frames of ` : ''}${image.height}x${image.width})${cropped} with ${report.className}${tiles} -> latents [${shape.join(', ')}] in ${seconds.toFixed(2)} s: ${out}`,
    ...(report.decision ? [`plan: ${report.decision.plan} (${report.decision.reason})`] : []),
    ...report.notes,
  ];
  return lines.map((l) => `${l}\n`).join('');
}
