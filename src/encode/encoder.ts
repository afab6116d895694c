// Encoding images to latents, the counterpart of loadVae for families that ship an encoder
// (autoencoder-kl, flux2, hunyuan-image, tae): `loadEncoder(path, { family })` reads and binds the encoder's weights and opens its
// session; `encode(image)` maps (B, C, H, W) in [0, 1] to latents (B, Cz, H/r, W/r).
//
// The whole image goes through the encoder in one call: TAEF2's pool blocks normalise over
// the whole feature map, so encoding in tiles would change the latents. H and W must be
// multiples of the spatial ratio r; other sizes are refused with the nearest valid ones rather
// than padded, since padding would put content into the latents that the image does not have
// (the CLI's --crop cuts to a valid size instead; `cropToMultiple` does it here).

import { createHash } from 'node:crypto';
import { BoundEncoder } from './bound-encoder.js';
import { contentHashOf, rankLoadOptions, resolvePrecision, sessionOptionsOf, type LoadOptions } from '../decode/vae.js';
import type { Tensor } from '../tensor.js';
import { reason, refuse } from '../errors.js';
import type { FamilyEncoder, TileRunner } from '../families/runtime-types.js';
import type { FamilySpec, ResolvedConfig } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { readVaeSource, vaeSourceOf, type VaeSource } from '../sources/vae-source.js';

export { checkImage, cropToMultiple } from './image-check.js';

/**
 * A loaded encoder (made by `loadEncoder`), with the source it was read from and what ranks need
 * to load the same one (`useStrategy(encoder, 'tile', group)` deals its tiles to them).
 */
export class Encoder extends BoundEncoder {
  private hash: string | null = null;

  constructor(
    family: FamilySpec,
    config: ResolvedConfig,
    runner: TileRunner,
    readonly source: VaeSource,
    readonly loadOptions: LoadOptions & { moments?: boolean },
    private readonly weights: ReadonlyMap<string, Tensor>,
    private readonly release: () => void = () => undefined,
    private readonly runtime?: FamilyEncoder,
  ) {
    super(family, config, runner, runtime ?? {});
  }

  /**
   * The fused encoder graph with the bound weights (image in, latents out), which locality
   * analysis, row sharding and halo-exact tiles read — the moments graph where this encoder was
   * loaded with `moments` (ranks load with the same options, so they run what the runner runs);
   * refused (NO_ENCODER_GRAPH) for a family whose encoder does not expose it.
   */
  encoderModel(): ModelProto {
    const withheld = this.runtime?.graphWithheld;
    if (!this.runtime?.graph || withheld !== undefined) {
      refuse(
        'UNSUPPORTED',
        reason(
          'NO_ENCODER_GRAPH',
          'family',
          this.family.name,
          'a family whose encoder is one graph',
          `the ${this.family.name} encoder is not one graph${withheld ? ` (${withheld})` : ''}: row sharding and halo-exact tiles need it`,
        ),
      );
    }
    return this.runtime.graph(this.config, this.weights, this.loadOptions.moments === true ? { moments: true } : {}).toModel();
  }

  /**
   * What a rank loads to run this encoder (a `VaeRef` with `part: 'encoder'`): its source, its
   * load options and the content hash the rank's copy must have.
   */
  rankRef(): { source: VaeSource; loadOptions: LoadOptions; hash: string; part: 'encoder' } {
    return { source: this.source, loadOptions: this.loadOptions, hash: this.contentHash(), part: 'encoder' };
  }

  /**
   * SHA-256 of the resolved config and the bound encoder weights — and, loaded with `moments`, of
   * that too: what a rank or queue worker checks it loaded. The moments and the mean are other
   * tensors from the same weights, so a worker holding the mean-only encoder refuses a `--sample`
   * run (and the reverse) instead of returning tiles of the wrong width.
   */
  contentHash(): string {
    if (this.hash === null) {
      const weights = contentHashOf(this.family, this.config, this.weights);
      this.hash = this.loadOptions.moments === true ? createHash('sha256').update(`${weights}:moments`).digest('hex') : weights;
    }
    return this.hash;
  }

  override async dispose(): Promise<void> {
    await super.dispose();
    this.release();
  }
}

/**
 * Loads an encoder: `loadEncoder('taef2_encoder.pth', { family: 'tae' })`, a diffusers
 * AutoencoderTiny folder, or `loadEncoder({ family: 'tae', config, weights: 'synthetic', seed })`.
 * `moments: true` (families whose encoder declares `moments`; ignored by others, so check
 * `runtime.encoder.moments` first) makes `encode` return the distribution's moments, (B, 2Cz, …).
 */
export async function loadEncoder(
  source: string | VaeSource,
  options: LoadOptions & { family?: string; moments?: boolean } = {},
): Promise<Encoder> {
  const resolved = vaeSourceOf(source, options.family);
  const { family, config, runtime, weights, release } = await readVaeSource(resolved, 'encoder');
  const runner = await runtime.encoder!.createRunner(
    config,
    weights,
    sessionOptionsOf(options, resolvePrecision(config, options).precision),
    options.moments === true ? { moments: true } : {},
  );
  // Ranks load the same half the same way: with the moments where this one returns them (every strategy).
  const rankOptions = { ...rankLoadOptions(options), ...(options.moments === true ? { moments: true } : {}) };
  return new Encoder(family, config, runner, resolved, rankOptions, weights, release, runtime.encoder!);
}
