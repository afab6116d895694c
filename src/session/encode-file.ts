// The library's encode session, `encodeFile`: an image file (PNG / JPEG, read through a row
// source into the family's input range; or a .npy already in that range) — or, for a video
// encoder, a video (mp4 / webm through ffmpeg chunk by chunk, or a .npy (B, C, F, H, W)) — through an encoder to a
// latents file (.npy, .safetensors with the tensor `latents`, or a ComfyUI .latent), raw or
// scaled as a pipeline hands them on — the counterpart of decodeFiles for one file. It takes the decode session's plan, strategy, rank and runtime options and reads them
// the same way: the exact planner (installRequestedTiling, windows in input pixels), the strategy
// table (`useStrategy`: tile, shard or exact-tile; tiles also on queue workers), local ranks
// started for the encode and closed after it. Without a plan option the memory policy chooses
// the plan within the budget (`maxMemory`, else the default one) exactly as for a decode
// (session/decision.ts `decide`: exact first — the whole encode or row sharding on the ranks —
// then halo-exact tiles of a local encoder, then blended tiles, the fastest of a class first; a
// sample or a video encoder is offered the whole encode and blended tiles only:
// `policyStrategies`), tried down its fallback ladder when an attempt runs out of memory, each
// attempt on its own strategy and ranks; a requested plan is predicted and refused over an
// explicit budget. The image is read band by
// band (PNG, .npy), so a tiled encode pulls each tile's rows as it reaches it and never holds the
// float image; JPEG, a whole encode, row sharding and halo-exact tiles read it whole.

import { checkImage, cropRowsToMultiple, cropToMultiple } from '../encode/image-check.js';
import { loadEncoder, type Encoder } from '../encode/encoder.js';
import { DistVaeError, reason, refuse, type Reason } from '../errors.js';
import { familyNamesWhere, resolveFamily, runtimeOf } from '../families/registry.js';
import type { FamilyEncoder } from '../families/runtime-types.js';
import type { FamilySpec, Size2 } from '../families/types.js';
import { explainTileFramePlan, setTiling, tileFramePlan } from '../plan/planner.js';
import { latentScalingOf, scaleLatents } from '../io/latent-scaling.js';
import { refuseSamplingWithout, sampleLatents } from '../io/latent-sample.js';
import { LATENT_OUTPUT_EXTENSIONS, latentsOutputReasons, writeLatentsFile } from '../io/latents-out.js';
import { openImageRows, readAllRows, type RowSource } from '../io/row-source.js';
import { readNpy } from '../io/npy.js';
import { openVideoInput } from '../io/video-input.js';
import type { SampleRange } from '../io/sample-range.js';
import { encodeGrid, wholeImage } from '../encode/engine.js';
import type { ImageInput, ImageRows } from '../encode/tile-bands.js';
import { readLatentBatchNorm } from '../sources/latent-statistics.js';
import { localGroup } from '../ranks/local/index.js';
import { queueGroup } from '../ranks/queue/index.js';
import type { QueueGroup } from '../ranks/queue/queue-group.js';
import type { Isolation, LocalGroup } from '../ranks/local/local-group.js';
import type { StrategyReport } from '../strategies/index.js';
import { sourceConfig, type VaeSource } from '../sources/vae-source.js';
import { STRATEGIES, useStrategy, type Strategy } from '../strategies/index.js';
import { splitInputBands } from '../strategies/shard/bands.js';
import type { RankStats } from '../decode/types.js';
import type { Tensor } from '../tensor.js';
import { decide, exactRequest, installRequestedTiling, strategyOf, type Decision } from './decision.js';
import type { DecodeFilesOptions } from './options.js';
import { describePlan } from '../memory/policy.js';
import { hasMemoryModel } from '../memory/model.js';
import { ladderRungs, runLadder, type LadderAttempt } from '../memory/ladder.js';
import { defaultMemoryBudget, peakRssBytes } from '../runtime/memory-budget.js';
import { memoryJson, type MemoryReport } from './report.js';
import type { RankGroup } from '../ranks/group.js';
import type { LoadOptions } from '../decode/vae.js';

/**
 * The strategies the memory policy chooses among for an encode: every one for an image encoder
 * (the model predicts its row sharding and halo-exact tiles as it does a decoder's, the moments of
 * a sample included: ranks load the encoder as this process did), blended tiles only for a video
 * encoder (its frame loop; row sharding of 5-D encoders is not offered by the policy).
 */
