// `distvae encode`: an image (PNG, JPEG or .npy) through a family's encoder (tae) to latents in a
// .npy, .safetensors (tensor `latents`, docs/design.md §9) or ComfyUI .latent file, so realistic
// latents can be made from photos. The image is read through a row source (PNG and .npy band by
// band, JPEG whole) into the family's input range and encoded whole; sizes that are not multiples
// of the spatial ratio are refused with the nearest valid ones, or cut to them with --crop.
// --latents-scaled writes them as a pipeline hands them to its denoiser; --sample draws from the
// latent distribution where the family has one.

import { DistVaeError } from '../../errors.js';
import {
  checkImage,
  latentScalingOf,
  latentsOutputReasons,
  openImageRows,
  outputPathReasons,
  readAllRows,
  refuseSamplingWithout,
  scaleLatents,
  writeLatentsFile,
} from '../../entries/io.js';
import { readConfigJson, readLatentBatchNorm } from '../../entries/sources.js';
import { cropToMultiple, loadEncoder, type Tensor } from '../../index.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { FAMILY_OPTIONS } from '../tiling-options.js';

/** The flags outputPathReasons names the paths by. */
const PATH_FLAGS: Readonly<Record<string, string>> = { out: '--out', latents: '--image', vae: '--vae', configPath: '--config' };

export const encodeCommand: CommandSpec = {
  name: 'encode',
  summary: 'encode an image (PNG, JPEG or .npy) to latents with an encoder (tae)',
  usage: [
    'distvae encode --vae ENCODER [--family tae] [--config config.json] --image IMAGE --out LATENTS.(npy|safetensors|latent) [--crop] [--latents-scaled] [--sample [--seed N]] [--threads N] [--json]',
  ],
  options: [
    {
      name: 'vae',
      kind: 'string',
      value: 'PATH',
      description: "the encoder's weights: madebyollin's *_encoder.pth / .safetensors, or a diffusers AutoencoderTiny folder",
    },
    ...FAMILY_OPTIONS,
    {
      name: 'image',
      kind: 'string',
      value: 'PATH',
      description:
        "PNG (read band by band; Adam7-interlaced read whole) or JPEG (read whole): grey replicated to RGB, alpha dropped, values mapped to the family's input range ([0, 1] for tae, [-1, 1] for the diffusers classes); or .npy (B, C, H, W) already in that range",
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
      description: "draw the latents from the encoder's distribution instead of taking its mean (refused for tae, which has none)",
    },
    {
      name: 'seed',
      kind: 'string',
      value: 'N',
      description: "--sample's seed (our generator: it cannot reproduce torch's stream)",
      defaultText: '0',
    },
    {
      name: 'crop',
      kind: 'boolean',
      description: 'crop the image (centred) to the largest size whose sides are multiples of the spatial ratio, instead of refusing it',
    },
    { name: 'threads', kind: 'string', value: 'N', description: 'intra-op threads', defaultText: 'all CPUs' },
    JSON_OPTION,
  ],
  details: [
    'The latents are the raw encoder output (B, C, H/8, W/8) — its mean — unless --latents-scaled: what the decoder of the same family takes, e.g.',
    'distvae decode --vae taef2_decoder.pth --family tae --latents LATENTS.npy. The encoder runs once over the',
    "whole image (TAEF2's GroupNorm pools are nonlocal, so tiles would change the latents). --json prints",
    '{ image: {height, width}, encoded: {height, width}, shape, seconds, out, reading, scaled }, seconds being the encode time without loading,',
    'reading how the image was read (streamed or whole). A .latent holds raw latents (ComfyUI scales them itself), so --latents-scaled refuses it.',
  ],
  async run(args, io) {
    const vaePath = args.string('vae', { required: true });
    const imagePath = args.string('image', { required: true });
    const out = args.string('out', { required: true });
    const threads = args.int('threads', { min: 1, max: 1024 });
    const scaled = args.flag('latents-scaled');
    const sample = args.flag('sample');
    const seed = args.int('seed', { min: 0 });
    const configPath = args.string('config');
    if (seed !== undefined && !sample) args.refuse('--seed', seed, 'with --sample', '--seed applies only with --sample');
    if (out !== undefined) {
      args.add(...latentsOutputReasons(out, { scaled }, '--out', '--latents-scaled'));
      args.add(...outputPathReasons(out, { latents: imagePath, vae: vaePath, configPath }, (o) => PATH_FLAGS[o] ?? `--${o}`));
    }
    args.done();
    const config = configPath === undefined ? undefined : readConfigJson(configPath);
    const family = args.string('family');
    const source = { path: vaePath!, ...(family !== undefined ? { family } : {}), ...(config !== undefined ? { config } : {}) };
    const encoder = await loadEncoder(source, threads !== undefined ? { threads } : {});
    try {
      if (sample) refuseSamplingWithout(encoder.family, '--sample');
      const rows = openImageRows(imagePath!, encoder.family.sampleRange);
      let image: Tensor;
      try {
        image = readAllRows(rows);
      } finally {
        rows.close();
      }
      // Checked here first so a size refusal names --crop, the option that fixes it.
      if (!args.flag('crop')) checkImage(encoder.config, image, imagePath!, { crop: '--crop' });
      const input = args.flag('crop') ? cropToMultiple(image, encoder.config.geometry.spatialRatio) : image;
      if (sample) {
        throw new DistVaeError(
          'UNSUPPORTED',
          `--sample: the ${encoder.family.name} encoder here returns the latent mean only, not the moments a sample is drawn from`,
        );
      }
      const start = performance.now();
      const mean = await encoder.encode(input);
      const seconds = (performance.now() - start) / 1000;
      const fields = encoder.config.fields;
      const batchNorm = scaled && typeof fields['batch_norm_eps'] === 'number' ? await readLatentBatchNorm(source) : undefined;
      const latents = scaled ? scaleLatents(mean, latentScalingOf(fields, encoder.family.name, batchNorm ? { batchNorm } : {})) : mean;
      writeLatentsFile(out!, latents, { scaled });
      const size = (t: Tensor) => ({ height: t.dims[2]!, width: t.dims[3]! });
      if (args.flag('json')) {
        io.stdout(
          JSON.stringify({ image: size(image), encoded: size(input), shape: latents.dims, seconds, out, reading: rows.reading, scaled }) +
            '\n',
        );
      } else {
        const cropped = input === image ? '' : ` (cropped to ${input.dims[2]}x${input.dims[3]})`;
        io.stdout(
          `encoded ${imagePath} (${image.dims[2]}x${image.dims[3]})${cropped} with ${encoder.config.className} -> ${scaled ? 'scaled ' : ''}latents [${latents.dims.join(', ')}] in ${seconds.toFixed(2)} s: ${out}\n`,
        );
      }
    } finally {
      await encoder.dispose();
    }
    return 0;
  },
};
