// The tiny synthetic AutoencoderKL the streaming writers' tests decode with: tiled on an 8 × 8
// latent window, so a small latent already yields several tile rows (bands).

import { loadVae, type Vae } from '../../decode/vae.js';
import { tileShapePlan, setTiling } from '../../plan/planner.js';

/** Runs `use` with the tiny tiled VAE (synthetic weights of `seed`), disposing it afterwards. */
export async function withTinyTiledVae<T>(seed: number, use: (vae: Vae) => Promise<T>): Promise<T> {
  const config = { _class_name: 'AutoencoderKL', block_out_channels: [8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 };
  const vae = await loadVae({ config, weights: 'synthetic', seed }, { threads: 1 });
  try {
    setTiling(vae, tileShapePlan(vae, 8, 8)!);
    return await use(vae);
  } finally {
    await vae.dispose();
  }
}
