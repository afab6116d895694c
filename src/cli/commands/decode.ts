// `distvae decode`: latents (.npy / .safetensors) → decoded sample (.npy, exactly diffusers'
// `decode(z).sample`) or image (.png with the family's value mapping). Arguments, files, the
// latent shape and the tile plan are all checked before the decoder is built.

import { extname } from 'node:path';
import { checkLatents } from '../../decode/latents.js';
import { loadVae, vaeSpecOfSource } from '../../decode/vae.js';
import { scheduleGrid } from '../../plan/metrics.js';
import type { VaeSpec } from '../../families/types.js';
import { writeSamplePng } from '../../io/image.js';
import { readLatents } from '../../io/latents.js';
import { writeNpy } from '../../io/npy.js';
import { tileGrid } from '../../plan/grid.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { progressBar } from '../progress.js';
import { FAMILY_OPTIONS, TILING_OPTIONS, applyTilingOptions } from '../tiling-options.js';
import { RUNTIME_OPTIONS, VAE_SOURCE_OPTIONS, readLoadOptions, readVaeSourceOptions } from '../vae-options.js';

const OUTPUT_EXTENSIONS = ['.npy', '.png'];

export const decodeCommand: CommandSpec = {
  name: 'decode',
  summary: 'decode latents to a sample (.npy) or an image (.png), whole or tiled',
  usage: [
    'distvae decode --vae PATH [--family F] --latents X.npy --out Y.(npy|png) [--window HxW --overlap HxW | --full] [--threads N] [--json]',
    'distvae decode --synthetic --family F [--config config.json] [--seed N] --latents X.npy --out Y.png',
  ],
  options: [
    ...VAE_SOURCE_OPTIONS,
    ...FAMILY_OPTIONS,
    { name: 'latents', kind: 'string', value: 'PATH', description: 'latents as diffusers vae.decode receives them: .npy, or .safetensors with a tensor named "latents"' },
    { name: 'out', kind: 'string', value: 'PATH', description: '.npy: the raw decode(z).sample; .png: an image with the family\'s value mapping (one file per image/frame)' },
    ...TILING_OPTIONS,
    { name: 'full', kind: 'boolean', description: 'one decoder call over everything: no spatial and no temporal tiling' },
    { name: 'bit-depth', kind: 'string', value: '8|16', description: 'PNG bit depth', defaultText: '8' },
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
    if (out !== undefined && !OUTPUT_EXTENSIONS.includes(extname(out).toLowerCase())) {
      args.refuse('--out', out, `a path ending in ${OUTPUT_EXTENSIONS.join(' or ')}`, `--out ${out}: the output must end in ${OUTPUT_EXTENSIONS.join(' or ')}`);
    }
    if (args.flag('full')) {
      for (const name of ['window', 'overlap', 'frame-window', 'frame-overlap']) {
        if (args.has(name)) args.refuse(`--${name}`, args.values[name], 'absent with --full', `--${name} cannot be combined with --full (one decoder call over everything)`);
      }
    }
    const source = readVaeSourceOptions(args);
    const loadOptions = readLoadOptions(args);
    args.done();

    const latents = readLatents(latentsPath!);
    // A plan-only view checks the latent and the plan before any weights are read, when the
    // architecture is known without them (a bare weights file names its variant only in its keys).
    const spec = vaeSpecOfSource(source);
    const configure = (vae: VaeSpec) => {
      const latent = checkLatents(vae, latents, latentsPath);
      if (args.flag('full')) vae.tiling = { ...vae.tiling, enabled: false, frames: vae.tiling.frames ? { ...vae.tiling.frames, enabled: false } : null };
      else applyTilingOptions(args, vae, undefined);
      return latent;
    };
    if (spec) configure(spec);

    const vae = await loadVae(source, loadOptions);
    try {
      const latent = configure(vae);
      const grid = tileGrid(vae, latent);
      const bar = progressBar(io, 'decode');
      const started = performance.now();
      const sample = await vae.decode(latents, { onProgress: bar.update });
      const seconds = (performance.now() - started) / 1000;
      bar.finish();
      const written = extname(out!).toLowerCase() === '.npy' ? (writeNpy(out!, sample), [out!]) : writeSamplePng(out!, sample, vae.family.sampleRange, { bitDepth: bitDepth === '16' ? 16 : 8 });
      const schedule = scheduleGrid(grid, 1);
      const summary = { shape: sample.dims, tiles: grid.tiles.length * grid.chunks.length, seconds, ranks: [{ rank: 0, tiles: schedule.ranks[0]!, load: schedule.loads[0]!, seconds }], files: written };
      io.stdout(args.flag('json') ? JSON.stringify(summary) + '\n' : `decoded [${sample.dims.join(', ')}] in ${seconds.toFixed(2)} s (${summary.tiles} tile(s)) -> ${written.join(', ')}\n`);
      return 0;
    } finally {
      await vae.dispose();
    }
  },
};