function policyStrategies(encoder: Encoder): readonly Strategy[] {
  return encoder.encoding.frames ? ['tile'] : STRATEGIES;
}

/** Latents files `encodeFile` writes. */
export const ENCODE_OUTPUT_EXTENSIONS = LATENT_OUTPUT_EXTENSIONS;

/** What `encodeFile` encodes and how: the decode session's plan, strategy, rank and runtime options. */
export interface EncodeFileOptions
  extends
    Pick<LoadOptions, 'threads' | 'provider' | 'deviceId' | 'precision' | 'forceFp16'>,
    Pick<DecodeFilesOptions, 'frameWindow' | 'frameOverlap' | 'frameTiling'> {
  /** The encoder: a diffusers folder or pipeline, a Hub repo id, a weights file (TAE), or synthetic weights. */
  vae: VaeSource;
  /**
   * PNG or JPEG (values from [0, 255] to the family's input range), or .npy (B, C, H, W) already in
   * that range; a video encoder takes it as one frame (F = 1). Exactly one of `image` and `video`.
   */
  image?: string;
  /** For a video encoder: mp4 / webm (any container ffmpeg reads; pixels mapped as `image`'s), or .npy (B, C, F, H, W) in the input range. */
  video?: string;
  /** .npy, .safetensors with the tensor `latents`, or a ComfyUI .latent (raw latents only). */
  out: string;
  /** Write the latents as a pipeline hands them to its denoiser (what decode's latentsScaled undoes). */
  scaled?: boolean;
  /**
   * Draw from the latent distribution instead of taking its mean (refused where the family has
   * none, or its encoder here gives the mean only): mean + exp(logvar/2)·ε, the moments tiled and
   * blended as the mean is, ε from our seeded normal stream (io/latent-sample.ts; never torch's).
   */
  sample?: boolean;
  /** The seed of `sample`'s ε (a non-negative integer; default 0). */
  seed?: number;
  /** Tile window and overlap in input pixels (exact: refused, never rounded). */
  window?: Size2;
  overlap?: Size2;
  /** One encoder call over the whole image (the default without --window / --ranks). */
  full?: boolean;
  /** Crop the image (centred) to multiples of the spatial ratio instead of refusing it. */
  crop?: boolean;
  /**
   * How the encode is distributed, as for decoding: 'tile' (blended tiles dealt to the ranks),
   * 'shard' (row sharding on the local ranks, 1 included: equal to the whole encode, the plan
   * ignored) or 'exact-tile' (the plan's tiles with the analysed halo; local encoders only).
   */
  strategy?: Strategy;
  /** Local ranks the tiles are dealt to; with `redis`, the runs queue workers take (default: the workers listening). */
  ranks?: number;
  isolation?: Isolation;
  /**
   * Memory budget of this process and its local ranks, in bytes: a hard cap. Without plan options
   * the memory policy chooses the plan that fits it; a requested plan over it is refused
   * (BUDGET_EXCEEDED). Default: 80 % of what this process tree may use, which only warns.
   */
  maxMemory?: number;
  /**
   * Redis URL of a queue whose workers serve this encoder (`distvae worker --encoder`): the tiles
   * (the family's default without a window) go to them, blended here — bitwise the one-rank
   * tiled encode. Tile strategy only (workers cannot exchange halos). With `sample`, the workers
   * must serve the moments (`distvae worker --encoder --moments`): a mean-only one refuses the run.
   */
  redis?: string;
  /** Queue name (default 'distvae'; coordinator and workers must agree). */
  queue?: string;
  /** With `redis`: fail when no worker takes or finishes a tile for this long (ms). */
  queueTimeoutMs?: number;
}

