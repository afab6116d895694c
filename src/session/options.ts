// What a caller of `decodeFiles` may ask for: the options type, and the checks that run on it
// before any file is read (combinations that cannot mean anything, output paths that cannot be
// written). Every problem is reported at once as one INVALID_ARGUMENT error whose reasons name the
// offending option and its valid values; `labels` names options as the caller spells them (the
// CLI's `--out-dir` for `outDir`), so one set of rules serves the library and the command line.

import { providerLimits, tensorLimitBytes, type BufferLimits } from '../memory/device-limits.js';
import { extname, join } from 'node:path';
import { refuse, reason, type Reason } from '../errors.js';
import type { Size2 } from '../families/types.js';
import type { VaeSource } from '../sources/vae-source.js';
import type { LoadOptions } from '../decode/vae.js';
import type { Precision } from '../graph/precision.js';
import { expandLatentsArg, latentsStem } from '../io/latents.js';
import { isVideoPath, VIDEO_EXTENSIONS } from '../io/video.js';
import type { Isolation } from '../ranks/local/local-group.js';
import type { Strategy } from '../strategies/index.js';
import { defaultMemoryBudget } from '../runtime/memory-budget.js';
import type { MemoryBudget } from '../memory/policy.js';
import { outputPathReasons, outputsOverInputsReasons } from './output-path.js';

/** The output formats of `outDir`, and the extensions `out` may end in. */
export const OUTPUT_FORMATS = ['png', 'npy', 'mp4', 'webm'] as const;
/** An output format of `outDir`. */
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
const OUTPUT_EXTENSIONS = ['.npy', '.png', ...VIDEO_EXTENSIONS];
/** Most local ranks a decode may ask for. */
export const MAX_RANKS = 1024;

/** A decode of one or more latent files into files: what to load, what to decode, where and within what memory. */
export interface DecodeFilesOptions {
  /** The VAE: a diffusers folder, Hub repo id or weights file, or synthetic weights for a config. */
  vae: VaeSource;
  /** A latent file (.npy, .safetensors[:NAME], ComfyUI .latent), a folder of them, or a glob; several need `outDir`. */
  latents: string;
  /** The config.json `vae.config` was read from, when the caller read one: the output may not overwrite it. */
  configPath?: string;
  /**
   * The output of a single latent file: .npy (the raw `decode(z).sample`), .png (the family's value
   * mapping; one file per image/frame) or .mp4/.webm (through the system ffmpeg). Exclusive with `outDir`.
   */
  out?: string;
  /** With several latents: one output per latent, `outDir/<stem>.<outFormat>`, all with one VAE load. */
  outDir?: string;
  /** The format of the `outDir` outputs (default png). */
  outFormat?: OutputFormat;
  /** The latents are a pipeline's (output_type="latent"): unscale them with the config's scaling and shift factors first. */
  latentsScaled?: boolean;
  /** PNG bit depth (default 8); PNG output only. */
  bitDepth?: 8 | 16;
  /** Frames per second of video output (> 0; default the writer's). */
  fps?: number;
  /** Timestep of a timestep-conditioned decoder (LTX-2); overrides the config's decode_timestep. */
  decodeTimestep?: number;
  /**
   * How tiles are decoded: 'tile' (blended, diffusers), 'shard' (row sharding, equal to the whole
   * decode) or 'exact-tile'. Giving it, or any plan option, makes the decode an exact request;
   * absent with no plan option, the memory policy chooses the plan within the budget.
   */
  strategy?: Strategy;
  /** One decoder call over everything: no spatial and no temporal tiling. */
  full?: boolean;
  /** Tile window in output pixels (exact: refused, never rounded). */
  window?: Size2;
  /** Tile overlap in output pixels (exact). */
  overlap?: Size2;
  /** Temporal tile window in frames (a multiple of the temporal ratio); turns temporal tiling on. */
  frameWindow?: number;
  /** Temporal tile overlap in frames (a multiple of the temporal ratio). */
  frameOverlap?: number;
  /** false: temporal tiling off. */
  frameTiling?: boolean;
  /** Ranks the tiles or bands are dealt to, in [1, 1024] (default 1); with `redis`, the runs (>= 2) a decode is dealt into. */
  ranks?: number;
  /**
   * Local ranks as worker threads or child processes (default thread; process for a provider other
   * than cpu, whose native layers' own stderr lines only a child process lets distvae filter);
   * needs `ranks` unless row sharding.
   */
  isolation?: Isolation;
  /** Intra-op threads per rank (default all cores). */
  threads?: number;
  /** onnxruntime execution provider (default cpu). */
  provider?: string;
  /** Device id of the execution provider (webgpu: an adapter id of `distvae devices`), for every rank. */
  deviceId?: number;
  /**
   * Devices of the local ranks, rank r on `devices[r % devices.length]` (several ranks may share
   * one): webgpu adapter ids of `distvae devices`, or cuda / dml device ids. Unknown adapters are
   * refused before any work. Several GPUs are untested (CI and the GPU machine have one each).
   */
  devices?: number[];
  /** 'fp16': decode in float16 on a GPU provider with shader-f16 (LoadOptions.precision); default 'fp32'. */
  precision?: Precision;
  /** Decode in float16 even where the config sets force_upcast (LoadOptions.forceFp16). */
  forceFp16?: boolean;
  /** Redis URL of a queue whose `distvae worker`s decode the tiles (blended tiles only). */
  redis?: string;
  /** Queue name with `redis` (default distvae). */
  queue?: string;
  /** With `redis`: fail when no worker takes or finishes a tile for this long (ms). */
  queueTimeoutMs?: number;
  /** Memory budget of this process and its local ranks, in bytes: a hard cap (default 80 % of what this process tree may use, a soft one). */
  maxMemory?: number;
  /**
   * Largest single tensor a plan may allocate, in bytes (a hard cap). On webgpu it replaces the
   * buffer limits plans are checked against (default: WebGPU's, 128 MiB per storage binding).
   */
  maxTensor?: number;
  /**
   * Device memory each GPU rank may use, in bytes (a hard cap; memory/device-memory.ts predicts
   * it from the graphs' live buffers): the policy picks a plan within it, an exact request over it
   * is refused. Only with a GPU provider.
   */
  maxDeviceMemory?: number;
  /** false: the memory policy's choice runs as chosen, without the fallback ladder (only without plan options). */
  fallback?: boolean;
}

