// Options that name a VAE to load and how to run it (--vae / --synthetic / --seed, --threads,
// --provider, --device, --verbose), shared by every command that decodes.

import { type RawConfig } from '../entries/families.js';
import { showNativeOutput } from '../entries/decode.js';
import { locateVae, readConfigJson } from '../entries/sources.js';
import { type LoadOptions, type VaeSource } from '../index.js';
import { PRECISIONS } from '../entries/graph.js';
import type { Args, OptionSpec } from './args.js';

export const VAE_SOURCE_OPTIONS: OptionSpec[] = [
  {
    name: 'vae',
    kind: 'string',
    value: 'PATH',
    description:
      'diffusers VAE or pipeline folder, Hub repo id org/name[@revision] in the local cache, or a weights file (.safetensors/.pth, with --family)',
  },
  { name: 'subfolder', kind: 'string', value: 'NAME', description: 'pipeline component holding the VAE', defaultText: 'vae' },
  {
    name: 'variant',
    kind: 'string',
    value: 'NAME',
    description: 'weights variant, e.g. fp16 or bf16 (diffusion_pytorch_model.<variant>.safetensors)',
  },
  { name: 'synthetic', kind: 'boolean', description: 'seeded synthetic weights for --family/--config instead of --vae' },
  { name: 'seed', kind: 'string', value: 'N', description: 'seed of the synthetic weights', defaultText: '0' },
];

export const RUNTIME_OPTIONS: OptionSpec[] = [
  { name: 'threads', kind: 'string', value: 'N', description: 'intra-op threads per rank', defaultText: 'all cores' },
  {
    name: 'provider',
    kind: 'string',
    value: 'NAME',
    description: 'onnxruntime execution provider (cpu, cuda, webgpu, ...); a missing one is an error',
    defaultText: 'cpu',
  },
  {
    name: 'device',
    kind: 'string',
    value: 'ID[,ID...]',
    description:
      'device id for the execution provider (webgpu: an adapter of `distvae devices`); decode takes a list mapping ranks to devices round-robin (0,1: ranks 0, 2, … on 0, ranks 1, 3, … on 1)',
  },
  {
    name: 'precision',
    kind: 'string',
    value: 'P',
    description:
      'fp32, or fp16 on a GPU provider whose adapter has shader-f16 (GroupNorm statistics, softmax and reductions stay float32); a config with force_upcast keeps fp32',
    defaultText: 'fp32',
  },
  {
    name: 'force-fp16',
    kind: 'boolean',
    description: 'with --precision fp16: decode in float16 even where the config sets force_upcast (it may overflow)',
  },
  {
    name: 'verbose',
    kind: 'boolean',
    description: "also show the GPU drivers' own stderr lines (Dawn's warnings, the Vulkan loader's and Mesa's), hidden by default",
  },
];

/**
 * Reads --vae / --synthetic / --family / --config / --seed into a VaeSource (opens config.json
 * only). With `syntheticWithoutVae`, no --vae means synthetic weights (a command without --synthetic);
 * with `seedSeedsMore`, --seed also seeds something else of the command (encode --sample's draw), so it is
 * not refused beside --vae.
 */
export function readVaeSourceOptions(args: Args, options: { syntheticWithoutVae?: boolean; seedSeedsMore?: boolean } = {}): VaeSource {
  const path = args.string('vae');
  const family = args.string('family');
  const configPath = args.string('config');
  const seed = args.int('seed', { min: 0 }) ?? 0;
  const subfolder = args.string('subfolder');
  const variant = args.string('variant');
  const synthetic = args.flag('synthetic') || (options.syntheticWithoutVae === true && path === undefined);
  if (path !== undefined && synthetic)
    args.refuse('--synthetic', true, 'either --vae or --synthetic', '--vae and --synthetic are exclusive');
  if (path !== undefined && args.has('seed') && options.seedSeedsMore !== true)
    args.refuse('--seed', args.values['seed'], 'only with synthetic weights', '--seed seeds synthetic weights; it does nothing with --vae');
  if (synthetic && (subfolder !== undefined || variant !== undefined)) {
    args.refuse(
      subfolder !== undefined ? '--subfolder' : '--variant',
      subfolder ?? variant,
      'with --vae',
      '--subfolder and --variant pick files of --vae; synthetic weights have none',
    );
  }
  if (path === undefined && !synthetic)
    args.refuse(
      '--vae',
      undefined,
      'a path, or --synthetic',
      'pass --vae PATH (a diffusers folder or weights file) or --synthetic with --family/--config',
    );
  args.done();
  const config: RawConfig | undefined = configPath === undefined ? undefined : readConfigJson(configPath);
  const named = { ...(family !== undefined ? { family } : {}), ...(config !== undefined ? { config } : {}) };
  const files = { ...(subfolder !== undefined ? { subfolder } : {}), ...(variant !== undefined ? { variant } : {}) };
  return synthetic ? { ...named, weights: 'synthetic', seed } : { path: path!, ...named, ...files };
}

/** The load options of a command; `devices` where --device is a list (only where `options.list` allows one). */
export function readLoadOptions(args: Args, options: { list?: boolean } = {}): LoadOptions & { devices?: number[] } {
  const threads = args.int('threads', { min: 1, max: 1024 });
  const provider = args.string('provider');
  const device = args.string('device');
  let deviceId: number | undefined;
  let devices: number[] | undefined;
  if (device !== undefined) {
    const valid = options.list ? 'a device id or a comma-separated list of them (0 or 0,1)' : 'a device id (0, 1, ...)';
    if (/^\d+$/.test(device)) deviceId = Number(device);
    else if (options.list && /^\d+(,\d+)+$/.test(device)) devices = device.split(',').map(Number);
    else args.refuse('--device', device, valid, `--device ${device}: expected ${valid}`);
  }
  const precision = args.choice('precision', PRECISIONS);
  const forceFp16 = args.flag('force-fp16');
  if (forceFp16 && precision !== 'fp16')
    args.refuse(
      '--force-fp16',
      true,
      'only with --precision fp16',
      '--force-fp16 forces float16 over force_upcast; give it with --precision fp16',
    );
  // Before any rank or probe process starts: they inherit the setting.
  showNativeOutput(args.flag('verbose'));
  args.done();
  return {
    ...(threads !== undefined ? { threads } : {}),
    ...(provider !== undefined ? { provider } : {}),
    ...(deviceId !== undefined ? { deviceId } : {}),
    ...(devices !== undefined ? { devices } : {}),
    ...(precision !== undefined ? { precision } : {}),
    ...(forceFp16 ? { forceFp16 } : {}),
  };
}

/**
 * Prints, one line each on stderr, what resolving a path source did as diffusers would (a
 * pipeline loaded through its vae/ component, a missing variant replaced by the plain weights).
 * A source that does not resolve prints nothing here: loading it names the problem.
 */
export function printSourceNotes(source: VaeSource, io: { stderr(text: string): void }): void {
  if (!('path' in source)) return;
  let notes: string[];
  try {
    notes = locateVae(source.path, {
      ...(source.subfolder !== undefined ? { subfolder: source.subfolder } : {}),
      ...(source.variant !== undefined ? { variant: source.variant } : {}),
    }).notes;
  } catch {
    return;
  }
  for (const note of notes) io.stderr(`note: ${note}\n`);
}