/** What `encodeFile` did: `encode --json` prints it. */
export interface EncodedFile {
  image: { height: number; width: number };
  /** Input frames of a video encode (an image given to a video encoder: 1); null for image encoders. */
  frames: number | null;
  /** The size encoded (after --crop). */
  encoded: { height: number; width: number };
  shape: number[];
  /** Tiles of the encode (1: whole). */
  tiles: number;
  /** Window and overlap in input pixels when tiled, else null. */
  plan: { window: Size2; overlap: Size2 } | null;
  strategy: Strategy;
  /** Encode seconds without loading. */
  seconds: number;
  ranks: RankStats[];
  notes: string[];
  out: string;
  className: string;
  /**
   * How the input was read: 'streamed' (PNG band by band, .npy by positional reads), 'whole' (JPEG,
   * interlaced PNG, a video .npy) or 'chunks' (a video through ffmpeg, chunk by chunk into one
   * tensor: a tile of a video encode takes every frame, so the video is held whole).
   */
  reading: 'streamed' | 'whole' | 'chunks';
  /** Whether the latents were written scaled. */
  scaled: boolean;
  /** The plan encoded and why (the policy's choice within the budget, or 'as requested'); null where the family has no encoder memory model. */
  decision: { plan: string; reason: string } | null;
  /** The budget, the plan's predicted peak (median and bound) and each process's measured peak. */
  memory: MemoryReport;
  /** The fallback ladder's attempts (a policy choice), else null. */
  attempts: LadderAttempt[] | null;
  /**
   * The most bytes of the input a tiled encode of a streamed image held at once: its tiles' bands
   * plus the rows the source kept (0: read whole).
   */
  bandBytes: number;
}

/** The options' own refusals (before any file is read), every reason at once. */
export function encodeFileReasons(options: EncodeFileOptions): Reason[] {
  const reasons: Reason[] = [...latentsOutputReasons(options.out, { scaled: options.scaled === true })];
  if ((options.image === undefined) === (options.video === undefined))
    reasons.push(
      reason(
        'SOURCE_OPTION',
        'image',
        options.image ?? options.video ?? null,
        'exactly one of image and video',
        options.image === undefined ? 'give an image or a video to encode' : 'give an image or a video, not both',
      ),
    );
  if (options.full === true && (options.window !== undefined || options.overlap !== undefined))
    reasons.push(
      reason('SOURCE_OPTION', 'full', true, 'either --full or --window/--overlap', '--full cannot be combined with --window/--overlap'),
    );
  if (options.full === true && (options.frameWindow !== undefined || options.frameOverlap !== undefined))
    reasons.push(
      reason(
        'SOURCE_OPTION',
        'full',
        true,
        'either --full or --frame-window/--frame-overlap',
        '--full cannot be combined with --frame-window/--frame-overlap (one encoder call over every frame)',
      ),
    );
  if (options.frameTiling === false && (options.frameWindow !== undefined || options.frameOverlap !== undefined))
    reasons.push(
      reason(
        'SOURCE_OPTION',
        'frameTiling',
        false,
        'either --no-frame-tiling or --frame-window/--frame-overlap',
        '--no-frame-tiling cannot be combined with --frame-window/--frame-overlap',
      ),
    );
  if (options.strategy !== undefined && !(STRATEGIES as readonly string[]).includes(options.strategy))
    reasons.push(reason('STRATEGY_INVALID', 'strategy', options.strategy, `one of ${STRATEGIES.join(', ')}`));
  else if (options.redis !== undefined && options.strategy !== undefined && options.strategy !== 'tile')
    reasons.push(
      reason(
        'STRATEGY_NEEDS_LOCAL_GROUP',
        'strategy',
        options.strategy,
        'tile (with --redis)',
        `strategy ${options.strategy} needs a local rank group; queue workers cannot exchange halos`,
      ),
    );
  return reasons;
}

/** How `encodeFile`'s caller spells the options a refusal names (the CLI's flags); absent: the option names. */
export interface EncodeFileLabels {
  crop?: string;
  sample?: string;
  video?: string;
  image?: string;
  frameWindow?: string;
  frameOverlap?: string;
  frameTiling?: string;
  maxMemory?: string;
}

/**
 * Refuses `sample` where it cannot be drawn: a family with no distribution (TAE, DC-AE) or an
 * encoder that returns the mean only (its FamilyEncoder does not declare `moments`). Local ranks
 * load the encoder with the moments whatever the strategy: tiles return them, and row sharding
 * and halo-exact tiles run the moments graph (`Encoder.encoderModel`); queue workers started with
 * `--moments` serve them (the run's content hash names the moments encoder, so a mean-only worker
 * refuses it).
 */
function refuseUnsampleable(
  family: FamilySpec,
  encoder: Pick<FamilyEncoder, 'moments'>,
  options: EncodeFileOptions,
  labels: EncodeFileLabels,
): void {
  if (!options.sample) return;
  const option = labels.sample ?? 'sample';
  refuseSamplingWithout(family, option);
  const reasons: Reason[] = [];
  if (encoder.moments !== true)
    reasons.push(
      reason(
        'NO_LATENT_DISTRIBUTION',
        option,
        family.name,
        `one of ${familyNamesWhere((r) => r.encoder?.moments === true).join(', ')} (the families whose encoder returns its moments here)`,
        `${option}: the ${family.name} encoder here returns the latent mean only, not the moments a sample is drawn from`,
      ),
    );
  if (reasons.length > 0) refuse('UNSUPPORTED', reasons);
}

