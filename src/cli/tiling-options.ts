// Options shared by every command that takes a VAE and a size: family / config selection,
// the sample shape, and the tile plan (--window / --overlap / frame tiling / --full), turned
// into planner calls so the CLI refuses exactly what the library refuses.

import { installRequestedTiling } from '../entries/decode.js';
import { type RawConfig } from '../entries/families.js';
import { sampleShapeReasons } from '../entries/plan.js';
import { readConfigJson } from '../entries/sources.js';
import { refuse } from '../errors.js';
import { planningVae, FAMILY_NAMES, type DecodeFilesOptions, type SampleShape, type VaeSpec } from '../index.js';
import type { Args, OptionSpec } from './args.js';

export const FAMILY_OPTIONS: OptionSpec[] = [
  {
    name: 'family',
    kind: 'string',
    value: 'F',
    description: `VAE family: ${FAMILY_NAMES.join(', ')} (optional when a config names its _class_name)`,
  },
  {
    name: 'config',
    kind: 'string',
    value: 'PATH',
    description: "diffusers config.json (or a folder holding one); absent: the family's published defaults",
  },
];

export const SIZE_OPTIONS: OptionSpec[] = [
  { name: 'height', kind: 'string', value: 'H', description: 'output height in pixels' },
  { name: 'width', kind: 'string', value: 'W', description: 'output width in pixels' },
  { name: 'frames', kind: 'string', value: 'N', description: 'output frames, 1 + k x temporal ratio (video families)' },
];

export const TILING_OPTIONS: OptionSpec[] = [
  {
    name: 'window',
    kind: 'string',
    value: 'HxW',
    description: 'tile window in output pixels (exact; refused, never rounded)',
    defaultText: "the family's default",
  },
  {
    name: 'overlap',
    kind: 'string',
    value: 'HxW',
    description: 'tile overlap in output pixels (exact; 0 on an axis the sample fits in one window)',
    defaultText: 'floor(window/4) latent units with --window, else the family default',
  },
  {
    name: 'frame-window',
    kind: 'string',
    value: 'F',
    description: 'temporal tile window in frames (multiple of the temporal ratio); turns temporal tiling on',
  },
  { name: 'frame-overlap', kind: 'string', value: 'O', description: 'temporal tile overlap in frames (multiple of the temporal ratio)' },
  { name: 'no-frame-tiling', kind: 'boolean', description: 'turn temporal tiling off' },
];

export function readVaeSpec(args: Args): VaeSpec {
  const configPath = args.string('config');
  const config: RawConfig | undefined = configPath === undefined ? undefined : readConfigJson(configPath);
  return planningVae(args.string('family'), config);
}

/** Reads --height/--width/--frames and refuses sizes the VAE cannot produce. */
export function readSampleShape(args: Args, vae: VaeSpec): SampleShape {
  const height = args.int('height', { required: true });
  const width = args.int('width', { required: true });
  const frames = args.int('frames');
  args.done();
  const sample: SampleShape = { height: height!, width: width!, ...(frames !== undefined ? { frames } : {}) };
  if (vae.geometry.fiveDimLatents && sample.frames === undefined) sample.frames = 1;
  const reasons = sampleShapeReasons(vae.geometry, sample, 'size');
  if (reasons.length > 0) refuse('PLAN_REFUSED', reasons);
  return sample;
}

/** The tile plan options, as the decode session takes them; --no-frame-tiling with a frame option is refused. */
export function readTilingOptions(
  args: Args,
): Pick<DecodeFilesOptions, 'window' | 'overlap' | 'frameWindow' | 'frameOverlap' | 'frameTiling' | 'full'> {
  const window = args.size('window');
  const overlap = args.size('overlap', { min: 0 });
  const frameWindow = args.int('frame-window');
  const frameOverlap = args.int('frame-overlap', { min: 0 });
  if (args.flag('no-frame-tiling') && (frameWindow !== undefined || frameOverlap !== undefined)) {
    args.refuse(
      '--no-frame-tiling',
      true,
      'either --no-frame-tiling or --frame-window/--frame-overlap',
      '--no-frame-tiling cannot be combined with --frame-window/--frame-overlap',
    );
  }
  return {
    ...(window ? { window } : {}),
    ...(overlap ? { overlap } : {}),
    ...(frameWindow !== undefined ? { frameWindow } : {}),
    ...(frameOverlap !== undefined ? { frameOverlap } : {}),
    ...(args.flag('no-frame-tiling') ? { frameTiling: false } : {}),
    ...(args.flag('full') ? { full: true } : {}),
  };
}

/**
 * Installs the tile plan the options ask for (the decode session's installRequestedTiling, so the
 * CLI refuses exactly what the library refuses, every reason at once). No --window/--overlap: the
 * family's default plan with tiling on (diffusers' own behaviour). --window alone: its default
 * overlap. --overlap: exact.
 */
export function applyTilingOptions(args: Args, vae: VaeSpec, sample: SampleShape | undefined): void {
  const tiling = readTilingOptions(args);
  args.done();
  installRequestedTiling(vae, tiling, sample);
}
