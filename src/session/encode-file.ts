// The library's encode session, `encodeFile`: an image file (PNG / JPEG, read through a row
// source into the family's input range; or a .npy already in that range) through an encoder to a
// latents file (.npy, .safetensors with the tensor `latents`, or a ComfyUI .latent), raw or
// scaled as a pipeline hands them on — the counterpart of decodeFiles for one file. It takes the decode session's plan, strategy, rank and runtime options and reads them
// the same way: the exact planner (installRequestedTiling, windows in input pixels), the strategy
// table (`useStrategy`: tile, shard or exact-tile), local ranks started for the encode and closed
// after it. Without a plan option the encode is whole, as diffusers' `encode` is; with
// --ranks R > 1 and no window, the family's default tiles are dealt to the ranks (row
// sharding ignores the plan: bands of whole latent rows, one per rank).

import { checkImage, cropToMultiple } from '../encode/image-check.js';
import { loadEncoder } from '../encode/encoder.js';
import { DistVaeError, reason, refuse, type Reason } from '../errors.js';
import type { Size2 } from '../families/types.js';
import { latentScalingOf, scaleLatents } from '../io/latent-scaling.js';
import { refuseSamplingWithout } from '../io/latent-sample.js';
import { LATENT_OUTPUT_EXTENSIONS, latentsOutputReasons, writeLatentsFile } from '../io/latents-out.js';
import { openImageRows, readAllRows } from '../io/row-source.js';
import { readLatentBatchNorm } from '../sources/latent-statistics.js';
import { encodeGrid } from '../encode/engine.js';
import type { RankGroup } from '../ranks/group.js';
import { localGroup } from '../ranks/local/index.js';
import { queueGroup } from '../ranks/queue/index.js';
import type { QueueGroup } from '../ranks/queue/queue-group.js';
import type { Isolation } from '../ranks/local/local-group.js';
import type { VaeSource } from '../sources/vae-source.js';
import { STRATEGIES, useStrategy, type Strategy } from '../strategies/index.js';
import { splitInputBands } from '../strategies/shard/bands.js';
import type { RankStats } from '../decode/types.js';
import type { Tensor } from '../tensor.js';
import { installRequestedTiling } from './decision.js';
import type { LoadOptions } from '../decode/vae.js';

/** Latents files `encodeFile` writes. */
export const ENCODE_OUTPUT_EXTENSIONS = LATENT_OUTPUT_EXTENSIONS;