/** The family and encoder a source declares, from its config alone (no weights read); null where only the weights tell (a bare file without a family). */
function declaredEncoder(source: VaeSource): { family: FamilySpec; encoder: FamilyEncoder } | null {
  const explicit = source.family;
  const config = sourceConfig(source);
  // Without a family or a config naming its class (a single file with --config of fields only), the weights' keys tell.
  if (explicit === undefined && typeof config?.['_class_name'] !== 'string') return null;
  const family = resolveFamily(explicit, config);
  const encoder = runtimeOf(family).encoder;
  return encoder ? { family, encoder } : null;
}

/**
 * Refuses an input or frame plan the encoder cannot take, from what its family declares — run
 * before the encoder's weights are read where the source names its family, else after loading:
 * a video (or a 5-D .npy image) to an image encoder, a frame plan to an encoder that never cuts
 * time (FamilyEncoder.temporalTiling).
 */
function refuseUnfitRequest(
  family: FamilySpec,
  encoder: Pick<FamilyEncoder, 'frames' | 'framesFor' | 'temporalTiling'>,
  options: EncodeFileOptions,
  imageDims: readonly number[] | null,
  labels: EncodeFileLabels,
): void {
  const video = encoder.frames !== undefined || encoder.framesFor !== undefined;
  const reasons: Reason[] = [];
  const imageFamily = (option: string, value: unknown, what: string): Reason =>
    reason(
      'FRAMES_ON_IMAGE_FAMILY',
      option,
      value,
      'a video family (its encoder declares a frame loop)',
      `${labels[option as 'video'] ?? option}: the ${family.name} encoder takes images (B, C, H, W); ${what}`,
    );
  if (options.video !== undefined && !video) reasons.push(imageFamily('video', options.video, 'give the input as an image'));
  if (options.image !== undefined && !video && imageDims?.length === 5)
    reasons.push(imageFamily('image', options.image, `${options.image} holds a video (${imageDims.join(', ')})`));
  if (!encoder.temporalTiling) {
    for (const name of ['frameWindow', 'frameOverlap', 'frameTiling'] as const) {
      const value = options[name];
      if (value === undefined || (name === 'frameTiling' && value !== false)) continue;
      reasons.push(
        reason(
          'NO_TEMPORAL_TILING',
          name,
          value,
          'no frame plan: this encoder never cuts time',
          `${labels[name] ?? name}: the ${family.name} encoder has no temporal tiling (every encoder call takes all frames; diffusers has no _temporal_tiled_encode for it)`,
        ),
      );
    }
  }
  // An input of the wrong kind is UNSUPPORTED (as before); a frame plan alone, PLAN_REFUSED.
  if (reasons.length > 0) refuse(reasons.some((r) => r.code === 'FRAMES_ON_IMAGE_FAMILY') ? 'UNSUPPORTED' : 'PLAN_REFUSED', reasons);
}

/** The frame plan the options ask for: null (off), { window, overlap } (on), or undefined (as the family has it). */
function requestedFrames(
  current: { window: number; overlap: number } | null,
  options: EncodeFileOptions,
): { window: number; overlap: number } | null | undefined {
  if (options.frameTiling === false) return null;
  if (options.frameWindow === undefined && options.frameOverlap === undefined) return undefined;
  return { window: options.frameWindow ?? current?.window ?? 0, overlap: options.frameOverlap ?? current?.overlap ?? 0 };
}

/** The most float32 values of a video an encode holds (8 GiB). */
const MAX_VIDEO_VALUES = 2 ** 31;

