// diffusers' own AutoencoderKLHunyuanImage output as goldens (testing/goldens/README.md: the
// difref tiny and small configs, synthetic decoder weights seed 3, diffusers 58eb52c0): the whole
// decode, and the tiled decode at the class's own tiling settings through our planner's default
// plan, within 1e-4 of the output's largest value. Only outputs are stored; weights and latents
// are regenerated here from their seeds.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadVae } from '../../decode/vae.js';
import { difference } from '../../graph/testing/compare.js';
import { readNpy } from '../../io/npy.js';
import { diffusersEquivalent } from '../../plan/equivalence.js';
import { setTiling } from '../../plan/planner.js';
import { seededTensor, type Tensor } from '../../tensor.js';
import { HUNYUAN_IMAGE_SMALL, HUNYUAN_IMAGE_TINY } from './testing/configs.js';

const golden = (name: string) => readNpy(fileURLToPath(new URL(`./testing/goldens/${name}.npy`, import.meta.url)));

/** Every `step`-th row and column of a (B, C, H, W) tensor, from (0, 0): how the small goldens are stored. */
function everyNth(t: Tensor, step: number): Tensor {
  const [b, c, h, w] = t.dims as [number, number, number, number];
  const [oh, ow] = [Math.ceil(h / step), Math.ceil(w / step)];
  const data = new Float32Array(b * c * oh * ow);
  for (let p = 0; p < b * c; p++)
    for (let y = 0; y < oh; y++) for (let x = 0; x < ow; x++) data[(p * oh + y) * ow + x] = t.data[(p * h + y * step) * w + x * step]!;
  return { dims: [b, c, oh, ow], data };
}

const CASES = [
  { name: 'tiny', config: HUNYUAN_IMAGE_TINY, latent: [1, 64, 12, 18], step: 1, suffix: '' },
  { name: 'small', config: HUNYUAN_IMAGE_SMALL, latent: [1, 64, 9, 9], step: 3, suffix: '-every3' },
];

for (const c of CASES) {
  test(`hunyuan-image ${c.name}: whole and tiled (class defaults) decodes match diffusers within 1e-4 of the largest value`, async () => {
    const vae = await loadVae({ config: c.config, weights: 'synthetic', seed: 3 }, { threads: 1 });
    try {
      assert.equal(vae.family.name, 'hunyuan-image');
      const z = seededTensor(c.latent, 9);
      const whole = await vae.decode(z);
      setTiling(vae);
      assert.ok(diffusersEquivalent(vae), 'the default plan is the one diffusers runs');
      const tiled = await vae.decode(z);
      for (const [label, out] of [
        ['whole', whole],
        ['tiled', tiled],
      ] as const) {
        const expected = golden(`${c.name}-${label}${c.suffix}`);
        const ours = everyNth(out, c.step);
        assert.deepEqual(ours.dims, expected.dims, label);
        const { maxAbs, scale } = difference(ours, expected);
        assert.ok(maxAbs <= 1e-4 * scale, `${c.name} ${label}: max |ours − diffusers| = ${maxAbs} (largest |value| ${scale})`);
      }
      assert.ok(difference(whole, tiled).maxAbs > 0.01, 'tiling must change the result (per-tile GroupNorm and attention)');
    } finally {
      await vae.dispose();
    }
  });
}