/** How the session names an option in its refusals (the library: the option's own name). */
export type OptionLabels = (option: keyof DecodeFilesOptions) => string;

const OWN_NAMES: OptionLabels = (option) => option;

/** What the session decodes, read from the options once they are checked. */
export interface DecodeRequest {
  options: DecodeFilesOptions;
  labels: OptionLabels;
  /** The latent files, and the output each decodes to (same order). */
  inputs: string[];
  outputs: string[];
  video: boolean;
  bitDepth: 8 | 16;
  fps: number | undefined;
  source: VaeSource;
  loadOptions: LoadOptions;
  strategy: Strategy;
  ranks: number;
  isolation: Isolation;
  budget: MemoryBudget;
  /** True when the budget was given: a hard cap. */
  budgetExplicit: boolean;
  /** The per-buffer limits plans must fit (webgpu, or --max-tensor): a hard cap, its tensor named in refusals. */
  limits: BufferLimits | null;
  /** No plan option at all: the memory policy's choice. */
  auto: boolean;
  /** The policy's choice runs with a fallback ladder of rank processes. */
  ladder: boolean;
}

/** The plan options, in the order their refusals are reported. */
const PLAN_OPTIONS = ['window', 'overlap', 'frameWindow', 'frameOverlap', 'frameTiling', 'full'] as const;

/** The value of an option as a refusal shows it (a size as HxW). */
function shown(value: unknown): unknown {
  return typeof value === 'object' && value !== null && 'height' in value && 'width' in value ? `${value.height}x${value.width}` : value;
}

/** Whether an option is given (frameTiling only as false, the flags only as true). */
function given(options: DecodeFilesOptions, name: keyof DecodeFilesOptions): boolean {
  const value = options[name];
  if (name === 'frameTiling' || name === 'fallback') return value === false;
  if (name === 'full') return value === true;
  return value !== undefined;
}

/**
 * No plan option at all (and no queue): the memory policy's choice (docs/design.md §9). Any plan
 * option or an explicit strategy is an exact request, decoded as asked.
 */