/** Every frame of a video, in the family's input range: a .npy (B, C, F, H, W) whole, else ffmpeg's frames chunk by chunk into one tensor. */
async function readVideo(path: string, range: SampleRange): Promise<{ image: Tensor; reading: 'whole' | 'chunks' }> {
  if (path.toLowerCase().endsWith('.npy')) {
    const video = readNpy(path);
    if (video.dims.length !== 5)
      refuse(
        'TENSOR_INVALID',
        reason(
          'IMAGE_RANK',
          'video.dims',
          video.dims,
          '5 dimensions (B, C, F, H, W)',
          `${path} holds [${video.dims.join(', ')}]; a video .npy is (B, C, F, H, W)`,
        ),
      );
    return { image: video, reading: 'whole' };
  }
  const input = openVideoInput(path, range);
  const chunks: Tensor[] = [];
  let held = 0;
  for await (const chunk of input.chunks(16)) {
    held += chunk.data.length;
    // Leaving the loop ends ffmpeg (video-input.ts).
    if (held > MAX_VIDEO_VALUES)
      refuse(
        'TENSOR_INVALID',
        reason(
          'IMAGE_TOO_LARGE',
          'video',
          path,
          `at most ${MAX_VIDEO_VALUES / 2 ** 28} GiB of float32 frames`,
          `${path}: its frames pass ${MAX_VIDEO_VALUES / 2 ** 28} GiB as float32 (a video encode holds every frame of a tile); trim it or encode it in parts`,
        ),
      );
    chunks.push(chunk);
  }
  if (chunks.length === 0) throw new DistVaeError('FILE_INVALID', `${path}: its video stream holds no frame`);
  const frames = chunks.reduce((n, c) => n + c.dims[2]!, 0);
  const plane = input.height * input.width;
  const data = new Float32Array(3 * frames * plane);
  let t0 = 0;
  for (const c of chunks) {
    const f = c.dims[2]!;
    for (let ch = 0; ch < 3; ch++) data.set(c.data.subarray(ch * f * plane, (ch + 1) * f * plane), (ch * frames + t0) * plane);
    t0 += f;
  }
  return { image: { dims: [1, 3, frames, input.height, input.width], data }, reading: 'chunks' };
}

/** An image (B, C, H, W) as a one-frame video (B, C, 1, H, W): the same memory. */
const asOneFrame = (image: Tensor): Tensor =>
  image.dims.length === 4 ? { dims: [image.dims[0]!, image.dims[1]!, 1, image.dims[2]!, image.dims[3]!], data: image.data } : image;

/** The queue group of `options.redis`, connected (TRANSPORT_FAILED when Redis is unreachable) before any weights are read. */
async function connectQueue(options: EncodeFileOptions): Promise<QueueGroup> {
  const q = queueGroup({
    connection: options.redis!,
    ...(options.queue !== undefined ? { queue: options.queue } : {}),
    ...(options.ranks !== undefined ? { ranks: options.ranks } : {}),
    ...(options.queueTimeoutMs !== undefined ? { timeoutMs: options.queueTimeoutMs } : {}),
  });
  await q.connect().catch(async (e: unknown) => {
    await q.close();
    throw e;
  });
  return q;
}

/**
 * Encodes one image file to a latents file as `options` ask (see the header), and reports it.
 *
 * @example
 * const report = await encodeFile({ vae: { path: 'sd-vae' }, image: 'photo.png', out: 'z.npy', window: { height: 512, width: 512 }, ranks: 2 });
 */
