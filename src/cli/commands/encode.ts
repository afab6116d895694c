// `distvae encode`: an image (PNG or JPEG) through a family's encoder (tae) to latents in a
// .npy or .safetensors file (tensor `latents`, docs/design.md §9), so realistic latents can be made
// from photos. The image is read into [0, 1] and encoded whole; sizes that are not multiples of
// the spatial ratio are refused with the nearest valid ones, or cut to them with --crop.

import { LATENTS_KEY } from '../../entries/io.js';
import { readConfigJson, writeSafetensors } from '../../entries/sources.js';
import { checkImage } from '../../entries/io.js';
import { cropToMultiple, loadEncoder, readImage, writeNpy, type Tensor } from '../../index.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { FAMILY_OPTIONS } from '../tiling-options.js';

const OUTPUT_EXTENSIONS = ['.npy', '.safetensors'] as const;

function writeLatents(path: string, latents: Tensor): void {
  if (path.toLowerCase().endsWith('.npy')) writeNpy(path, latents);
  else writeSafetensors(path, { [LATENTS_KEY]: latents });
}

export const encodeCommand: CommandSpec = {
  name: 'encode',
  summary: 'encode an image (PNG or JPEG) to latents with an encoder (tae)',
  usage: [
    'distvae encode --vae ENCODER [--family tae] [--config config.json] --image IMAGE --out LATENTS.(npy|safetensors) [--crop] [--threads N] [--json]',
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
      description: 'PNG or JPEG image (grey is replicated to RGB, alpha dropped); values become [0, 1]',
    },
    { name: 'out', kind: 'string', value: 'PATH', description: 'latents file: .npy, or .safetensors with the tensor "latents"' },
    {
      name: 'crop',
      kind: 'boolean',
      description: 'crop the image (centred) to the largest size whose sides are multiples of the spatial ratio, instead of refusing it',
    },
    { name: 'threads', kind: 'string', value: 'N', description: 'intra-op threads', defaultText: 'all CPUs' },
    JSON_OPTION,
  ],
  details: [
    'The latents are the raw encoder output (B, C, H/8, W/8): what the decoder of the same family takes, e.g.',
    'distvae decode --vae taef2_decoder.pth --family tae --latents LATENTS.npy. The encoder runs once over the',
    "whole image (TAEF2's GroupNorm pools are nonlocal, so tiles would change the latents). --json prints",
    '{ image: {height, width}, encoded: {height, width}, shape, seconds, out }, seconds being the encode time without loading.',
  ],
  async run(args, io) {
    const vaePath = args.string('vae', { required: true });
    const imagePath = args.string('image', { required: true });
    const out = args.string('out', { required: true });
    const threads = args.int('threads', { min: 1, max: 1024 });
    if (out !== undefined && !OUTPUT_EXTENSIONS.some((e) => out.toLowerCase().endsWith(e))) {
      args.refuse(
        '--out',
        out,
        `a path ending in ${OUTPUT_EXTENSIONS.join(' or ')}`,
        `--out ${JSON.stringify(out)} must end in ${OUTPUT_EXTENSIONS.join(' or ')}`,
      );
    }
    args.done();
    const configPath = args.string('config');
    const config = configPath === undefined ? undefined : readConfigJson(configPath);
    const family = args.string('family');
    const image = readImage(imagePath!);
    const encoder = await loadEncoder(
      { path: vaePath!, ...(family !== undefined ? { family } : {}), ...(config !== undefined ? { config } : {}) },
      threads !== undefined ? { threads } : {},
    );
    try {
      // Checked here first so a size refusal names --crop, the option that fixes it.
      if (!args.flag('crop')) checkImage(encoder.config, image, imagePath!, { crop: '--crop' });
      const input = args.flag('crop') ? cropToMultiple(image, encoder.config.geometry.spatialRatio) : image;
      const start = performance.now();
      const latents = await encoder.encode(input);
      const seconds = (performance.now() - start) / 1000;
      writeLatents(out!, latents);
      const size = (t: Tensor) => ({ height: t.dims[2]!, width: t.dims[3]! });
      if (args.flag('json')) {
        io.stdout(JSON.stringify({ image: size(image), encoded: size(input), shape: latents.dims, seconds, out }) + '\n');
      } else {
        const cropped = input === image ? '' : ` (cropped to ${input.dims[2]}x${input.dims[3]})`;
        io.stdout(
          `encoded ${imagePath} (${image.dims[2]}x${image.dims[3]})${cropped} with ${encoder.config.className} -> latents [${latents.dims.join(', ')}] in ${seconds.toFixed(2)} s: ${out}\n`,
        );
      }
    } finally {
      await encoder.dispose();
    }
    return 0;
  },
};