function isPolicyChoice(options: DecodeFilesOptions): boolean {
  return options.redis === undefined && options.strategy === undefined && !PLAN_OPTIONS.some((name) => given(options, name));
}

/** The reasons the options cannot be decoded as given, in the order they are reported (empty: they can). */
export function decodeFilesReasons(options: DecodeFilesOptions, labels: OptionLabels = OWN_NAMES): Reason[] {
  return [...outputReasons(options, labels), ...strategyReasons(options, labels), ...placementReasons(options, labels)];
}

/** Checks the options and reads what the session decodes; throws INVALID_ARGUMENT with every reason at once. */
export function readDecodeRequest(options: DecodeFilesOptions, labels: OptionLabels = OWN_NAMES): DecodeRequest {
  const reasons = decodeFilesReasons(options, labels);
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
  const inputs = expandLatentsArg(options.latents);
  const outputs = outputsOf(options, inputs);
  const auto = isPolicyChoice(options);
  // A ladder runs every attempt in rank processes; threads asked for explicitly keep the plain decode.
  const ladder = auto && options.fallback !== false && options.isolation !== 'thread';
  const { decodeTimestep, vae } = options;
  const source = decodeTimestep === undefined ? vae : { ...vae, config: { ...(vae.config ?? {}), decode_timestep: decodeTimestep } };
  const explicit = options.maxMemory !== undefined || options.maxTensor !== undefined;
  const limits = providerLimits(options.provider ?? 'cpu', options.maxTensor);
  return {
    options,
    labels,
    inputs,
    outputs,
    video: isVideoPath(outputs[0]!),
    bitDepth: options.bitDepth ?? 8,
    fps: options.fps,
    source,
    loadOptions: {
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
      ...(options.provider !== undefined ? { provider: options.provider } : {}),
      ...(options.deviceId !== undefined ? { deviceId: options.deviceId } : {}),
      ...(options.precision !== undefined ? { precision: options.precision } : {}),
      ...(options.forceFp16 !== undefined ? { forceFp16: options.forceFp16 } : {}),
    },
    strategy: options.strategy ?? 'tile',
    ranks: options.ranks ?? 1,
    isolation: options.isolation ?? ((options.provider ?? 'cpu') === 'cpu' ? 'thread' : 'process'),
    budget: {
      bytes: options.maxMemory ?? defaultMemoryBudget(),
      ...(limits ? { maxTensorBytes: tensorLimitBytes(limits) } : {}),
      ...(options.maxDeviceMemory !== undefined ? { deviceBytes: options.maxDeviceMemory } : {}),
    },
    budgetExplicit: explicit,
    limits,
    auto,
    ladder,
  };
}

/** The output of each latent file: `out`, or `outDir/<stem>.<outFormat>`. */
function outputsOf(options: DecodeFilesOptions, inputs: string[]): string[] {
  const { outDir, outFormat, out } = options;
  return outDir !== undefined ? inputs.map((p) => join(outDir, `${latentsStem(p)}.${outFormat ?? 'png'}`)) : [out!];
}

