// The rank program of a row-sharded decode or encode: load the VAE's decoder or its encoder
// (`VaeRef.part`, cached by the rank), build its staged graph once per loaded model, run this
// rank's band with the run's communicator, and return the output band with what the rank sent
// (counters) and how long it took. A band is rows of the graph's input: latent rows for a
// decoder, image rows (whole latent rows of them) for an encoder.

import type { Vae } from '../../decode/vae.js';
import type { Encoder } from '../../encode/encoder.js';
import type { CommCounters, RankContext, VaeRef } from '../../ranks/program.js';
import { resolvePrecision, sessionOptionsOf } from '../../decode/vae.js';
import type { Tensor } from '../../tensor.js';
import { StagedDecoder, type ShardGeometry } from './staged-decoder.js';

export interface ShardRankInput {
  vae: VaeRef;
  /** This rank's rows of the graph input (B, C, band rows, W): latent rows, or an encoder's image rows. */
  latent: Tensor;
  geometry: ShardGeometry;
}

export interface ShardRankResult {
  output: Tensor;
  counters: CommCounters;
  /** Wall time of the program on the rank, and the part spent loading the VAE and building stages. */
  seconds: number;
  loadSeconds: number;
}

let cached: { loaded: Vae | Encoder; halos: boolean; decoder: Promise<StagedDecoder> } | null = null;

/** The staged graph of a loaded decoder or encoder, with halo joins unless one band covers the image (plan.ts ShardPlanOptions). */
async function stagedOf(loaded: Vae | Encoder, threads: number, deviceId: number | undefined, halos: boolean): Promise<StagedDecoder> {
  if (cached?.loaded === loaded && cached.halos === halos) return cached.decoder;
  const previous = cached?.decoder;
  const decoder = (async () => {
    await previous?.then(
      (d) => d.dispose(),
      () => undefined,
    );
    const encoder = 'encoderModel' in loaded;
    const precision = encoder ? resolvePrecision(loaded.config, loaded.loadOptions).precision : loaded.precision;
    const session = sessionOptionsOf({ ...loaded.loadOptions, ...(deviceId !== undefined ? { deviceId } : {}) }, precision);
    const model = encoder ? loaded.encoderModel() : loaded.decoderModel();
    return StagedDecoder.create(model, { ...session, intraOpThreads: threads }, { halos });
  })();
  cached = { loaded, halos, decoder };
  decoder.catch(() => {
    if (cached?.decoder === decoder) cached = null;
  });
  return decoder;
}

export async function shardRank(ctx: RankContext, input: ShardRankInput): Promise<ShardRankResult> {
  const started = performance.now();
  const loaded = input.vae.part === 'encoder' ? await ctx.loadEncoder(input.vae) : await ctx.loadVae(input.vae);
  const halos = input.geometry.bands.length > 1;
  const decoder = await stagedOf(loaded, ctx.threads, ctx.deviceId ?? loaded.loadOptions.deviceId, halos);
  const ready = performance.now();
  const output = await decoder.decodeBand(ctx.comm, input.latent, input.geometry, ctx.signal);
  return { output, counters: ctx.comm.counters(), seconds: (performance.now() - started) / 1000, loadSeconds: (ready - started) / 1000 };
}