/** What `encodeFile` encodes and how: the decode session's plan, strategy, rank and runtime options. */
export interface EncodeFileOptions extends Pick<LoadOptions, 'threads' | 'provider' | 'deviceId' | 'precision' | 'forceFp16'> {
  /** The encoder: a diffusers folder or pipeline, a Hub repo id, a weights file (TAE), or synthetic weights. */
  vae: VaeSource;
  /** PNG or JPEG (values from [0, 255] to the family's input range), or .npy (B, C, H, W) already in that range. */
  image: string;
  /** .npy, .safetensors with the tensor `latents`, or a ComfyUI .latent (raw latents only). */
  out: string;
  /** Write the latents as a pipeline hands them to its denoiser (what decode's latentsScaled undoes). */
  scaled?: boolean;
  /** Draw from the latent distribution instead of taking its mean (refused where the family has none). */
  sample?: boolean;
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
   * Redis URL of a queue whose workers serve this encoder (`distvae worker --encoder`): the tiles
   * (the family's default without a window) go to them, blended here — bitwise the one-rank
   * tiled encode. Tile strategy only (workers cannot exchange halos).
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
  /** How the image was read: 'streamed' (PNG band by band, .npy by positional reads) or 'whole' (JPEG, interlaced PNG). */
  reading: 'streamed' | 'whole';
  /** Whether the latents were written scaled. */
  scaled: boolean;
}

/** The options' own refusals (before any file is read), every reason at once. */
export function encodeFileReasons(options: EncodeFileOptions): Reason[] {
  const reasons: Reason[] = [...latentsOutputReasons(options.out, { scaled: options.scaled === true })];
  if (options.full === true && (options.window !== undefined || options.overlap !== undefined))
    reasons.push(
      reason('SOURCE_OPTION', 'full', true, 'either --full or --window/--overlap', '--full cannot be combined with --window/--overlap'),
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

/** Every row of the image, in the family's input range (PNG / .npy streamed, JPEG whole). */
function readInput(path: string, range: Parameters<typeof openImageRows>[1]): { image: Tensor; reading: 'streamed' | 'whole' } {
  const rows = openImageRows(path, range);
  try {
    return { image: readAllRows(rows), reading: rows.reading };
  } finally {
    rows.close();
  }
}

/**
 * Encodes one image file to a latents file as `options` ask (see the header), and reports it.
 *
 * @example
 * const report = await encodeFile({ vae: { path: 'sd-vae' }, image: 'photo.png', out: 'z.npy', window: { height: 512, width: 512 }, ranks: 2 });
 */
export async function encodeFile(
  options: EncodeFileOptions,
  hooks: { signal?: AbortSignal; crop?: string; sample?: string } = {},
): Promise<EncodedFile> {
  const reasons = encodeFileReasons(options);
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  const ranks = options.ranks ?? 1;
  const strategy = options.strategy ?? 'tile';
  // A queue is reached before any weights are read (an unreachable one is reported first).
  const queue = options.redis !== undefined ? await connectQueue(options) : null;
  const encoder = await loadEncoder(options.vae, {
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.deviceId !== undefined ? { deviceId: options.deviceId } : {}),
    ...(options.precision !== undefined ? { precision: options.precision } : {}),
    ...(options.forceFp16 !== undefined ? { forceFp16: options.forceFp16 } : {}),
  }).catch(async (e: unknown) => {
    await queue?.close();
    throw e;
  });
  // Row sharding runs on ranks even when there is one (as decoding's does).
  const local =
    queue === null && (ranks > 1 || strategy === 'shard')
      ? localGroup({ ranks, ...(options.isolation ? { isolation: options.isolation } : {}), threadsPerRank: options.threads ?? 1 })
      : null;
  const group: RankGroup | null = queue ?? local;
  const distributed = group !== null && (group.size > 1 || strategy !== 'tile');
  try {
    if (options.sample) {
      refuseSamplingWithout(encoder.family, hooks.sample ?? 'sample');
      throw new DistVaeError(
        'UNSUPPORTED',
        `${hooks.sample ?? 'sample'}: the ${encoder.family.name} encoder here returns the latent mean only, not the moments a sample is drawn from`,
      );
    }
    const r = encoder.geometry.spatialRatio;
    const { image: raw, reading } = readInput(options.image, encoder.family.sampleRange);
    if (!options.crop) checkImage(encoder.config, raw, options.image, { crop: hooks.crop ?? 'crop: true' });
    const input = options.crop ? cropToMultiple(raw, r) : raw;
    const size = { height: input.dims[2]!, width: input.dims[3]! };
    // Tiles when asked for (a window, or ranks to deal them to); else whole, as diffusers' encode.
    if (options.window !== undefined || options.overlap !== undefined || (distributed && options.full !== true && strategy !== 'shard'))
      installRequestedTiling(encoder, options, size);
    const grid = encodeGrid(encoder, input);
    // More ranks than latent rows is refused before any rank starts (as decoding's session does).
    if (strategy === 'shard') splitInputBands(size.height, group!.size, r);
    await local?.start();
    const report = group || strategy !== 'tile' ? useStrategy(encoder, strategy, group) : null;
    const start = performance.now();
    const mean = await encoder.encode(input, hooks.signal ? { signal: hooks.signal } : {});
    const seconds = (performance.now() - start) / 1000;
    const scaled = options.scaled === true;
    const fields = encoder.config.fields;
    const batchNorm = scaled && typeof fields['batch_norm_eps'] === 'number' ? await readLatentBatchNorm(options.vae) : undefined;
    const latents = scaled ? scaleLatents(mean, latentScalingOf(fields, encoder.family.name, batchNorm ? { batchNorm } : {})) : mean;
    writeLatentsFile(options.out, latents, { scaled });
    const notes = report?.notes() ?? [];
    if (group && !grid.tiled && strategy === 'tile')
      notes.push(`the image fits in one window: encoded whole in this process, not on the ${group.size} ranks`);
    const bands = report?.shard()?.bands;
    if (bands)
      notes.push(`row-sharded over ${bands.length} rank(s): bands of image rows ${bands.map((b) => `${b.start}..${b.end}`).join(', ')}`);
    return {
      image: { height: raw.dims[2]!, width: raw.dims[3]! },
      encoded: size,
      shape: [...latents.dims],
      tiles: strategy === 'shard' ? 1 : grid.tiles.length,
      plan: grid.tiled && strategy !== 'shard' ? { window: { ...encoder.tiling.window }, overlap: { ...encoder.tiling.overlap } } : null,
      strategy,
      seconds,
      ranks: report?.ranks() ?? [{ rank: 0, tiles: grid.tiles.map((t) => t.index), load: grid.tiles.length, seconds }],
      notes,
      out: options.out,
      className: encoder.config.className,
      reading,
      scaled,
    };
  } finally {
    await group?.close();
    await encoder.dispose();
  }
}
