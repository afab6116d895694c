// The rank program of a row-sharded decode: load the VAE (cached by the rank), build its staged
// decoder once per loaded VAE, decode this rank's band with the run's communicator, and return
// the output band with what the rank sent (counters) and how long it took.

import type { Vae } from '../../decode/vae.js';
import type { CommCounters, RankContext, VaeRef } from '../../ranks/program.js';
import { sessionOptionsOf } from '../../decode/vae.js';
import type { Tensor } from '../../tensor.js';
import { StagedDecoder, type ShardGeometry } from './staged-decoder.js';

export interface ShardRankInput {
  vae: VaeRef;
  /** This rank's latent rows (B, C, band rows, W). */
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

let cached: { vae: Vae; halos: boolean; decoder: Promise<StagedDecoder> } | null = null;

/** The staged decoder of `vae`, with halo joins unless one band covers the image (plan.ts ShardPlanOptions). */
async function stagedDecoderOf(vae: Vae, threads: number, deviceId: number | undefined, halos: boolean): Promise<StagedDecoder> {
  if (cached?.vae === vae && cached.halos === halos) return cached.decoder;
  const previous = cached?.decoder;
  const decoder = (async () => {
    await previous?.then(
      (d) => d.dispose(),
      () => undefined,
    );
    const session = sessionOptionsOf({ ...vae.loadOptions, ...(deviceId !== undefined ? { deviceId } : {}) }, vae.precision);
    return StagedDecoder.create(vae.decoderModel(), { ...session, intraOpThreads: threads }, { halos });
  })();
  cached = { vae, halos, decoder };
  decoder.catch(() => {
    if (cached?.decoder === decoder) cached = null;
  });
  return decoder;
}

export async function shardRank(ctx: RankContext, input: ShardRankInput): Promise<ShardRankResult> {
  const started = performance.now();
  const vae = await ctx.loadVae(input.vae);
  const halos = input.geometry.bands.length > 1;
  const decoder = await stagedDecoderOf(vae, ctx.threads, ctx.deviceId ?? vae.loadOptions.deviceId, halos);
  const loaded = performance.now();
  const output = await decoder.decodeBand(ctx.comm, input.latent, input.geometry, ctx.signal);
  return { output, counters: ctx.comm.counters(), seconds: (performance.now() - started) / 1000, loadSeconds: (loaded - started) / 1000 };
}