/** latents, out / outDir and the output format's own options. */
function outputReasons(options: DecodeFilesOptions, label: OptionLabels): Reason[] {
  const reasons: Reason[] = [];
  const refused = (option: keyof DecodeFilesOptions, valid: string, message: string) =>
    reasons.push(reason('INVALID_ARGUMENT', label(option), shown(options[option]), valid, message));
  const { latents, outDir, outFormat, fps, bitDepth } = options;
  const inputs = expandLatentsArg(latents);
  if (outDir === undefined && inputs.length > 1)
    refused(
      'latents',
      'one file, or several with outDir',
      `${label('latents')} ${latents} names ${inputs.length} files: give ${label('outDir')} DIR (one output per latent)`,
    );
  if (outDir !== undefined && options.out !== undefined)
    refused('out', `absent with ${label('outDir')}`, `${label('out')} and ${label('outDir')} are exclusive`);
  if (outDir === undefined && options.out === undefined)
    reasons.push(reason('MISSING_OPTION', label('out'), undefined, 'a value', `${label('out')} is required`));
  if (outDir === undefined && outFormat !== undefined)
    refused(
      'outFormat',
      `only with ${label('outDir')}`,
      `${label('outFormat')} names the outputs of ${label('outDir')}; ${label('out')} carries its own extension`,
    );
  if (outDir === undefined && options.out === undefined) return reasons;
  const outputs = outputsOf(options, inputs);
  const out = outputs[0];
  const video = out !== undefined && isVideoPath(out);
  if (out !== undefined && !OUTPUT_EXTENSIONS.includes(extname(out).toLowerCase())) {
    reasons.push(
      reason(
        'INVALID_ARGUMENT',
        label('out'),
        out,
        `a path ending in ${OUTPUT_EXTENSIONS.join(' or ')}`,
        `${label('out')} ${out}: the output must end in ${OUTPUT_EXTENSIONS.join(' or ')}`,
      ),
    );
  }
  if (fps !== undefined && !(fps > 0)) refused('fps', 'a number > 0', `${label('fps')} ${fps}: frames per second must be > 0`);
  if (fps !== undefined && !video)
    refused('fps', `only with ${label('out')} .mp4/.webm`, `${label('fps')} applies only to video output (${label('out')} .mp4 or .webm)`);
  if (bitDepth !== undefined && out !== undefined && extname(out).toLowerCase() !== '.png')
    refused(
      'bitDepth',
      `only with ${label('out')} .png`,
      `${label('bitDepth')} applies only to PNG output; ${label('out')} ${out} is not a .png`,
    );
  const vaePath = 'path' in options.vae ? options.vae.path : undefined;
  if (out !== undefined) reasons.push(...outputPathReasons(out, { latents, vae: vaePath, configPath: options.configPath }, label));
  if (outDir !== undefined) reasons.push(...outputsOverInputsReasons(outDir, outputs, inputs, label));
  return reasons;
}

/** The strategy, and the plan options it cannot take. */
function strategyReasons(options: DecodeFilesOptions, label: OptionLabels): Reason[] {
  const reasons: Reason[] = [];
  const strategy = options.strategy ?? 'tile';
  const refused = (option: keyof DecodeFilesOptions, valid: string, message: string) =>
    reasons.push(reason('INVALID_ARGUMENT', label(option), shown(options[option]), valid, message));
  const refusedWith: readonly (typeof PLAN_OPTIONS)[number][] =
    strategy === 'shard' ? PLAN_OPTIONS : strategy === 'exact-tile' ? ['full'] : [];
  for (const name of refusedWith) {
    if (given(options, name))
      refused(
        name,
        `absent with ${label('strategy')} ${strategy}`,
        `${label(name)} cannot be combined with ${label('strategy')} ${strategy} (${strategy === 'shard' ? 'row sharding splits every layer into bands, it has no tile plan' : "halo-exact tiles are the plan's tiles"})`,
      );
  }
  if (options.full === true && strategy !== 'shard') {
    for (const name of ['window', 'overlap', 'frameWindow', 'frameOverlap'] as const) {
      if (given(options, name))
        refused(
          name,
          `absent with ${label('full')}`,
          `${label(name)} cannot be combined with ${label('full')} (one decoder call over everything)`,
        );
    }
  }
  if (options.frameTiling === false && (options.frameWindow !== undefined || options.frameOverlap !== undefined))
    refused(
      'frameTiling',
      `either ${label('frameTiling')} or ${label('frameWindow')}/${label('frameOverlap')}`,
      `${label('frameTiling')} cannot be combined with ${label('frameWindow')}/${label('frameOverlap')}`,
    );
  if (!isPolicyChoice(options) && options.fallback === false)
    refused(
      'fallback',
      'only without plan options',
      `${label('fallback')} applies to the memory policy's choice (a decode without ${['window', 'overlap', 'full', 'strategy'].map((n) => label(n as keyof DecodeFilesOptions)).join('/')})`,
    );
  return reasons;
}

