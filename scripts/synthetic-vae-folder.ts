// Development aid for goldens: writes a diffusers folder whose decoder weights are distvae's
// seeded synthetic ones, so a reference implementation (diffusers) can decode exactly the
// weights a test regenerates from (family, config, seed) — no weight file needs committing.
// The other tensors of the source folder (encoder.*, quant_conv.*, bn.*) are copied unchanged,
// because diffusers loads a folder strictly. Optionally writes a seeded latent too.
// With --config FILE instead of --from, it writes the decoder's tensors alone (and the config) —
// what bench/gpu-machine/torch_decode.py loads into diffusers' AutoencoderKL with strict=False,
// where no source folder travels. With --encoder-seed N the encoder's tensors (encoder.*,
// quant_conv.*) are distvae's seeded synthetic ones too, so diffusers' `encode` can be compared
// with ours; --image writes a seeded image in [−1, 1] (the diffusers classes' input range).
//
//   npx tsx scripts/synthetic-vae-folder.ts --from DIR --out DIR --seed N [--latent B,C,H,W --latent-seed S --latent-out z.npy]
//   npx tsx scripts/synthetic-vae-folder.ts --config config.json --out DIR --seed N [--latent ...]
//   npx tsx scripts/synthetic-vae-folder.ts --from DIR --out DIR --seed N --encoder-seed M [--image B,C,H,W --image-seed S --image-out x.npy]

import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DIFFUSERS_WEIGHTS_FILE } from '../src/sources/vae-source.js';
import { readConfigJson } from '../src/sources/config-file.js';
import { resolveFamily, runtimeOf } from '../src/families/registry.js';
import { seededTensor } from '../src/tensor.js';
import { writeNpy } from '../src/io/npy.js';
import type { Tensor } from '../src/tensor.js';
import type { RawConfig } from '../src/families/types.js';
import { readSafetensors, writeSafetensors } from '../src/weights/safetensors.js';
import { syntheticWeights } from '../src/weights/synthetic.js';

const { values: args } = parseArgs({
  options: {
    from: { type: 'string' },
    config: { type: 'string' },
    out: { type: 'string' },
    seed: { type: 'string', default: '0' },
    latent: { type: 'string' },
    'latent-seed': { type: 'string', default: '1' },
    'latent-out': { type: 'string' },
    'encoder-seed': { type: 'string' },
    image: { type: 'string' },
    'image-seed': { type: 'string', default: '1' },
    'image-out': { type: 'string' },
  },
});
if ((!args.from && !args.config) || !args.out) {
  console.error(
    'usage: npx tsx scripts/synthetic-vae-folder.ts (--from DIR | --config FILE) --out DIR --seed N [--latent B,C,H,W --latent-seed S --latent-out z.npy]',
  );
  process.exit(2);
}

const raw = args.from ? readConfigJson(args.from) : (JSON.parse(readFileSync(args.config!, 'utf8')) as RawConfig);
const family = resolveFamily(undefined, raw);
const config = family.resolveConfig(raw);
const decoder = syntheticWeights(runtimeOf(family).decoderParams(config), Number(args.seed));
const encoderParams = runtimeOf(family).encoder?.params(config);
if (args['encoder-seed'] !== undefined && !encoderParams) throw new Error(`${family.name} has no encoder here`);
const encoder =
  args['encoder-seed'] !== undefined ? syntheticWeights(encoderParams!, Number(args['encoder-seed'])) : new Map<string, Tensor>();
const tensors = new Map<string, Tensor>();
if (args.from) {
  for (const [name, t] of (await readSafetensors(join(args.from, DIFFUSERS_WEIGHTS_FILE))).tensors) {
    if (!decoder.has(name) && !encoder.has(name)) tensors.set(name, t);
  }
}
for (const [name, t] of decoder) tensors.set(name, t);
for (const [name, t] of encoder) tensors.set(name, t);
mkdirSync(args.out, { recursive: true });
if (args.from) copyFileSync(join(args.from, 'config.json'), join(args.out, 'config.json'));
else writeFileSync(join(args.out, 'config.json'), JSON.stringify(raw, null, 2) + '\n');
writeSafetensors(join(args.out, DIFFUSERS_WEIGHTS_FILE), tensors);
console.log(
  JSON.stringify({
    family: family.name,
    decoderTensors: decoder.size,
    encoderTensors: encoder.size,
    copied: tensors.size - decoder.size - encoder.size,
    out: args.out,
  }),
);
if (args.latent && args['latent-out']) {
  writeNpy(args['latent-out'], seededTensor(args.latent.split(',').map(Number), Number(args['latent-seed'])));
}
if (args.image && args['image-out']) {
  writeNpy(args['image-out'], seededTensor(args.image.split(',').map(Number), Number(args['image-seed'])));
}
