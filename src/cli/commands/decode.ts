// `distvae decode`: latents (.npy / .safetensors) → decoded sample (.npy, exactly diffusers'
// `decode(z).sample`), image (.png with the family's value mapping) or video (.mp4 / .webm
// through the system ffmpeg, same mapping). Arguments, files, the latent shape, the tile plan
// and ffmpeg's presence are all checked before the decoder is built.

import { extname } from 'node:path';
import { checkLatents } from '../../decode/latents.js';
import { loadVae, vaeSpecOfSource } from '../../decode/vae.js';
import { scheduleGrid } from '../../plan/metrics.js';
import type { VaeSpec } from '../../families/types.js';
import { writeSamplePng } from '../../io/image.js';
import { checkFfmpeg, DEFAULT_FPS, isVideoPath, VIDEO_EXTENSIONS, writeSampleVideo } from '../../io/video.js';
import { readLatents } from '../../io/latents.js';
import { writeNpy } from '../../io/npy.js';
import { tileGrid } from '../../plan/grid.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { progressBar } from '../progress.js';
import { FAMILY_OPTIONS, TILING_OPTIONS, applyTilingOptions } from '../tiling-options.js';
import { RUNTIME_OPTIONS, VAE_SOURCE_OPTIONS, readLoadOptions, readVaeSourceOptions } from '../vae-options.js';

const OUTPUT_EXTENSIONS = ['.npy', '.png', ...VIDEO_EXTENSIONS];

export const decodeCommand: CommandSpec = {
  name: 'decode',
  summary: 'decode latents to a sample (.npy), an image (.png) or a video (.mp4/.webm), whole or tiled',
  usage: [
    'distvae decode --vae PATH [--family F] --latents X.npy --out Y.(npy|png|mp4|webm) [--window HxW --overlap HxW | --full] [--threads N] [--json]',
    'distvae decode --synthetic --family F [--config config.json] [--seed N] --latents X.npy --out Y.png',
  ],
  options: [
    ...VAE_SOURCE_OPTIONS,
    ...FAMILY_OPTIONS,
    { name: 'latents', kind: 'string', value: 'PATH', description: 'latents as diffusers vae.decode receives them: .npy, or .safetensors with a tensor named "latents"' },
    { name: 'out', kind: 'string', value: 'PATH', description: ".npy: the raw decode(z).sample; .png: an image with the family's value mapping (one file per image/frame); .mp4/.webm: a video (one per batch item) through the system ffmpeg" },
    ...TILING_OPTIONS,
    { name: 'full', kind: 'boolean', description: 'one decoder call over everything: no spatial and no temporal tiling' },
    { name: 'bit-depth', kind: 'string', value: '8|16', description: 'PNG bit depth', defaultText: '8' },
    { name: 'fps', kind: 'string', value: 'N', description: 'frames per second of .mp4/.webm output', defaultText: String(DEFAULT_FPS) },
    {
      name: 'decode-timestep',
      kind: 'string',
      value: 'T',
      description: "timestep fed to a timestep-conditioned decoder (LTX-2 with timestep_conditioning); overrides the config's decode_timestep",
      defaultText: "the config's, else 0 as in diffusers' pipeline",
    },
    ...RUNTIME_OPTIONS,
    JSON_OPTION,
  ],
  details: [
    "Without --window/--overlap the family's default plan is used with tiling on (it tiles only when the latent exceeds",
    'the window). With --json: { shape, tiles, seconds, ranks: [...] } where seconds is the decode time without loading.',
  ],
  async run(args, io) {
    const latentsPath = args.string('latents', { required: true });
    const out = args.string('out', { required: true });
    const bitDepth = args.choice('bit-depth', ['8', '16'] as const);
    const fps = args.number('fps');
    const decodeTimestep = args.number('decode-timestep');
    const video = out !== undefined && isVideoPath(out);
    if (out !== undefined && !OUTPUT_EXTENSIONS.includes(extname(out).toLowerCase())) {
      args.refuse('--out', out, `a path ending in ${OUTPUT_EXTENSIONS.join(' or ')}`, `--out ${out}: the output must end in ${OUTPUT_EXTENSIONS.join(' or ')}`);
    }
    if (fps !== undefined && !(fps > 0)) args.refuse('--fps', fps, 'a number > 0', `--fps ${fps}: frames per second must be > 0`);
    if (fps !== undefined && !video) args.refuse('--fps', fps, 'only with --out .mp4/.webm', '--fps applies only to video output (--out .mp4 or .webm)');
    if (args.flag('full')) {
      for (const name of ['window', 'overlap', 'frame-window', 'frame-overlap']) {
        if (args.has(name)) args.refuse(`--${name}`, args.values[name], 'absent with --full', `--${name} cannot be combined with --full (one decoder call over everything)`);
      }
    }
    const given = readVaeSourceOptions(args);
    // The decode timestep is a config setting (DESIGN §9); the option overrides config.json's.
    const source = decodeTimestep === undefined ? given : { ...given, config: { ...(given.config ?? {}), decode_timestep: decodeTimestep } };
    const loadOptions = readLoadOptions(args);
    args.done();

    const latents = readLatents(latentsPath!);
    // A plan-only view checks the latent and the plan before any weights are read, when the
    // architecture is known without them (a bare weights file names its variant only in its keys).
    const spec = vaeSpecOfSource(source);
    const configure = (vae: VaeSpec) => {
      const latent = checkLatents(vae, latents, latentsPath);
      if (video && !vae.geometry.fiveDimLatents) {
        args.refuse('--out', out, '.npy or .png for an image family', `--out ${out}: ${vae.family.name} decodes images, not video; write .npy or .png`);
        args.done();
      }
      if (args.flag('full')) vae.tiling = { ...vae.tiling, enabled: false, frames: vae.tiling.frames ? { ...vae.tiling.frames, enabled: false } : null };
      else applyTilingOptions(args, vae, undefined);
      return latent;
    };
    if (spec) configure(spec);
    if (video) checkFfmpeg();

    const vae = await loadVae(source, loadOptions);
    try {
      const latent = configure(vae);
      const grid = tileGrid(vae, latent);
      const bar = progressBar(io, 'decode');
      const started = performance.now();
      const sample = await vae.decode(latents, { onProgress: bar.update });
      const seconds = (performance.now() - started) / 1000;
      bar.finish();
      const written =
        extname(out!).toLowerCase() === '.npy'
          ? (writeNpy(out!, sample), [out!])
          : video
            ? await writeSampleVideo(out!, sample, vae.family.sampleRange, fps !== undefined ? { fps } : {})
            : writeSamplePng(out!, sample, vae.family.sampleRange, { bitDepth: bitDepth === '16' ? 16 : 8 });
      const schedule = scheduleGrid(grid, 1);
      const summary = { shape: sample.dims, tiles: grid.tiles.length * grid.chunks.length, seconds, ranks: [{ rank: 0, tiles: schedule.ranks[0]!, load: schedule.loads[0]!, seconds }], files: written };
      io.stdout(args.flag('json') ? JSON.stringify(summary) + '\n' : `decoded [${sample.dims.join(', ')}] in ${seconds.toFixed(2)} s (${summary.tiles} tile(s)) -> ${written.join(', ')}\n`);
      return 0;
    } finally {
      await vae.dispose();
    }
  },
};