export async function encodeFile(
  options: EncodeFileOptions,
  hooks: { signal?: AbortSignal } & EncodeFileLabels = {},
): Promise<EncodedFile> {
  const reasons = encodeFileReasons(options);
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  const ranks = options.ranks ?? 1;
  // What the family declares, checked before the encoder's weights are read (its image opened
  // first: a .npy's header tells its rank); a bare weights file's family is known only after.
  const declared = declaredEncoder(options.vae);
  let opened: RowSource | null = null;
  let rows: { close(): void } | null = null;
  if (declared) {
    if (options.image !== undefined) rows = opened = openImageRows(options.image, declared.family.sampleRange);
    try {
      refuseUnfitRequest(declared.family, declared.encoder, options, opened?.dims ?? null, hooks);
      refuseUnsampleable(declared.family, declared.encoder, options, hooks);
    } catch (e) {
      rows?.close();
      throw e;
    }
  }
  // The strategy asked for; without plan options, the memory policy's choice (set below, and per attempt of its ladder).
  let strategy: Strategy = options.strategy ?? 'tile';
  // A queue is reached before any weights are read (an unreachable one is reported first).
  const queue =
    options.redis !== undefined
      ? await connectQueue(options).catch((e: unknown) => {
          rows?.close();
          throw e;
        })
      : null;
  // With local ranks, this process's session runs only a whole encode: it takes their threads (the policy's pooled whole plan).
  const threads = options.threads !== undefined && ranks > 1 && queue === null ? ranks * options.threads : options.threads;
  const encoder = await loadEncoder(options.vae, {
    ...(options.sample ? { moments: true } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.deviceId !== undefined ? { deviceId: options.deviceId } : {}),
    ...(options.precision !== undefined ? { precision: options.precision } : {}),
    ...(options.forceFp16 !== undefined ? { forceFp16: options.forceFp16 } : {}),
  }).catch(async (e: unknown) => {
    rows?.close();
    await queue?.close();
    throw e;
  });
  // Local ranks start when the plan deals work to them (tiles: at most one per tile; row sharding runs on ranks even when there is one).
  let local: LocalGroup | null = null;
  const groupOf = (): RankGroup | null => queue ?? local;
  try {
    if (!declared) refuseUnsampleable(encoder.family, runtimeOf(encoder.family).encoder ?? {}, options, hooks);
    const r = encoder.geometry.spatialRatio;
    const range = encoder.family.sampleRange;
    const frameLoop = encoder.encoding.frames;
    const frameCheck = frameLoop ? { frames: frameLoop } : {};
    if (options.image !== undefined && !opened) rows = opened = openImageRows(options.image, range);
    if (!declared) refuseUnfitRequest(encoder.family, encoder.encoding, options, opened?.dims ?? null, hooks);
    const path = options.video ?? options.image!;
    // An image encoder's rows are read band by band (opened again for a ladder's next attempt and
    // for a tile dealt again); a video encoder takes its input whole — a video (a tile holds every
    // frame), or an image as its one frame (Qwen-Image's images; diffusers' F = 1).
    let first: RowSource | null = frameLoop ? null : opened;
    let current: RowSource | null = first;
    const open = (): ImageRows & { close(): void } => {
      const source = first ?? openImageRows(options.image!, range);
      first = null;
      current = source;
      const cropped = options.crop ? cropRowsToMultiple(source, r) : source;
      return cropped === source ? source : { dims: cropped.dims, rows: (y0, y1) => cropped.rows(y0, y1), close: () => source.close() };
    };
    let input: ImageInput;
    let raw: readonly number[];
    let reading: EncodedFile['reading'];
    if (frameLoop) {
      let read: { image: Tensor; reading: EncodedFile['reading'] };
      if (opened) {
        rows = null;
        try {
          read = { image: readAllRows(opened), reading: opened.reading };
        } finally {
          opened.close();
        }
      } else read = await readVideo(path, range);
      const video = asOneFrame(read.image);
      raw = video.dims;
      reading = read.reading;
      if (!options.crop) checkImage(encoder.config, video, path, { crop: hooks.crop ?? 'crop: true', ...frameCheck });
      input = options.crop ? cropToMultiple(video, r) : video;
    } else {
      raw = opened!.dims;
      reading = opened!.reading;
      if (!options.crop) checkImage(encoder.config, { dims: raw }, path, { crop: hooks.crop ?? 'crop: true' });
      const bandInput = open();
      rows = bandInput;
      input = bandInput;
      if (options.crop) checkImage(encoder.config, { dims: input.dims }, path);
    }
    const size = { height: input.dims.at(-2)!, width: input.dims.at(-1)! };
    const batch = input.dims[0] ?? 1;
    const budget = { bytes: options.maxMemory ?? defaultMemoryBudget() };
    const labels = (o: string) => (o === 'maxMemory' ? (hooks.maxMemory ?? 'maxMemory') : o);
    const rankSetting = {
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
      ...(options.provider !== undefined ? { provider: options.provider } : {}),
      devices: 'shared' as const,
    };
    const notes: string[] = [];
    const frameOption = options.frameWindow !== undefined || options.frameOverlap !== undefined || options.frameTiling !== undefined;
    // No plan option (and no queue): the memory policy's choice among the strategies it predicts for encoders; else the plan asked for.
    const auto =
      queue === null &&
      options.window === undefined &&
      options.overlap === undefined &&
      options.full !== true &&
      options.strategy === undefined &&
      !frameOption;
    const bands = reading === 'streamed';
    // A sample's encoder returns the moments (2·C channels): the model counts them.
    const sampling = options.sample ? { moments: true } : {};
    const dealt = queue !== null || ranks > 1 || strategy === 'shard';
    let decision: Decision | null = null;
    // The memory model reads an encode as (B, C, H, W) image tiles: a video input runs the plan
    // asked for or the default one, as for a family it does not describe (a video encoder that
    // exposes its graph for row sharding — HunyuanVideo, MiniMax-H3 — would otherwise reach it).
    const modelled = hasMemoryModel(encoder) && input.dims.length === 4;
    if (auto && modelled) {
      const decideAmong = (strategies: readonly Strategy[]) =>
        decide(encoder, size, budget, { ranks, batch, isolated: false, strategies, bands, ...sampling, ...rankSetting });
      // The whole encode when it fits; the exact strategies only when it does not. The time model is
      // fitted to decodes, and a row-sharded encode measured 4–6× the whole encode's seconds here
      // (bench/results/encode-sd.md) where the model ranks it faster, so among exact plans it would
      // pick the slower one.
      decision = decideAmong(['tile']);
      if (decision.choice?.plan.strategy !== 'whole' && policyStrategies(encoder).length > 1)
        decision = decideAmong(policyStrategies(encoder));
    }
    if (decision?.choice) strategy = strategyOf(decision.choice.plan);
    else {
      // Tiles when asked for (a window, or ranks or workers to deal them to); else whole, as diffusers' encode.
      // Time is cut as the family defaults (HunyuanVideo on, LTX-2 off) unless a frame option says otherwise; --full: neither.
      if (options.window !== undefined || options.overlap !== undefined || (dealt && options.full !== true && strategy !== 'shard'))
        installRequestedTiling(encoder, options, size);
      else if (options.full === true) setTiling(encoder, 'off');
      else {
        const frames = requestedFrames(encoder.tiling.frames, options);
        if (frames !== undefined) {
          const refusals = frames ? explainTileFramePlan(encoder, frames.window, frames.overlap) : [];
          if (refusals.length > 0) refuse('PLAN_REFUSED', refusals);
          setTiling(encoder, tileFramePlan(encoder, frames)!);
        }
      }
      // A plan on local ranks is predicted (and refused over an explicit budget); queue workers run as asked.
      if (!auto && queue === null && modelled)
        decision = exactRequest(
          encoder,
          size,
          { budget, explicit: options.maxMemory !== undefined, labels, limits: null },
          {
            strategy,
            // Tiles go to at most one rank each; row sharding and halo-exact tiles run on the ranks asked for.
            ranks: strategy === 'tile' ? Math.min(ranks, encodeGrid(encoder, input).tiles.length) : ranks,
            batch,
            streamed: false,
            bands,
            ...sampling,
            strategies: policyStrategies(encoder),
            ...rankSetting,
          },
          (text) => notes.push(text),
        );
    }
    if (decision?.toneDrift) notes.push(decision.toneDrift.message);
    // More ranks than latent rows is refused before any rank starts (as decoding's session does).
    if (strategy === 'shard') splitInputBands(size.height, queue?.size ?? ranks, r);
    let report: StrategyReport | null = null;
    // The strategy and its ranks: up front for row sharding, halo-exact tiles and queue workers; for blended tiles on local ranks when a plan is tiled.
    // A plan the policy chose runs its ranks as processes, as the memory model prices them and as
    // decoding's ladder does (an OOM-killed rank moves the ladder on); else the isolation asked for.
    const isolation = options.isolation ?? (auto && decision?.choice ? 'process' : undefined);
    const useRanks = async (tiled: boolean): Promise<void> => {
      if (report || (strategy === 'tile' && !tiled)) return;
      if (strategy === 'tile' && queue === null) {
        const n = Math.min(ranks, encodeGrid(encoder, input).tiles.length);
        if (n < 2) return;
        local = localGroup({ ranks: n, ...(isolation ? { isolation } : {}), threadsPerRank: options.threads ?? 1 });
      } else if (queue === null && (ranks > 1 || strategy === 'shard'))
        local = localGroup({ ranks, ...(isolation ? { isolation } : {}), threadsPerRank: options.threads ?? 1 });
      await local?.start();
      report = useStrategy(encoder, strategy, groupOf());
    };
    if ((strategy !== 'tile' && !decision?.choice) || queue !== null) await useRanks(true);
    let bandBytes = 0;
    const encodeOnce = async () => {
      const grid = encodeGrid(encoder, input);
      const signal = hooks.signal ? { signal: hooks.signal } : {};
      if (!grid.tiled && !encoder.tiledEncode.encodesUntiled) {
        // A whole encode reads every row, its values checked as a tensor's are.
        const whole = wholeImage(input);
        checkImage(encoder.config, whole, path, frameCheck);
        return encoder.encode(whole, signal);
      }
      await useRanks(grid.tiled);
      // A tiled encode pulls its tiles' bands from the rows as it reaches them.
      const source = current;
      const latents = await encoder.encode(input, { ...signal, ...(source ? { reopen: open } : {}), onBandBytes: (b) => (bandBytes = b) });
      // What a streamed input held: the tiles' bands and the rows the source decoded and kept (a PNG's, from the last band's start).
      const rowBytes = (4 * raw.reduce((a, b) => a * b, 1)) / raw.at(-2)!;
      bandBytes = source && reading === 'streamed' && grid.tiled && strategy === 'tile' ? bandBytes + source.peakRowsHeld * rowBytes : 0;
      return latents;
    };
    const start = performance.now();
    let encoded: Tensor;
    let attempts: LadderAttempt[] | null = null;
    if (auto && decision?.choice) {
      // Down the policy's ladder when an attempt runs out of memory (an allocation failure in this
      // process, an OOM-killed rank): each attempt runs its plan's strategy, on ranks of its own.
      const outcome = await runLadder(ladderRungs(decision.alternatives, decision.choice), async (alt, i) => {
        const next = strategyOf(alt.plan);
        if (i > 0 || next !== strategy) {
          const previous = strategy;
          await local?.close();
          local = null;
          report = null;
          strategy = next;
          // Back to the encoder's own tiled encode after another strategy's (tiles dealt to ranks install theirs).
          if (previous !== 'tile' && next === 'tile') useStrategy(encoder, 'tile', null);
        }
        setTiling(encoder, alt.tiling);
        if (i > 0 && !frameLoop) {
          rows?.close();
          const again = open();
          rows = again;
          input = again;
        }
        if (strategy !== 'tile') await useRanks(true);
        return encodeOnce();
      });
      encoded = outcome.result;
      attempts = outcome.attempts;
      decision = { ...decision, plan: outcome.rung.plan, prediction: outcome.rung.prediction };
    } else encoded = await encodeOnce();
    const seconds = (performance.now() - start) / 1000;
    const grid = encodeGrid(encoder, input);
    // With sample, the encoder returned the moments (tiled and blended as the mean is, as diffusers' tiled_encode blends them).
    const mean = options.sample ? sampleLatents(encoded, options.seed ?? 0) : encoded;
    const scaled = options.scaled === true;
    const fields = encoder.config.fields;
    const batchNorm = scaled && typeof fields['batch_norm_eps'] === 'number' ? await readLatentBatchNorm(options.vae) : undefined;
    const latents = scaled ? scaleLatents(mean, latentScalingOf(fields, encoder.family.name, batchNorm ? { batchNorm } : {})) : mean;
    writeLatentsFile(options.out, latents, { scaled });
    const strategyReport = report as StrategyReport | null;
    notes.push(...(strategyReport?.notes() ?? []));
    if ((dealt || ranks > 1) && !grid.tiled && strategy === 'tile')
      notes.push(`the image fits in one window: encoded whole in this process, not on the ${queue?.size ?? ranks} ranks`);
    const shardBands = strategyReport?.shard()?.bands;
    if (shardBands)
      notes.push(
        `row-sharded over ${shardBands.length} rank(s): bands of image rows ${shardBands.map((b) => `${b.start}..${b.end}`).join(', ')}`,
      );
    const rankStats = strategyReport?.ranks() ?? [{ rank: 0, tiles: grid.tiles.map((t) => t.index), load: grid.tiles.length, seconds }];
    if (options.sample)
      notes.push(
        `sampled from the latent distribution with seed ${options.seed ?? 0} (distvae's normal stream: not torch's, so not diffusers' draw for that seed)`,
      );
    return {
      image: { height: raw.at(-2)!, width: raw.at(-1)! },
      frames: frameLoop ? raw[2]! : null,
      encoded: size,
      shape: [...latents.dims],
      tiles: strategy === 'shard' ? 1 : grid.tiles.length,
      plan: grid.tiled && strategy !== 'shard' ? { window: { ...encoder.tiling.window }, overlap: { ...encoder.tiling.overlap } } : null,
      strategy,
      seconds,
      ranks: rankStats,
      notes,
      out: options.out,
      className: encoder.config.className,
      reading,
      scaled,
      decision: decision?.plan ? { plan: describePlan(decision.plan), reason: decision.reason } : null,
      memory: memoryJson(budget, decision?.prediction ?? null, { coordinator: peakRssBytes(), ranks: strategyReport ? rankStats : [] }),
      attempts,
      bandBytes,
    };
  } finally {
    rows?.close();
    await groupOf()?.close();
    await encoder.dispose();
  }
}
