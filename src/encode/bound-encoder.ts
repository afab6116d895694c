// An encoder wherever it runs (loadEncoder in Node, loadWebEncoder in a page): its family and
// config, and `encode`, which checks the image before the runner sees it and the latents after. Each loader adds what
// its host knows (the source read, the page's runtime).

import type { TileRunner } from '../families/runtime-types.js';
import type { FamilySpec, ResolvedConfig } from '../families/types.js';
import type { Tensor } from '../tensor.js';
import { checkFiniteOutput } from '../tile/finite.js';
import { checkImage } from './image-check.js';

/** A loaded encoder: images (B, C, H, W) with values in [0, 1] to latents (B, Cz, H/r, W/r). */
export interface BoundEncoder {
  readonly family: FamilySpec;
  readonly config: ResolvedConfig;
  /** Latents of `image`; an image the encoder cannot take is refused first (`checkImage`). */
  encode(image: Tensor, options?: { signal?: AbortSignal }): Promise<Tensor>;
  /** Frees the encoder's sessions. */
  dispose(): Promise<void>;
}

/** The encoder that `runner` (the family's encoder runner) runs for `config`. */
export function boundEncoder(family: FamilySpec, config: ResolvedConfig, runner: TileRunner): BoundEncoder {
  return {
    family,
    config,
    async encode(image, options = {}) {
      checkImage(config, image);
      const latents = await runner.decode(image, options.signal);
      checkFiniteOutput(latents, 'the encode');
      return latents;
    },
    dispose: () => runner.dispose(),
  };
}