/** Where the decoder calls run: local ranks (ranks, isolation) or a queue (redis ...). */
function placementReasons(options: DecodeFilesOptions, label: OptionLabels): Reason[] {
  const reasons: Reason[] = [];
  const refused = (option: keyof DecodeFilesOptions, valid: string, message: string) =>
    reasons.push(reason('INVALID_ARGUMENT', label(option), options[option], valid, message));
  const { ranks, isolation, redis, devices } = options;
  const strategy = options.strategy ?? 'tile';
  if (options.maxDeviceMemory !== undefined) {
    const m = options.maxDeviceMemory;
    if (!(Number.isSafeInteger(m) && m > 0))
      reasons.push(
        reason(
          'INVALID_NUMBER',
          label('maxDeviceMemory'),
          m,
          'a positive number of bytes',
          `${label('maxDeviceMemory')} ${m} is not a positive number of bytes`,
        ),
      );
    if ((options.provider ?? 'cpu') === 'cpu')
      refused(
        'maxDeviceMemory',
        'a GPU provider (webgpu, cuda, dml)',
        `${label('maxDeviceMemory')} bounds a GPU rank's device memory: the cpu provider has none`,
      );
  }
  if (devices !== undefined) {
    if (!Array.isArray(devices) || devices.length === 0 || !devices.every((d) => Number.isSafeInteger(d) && d >= 0))
      reasons.push(reason('DEVICES_INVALID', label('devices'), devices, 'a non-empty list of non-negative integer device ids'));
    if (options.deviceId !== undefined)
      refused(
        'deviceId',
        `absent with ${label('devices')}`,
        `${label('deviceId')} and ${label('devices')} both say where ranks run: give one`,
      );
    if ((options.provider ?? 'cpu') === 'cpu')
      reasons.push(
        reason(
          'DEVICES_INVALID',
          label('devices'),
          devices,
          'a provider with devices (webgpu, cuda, dml)',
          `${label('devices')} needs a GPU provider: cpu has no device ids`,
        ),
      );
    if (isolation === 'thread' && (options.provider ?? 'cpu') === 'webgpu' && new Set(devices).size > 1)
      refused(
        'isolation',
        `process with several webgpu ${label('devices')}`,
        `webgpu ranks on different adapters must be processes: a process has one adapter`,
      );
  }
  if (ranks !== undefined && !(Number.isSafeInteger(ranks) && ranks >= 1 && ranks <= MAX_RANKS))
    reasons.push(
      reason(
        'INVALID_NUMBER',
        label('ranks'),
        ranks,
        `an integer in [1, ${MAX_RANKS}]`,
        `${label('ranks')} ${ranks} is not an integer in [1, ${MAX_RANKS}]`,
      ),
    );
  if (redis === undefined) {
    for (const name of ['queue', 'queueTimeoutMs'] as const)
      if (options[name] !== undefined)
        refused(name, `only with ${label('redis')}`, `${label(name)} applies only to a queue decode (${label('redis')} URL)`);
  } else {
    if (strategy !== 'tile')
      refused(
        'strategy',
        `tile with ${label('redis')}`,
        `${label('strategy')} ${strategy} needs local ranks; a queue decode deals blended tiles (${label('strategy')} tile)`,
      );
    if (ranks !== undefined && ranks < 2)
      refused(
        'ranks',
        `an integer >= 2 with ${label('redis')}`,
        `${label('ranks')} ${ranks}: a queue decode deals its tiles into at least 2 runs`,
      );
    if (isolation !== undefined)
      refused(
        'isolation',
        `absent with ${label('redis')}`,
        `${label('isolation')} applies to local ranks; with ${label('redis')} the tiles are decoded by \`distvae worker\` processes`,
      );
    // The coordinator of a queue decode never runs the decoder: these would do nothing.
    for (const name of ['threads', 'deviceId', 'provider', 'precision', 'forceFp16'] as const) {
      if (options[name] !== undefined)
        refused(
          name,
          `absent with ${label('redis')}`,
          `${label(name)} sets how ranks decode; with ${label('redis')} the tiles are decoded by \`distvae worker\` processes: give ${label(name)} to each worker`,
        );
    }
  }
  if (redis === undefined && isolation !== undefined && ranks === undefined && strategy !== 'shard')
    refused(
      'isolation',
      `with ${label('ranks')} R`,
      `${label('isolation')} says how ${label('ranks')} are run; without ${label('ranks')} the decode runs on one decoder thread`,
    );
  return reasons;
}
