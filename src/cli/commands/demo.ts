// `distvae demo` (npm run demo): the main job on a built-in default, end to end and offline —
// a small AutoencoderKL-architecture decoder with seeded synthetic weights, a smooth seeded
// latent, a validated tile plan, a tiled decode across 2 local ranks (worker threads), and the
// image and plan summary written to demo-output/. Synthetic weights draw noise, and the demo says
// so; `--vae` names a trained image decoder (e.g. a TAE .pth with --family tae) to decode instead.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadVae, localGroup, planReport, setTiling, useStrategy, writeSamplePng, type Tensor } from '../../index.js';
import { DistVaeError } from '../../errors.js';
import type { CommandSpec } from '../args.js';
import { formatPlan } from '../format.js';
import { progressBar } from '../progress.js';
import { FAMILY_OPTIONS } from '../tiling-options.js';
import { readConfigJson } from '../../entries/sources.js';

/** SD-style decoder, narrower (8× spatial, 4 latent channels, attention in the mid block). */
export const DEMO_CONFIG = {
  _class_name: 'AutoencoderKL',
  block_out_channels: [32, 64, 128, 128],
  layers_per_block: 1,
  latent_channels: 4,
  norm_num_groups: 32,
  sample_size: 256,
};
export const DEMO_SAMPLE = { height: 512, width: 768 };
export const DEMO_RANKS = 2;

/** A smooth seeded latent: a few low-frequency waves per channel, so the image has structure. */
export function demoLatent(height: number, width: number, channels = 4): Tensor {
  const data = new Float32Array(channels * height * width);
  for (let c = 0; c < channels; c++) {
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const u = x / width;
        const v = y / height;
        data[(c * height + y) * width + x] = Math.sin(6.3 * (u * (c + 1) + v * (2 - c * 0.5))) + 0.5 * Math.cos(9.4 * u * v + c);
      }
    }
  }
  return { dims: [1, channels, height, width], data };
}

export const demoCommand: CommandSpec = {
  name: 'demo',
  summary:
    'decode a built-in default (512x768, tiled, 2 ranks; synthetic weights, or a trained model with --vae) and write demo-output/demo.png and plan.json',
  usage: ['distvae demo [--vae PATH [--family F] [--config config.json]] [--out-dir DIR]'],
  options: [
    {
      name: 'vae',
      kind: 'string',
      value: 'PATH',
      description:
        "a trained image VAE to decode the demo latent with (a diffusers folder, or a weights file with --family, e.g. TAE's .pth)",
      defaultText: 'a small AutoencoderKL with seeded synthetic weights (its image is noise)',
    },
    ...FAMILY_OPTIONS,
    { name: 'out-dir', kind: 'string', value: 'DIR', description: 'where the image and plan summary go', defaultText: 'demo-output' },
  ],
  async run(args, io) {
    const outDir = args.string('out-dir') ?? 'demo-output';
    const path = args.string('vae');
    const family = args.string('family');
    const configPath = args.string('config');
    if (path === undefined && (family !== undefined || configPath !== undefined))
      args.refuse('--family', family ?? configPath, 'with --vae', '--family and --config name the model of --vae');
    args.done();
    const config = configPath === undefined ? undefined : readConfigJson(configPath);
    const vae = await loadVae(
      path === undefined
        ? { family: 'autoencoder-kl', config: DEMO_CONFIG, weights: 'synthetic', seed: 0 }
        : { path, ...(family !== undefined ? { family } : {}), ...(config !== undefined ? { config } : {}) },
    );
    if (vae.geometry.fiveDimLatents) {
      await vae.dispose();
      throw new DistVaeError(
        'UNSUPPORTED',
        `the demo decodes images; ${vae.family.name} is a video family: decode its latents with distvae decode`,
      );
    }
    io.stdout(
      path === undefined
        ? 'synthetic weights: a small AutoencoderKL with seeded random weights, so the image is structured noise, not a picture; pass --vae with a trained model (e.g. --vae taef2_decoder.pth --family tae) to see one\n\n'
        : `trained weights: ${path} (${vae.family.name}); the latent is a smooth synthetic pattern, not an encoded photo\n\n`,
    );
    const group = localGroup({ ranks: DEMO_RANKS });
    try {
      const sampleShape = DEMO_SAMPLE;
      // The synthetic default shows a 2x3 grid of tiles; a trained model keeps its family's default plan.
      if (path === undefined) setTiling(vae, { window: { height: 256, width: 256 }, overlap: { height: 64, width: 64 }, sampleShape });
      const report = planReport(vae, sampleShape, DEMO_RANKS);
      io.stdout(formatPlan(report));
      const strategy = useStrategy(vae, 'tile', group);

      const r = vae.geometry.spatialRatio;
      const latents = demoLatent(sampleShape.height / r, sampleShape.width / r, vae.geometry.latentChannels);
      const bar = progressBar(io, 'decode');
      const started = performance.now();
      const sample = await vae.decode(latents, { onProgress: bar.update });
      const seconds = (performance.now() - started) / 1000;
      bar.finish();

      mkdirSync(outDir, { recursive: true });
      const [image] = writeSamplePng(join(outDir, 'demo.png'), sample, vae.family.sampleRange);
      const planPath = join(outDir, 'plan.json');
      writeFileSync(planPath, JSON.stringify({ ...report, seconds }, null, 2) + '\n');
      const ranks = strategy
        ?.ranks()
        .map((r) => `rank ${r.rank}: ${r.tiles.length} tiles in ${r.seconds.toFixed(2)} s`)
        .join(', ');
      io.stdout(
        `\ndecoded [${sample.dims.join(', ')}] in ${seconds.toFixed(2)} s over ${report.tiles} tiles${ranks ? ` (${ranks})` : ''}\nwrote ${image} and ${planPath}\n`,
      );
      return 0;
    } finally {
      await group.close();
      await vae.dispose();
    }
  },
};
