// `shardedEncodeFor(encoder, group)`: row sharding of an encoder, a drop-in for
// `encoder.tiledEncode` (docs/design.md §6). The image's rows are split into one band per rank,
// each whole latent rows (r input rows apiece: bands.ts splitInputBands), so every stride-2
// down-sampler — and diffusers' bottom pad before it — splits exactly between bands; every rank
// runs the encoder's stages on its band with the halos the locality analysis gives, GroupNorm
// statistics merged by Chan's formula and the mid-block attention's keys and values gathered
// (staged-decoder.ts, the same machinery as a sharded decode); the coordinator stacks the latent
// bands. Equal to the whole encode within float32 tolerance, whatever the tile plan. The
// encoder's graph is analysed before any rank starts: nonlocal ops that are not sync regions
// are refused by name, and so are more ranks than the image has latent rows.

import type { Encoder } from '../../encode/encoder.js';
import { untiledEncode, wholeImage, type TiledEncode, type UntiledEncode } from '../../encode/engine.js';
import { throwIfAborted } from '../../errors.js';
import type { ProgramGroup } from '../../ranks/group.js';
import { splitInputBands } from './bands.js';
import { shardPlan } from './plan.js';
import { runSharded, type ShardStats } from './sharded-decode.js';

/** A row-sharded encode through a rank group, with the statistics of its last call. */
export type ShardedEncode = UntiledEncode<ShardStats>;

/**
 * The row-sharded encode of `encoder` on `group` (any size, 1 included). Usage:
 * `encoder.tiledEncode = shardedEncodeFor(encoder, group)` (or `useStrategy(encoder, 'shard',
 * group)`); `lastStats` then holds the bands (in input rows), per-rank times and collectives,
 * with the analysis' prediction of the collectives beside them.
 */
export function shardedEncodeFor(
  encoder: Encoder,
  group: ProgramGroup,
  options: { onStats?: (s: ShardStats) => void } = {},
): ShardedEncode {
  const plan = shardPlan(encoder.encoderModel());
  let lastStats: ShardStats | null = null;
  const encode = async (image: Parameters<TiledEncode>[0], encodeOptions: Parameters<TiledEncode>[1]) => {
    throwIfAborted(encodeOptions.signal);
    const r = encoder.geometry.spatialRatio;
    const bands = splitInputBands(image.dims.at(-2)!, group.size, r);
    const ref = encoder.rankRef();
    const { output, stats } = await runSharded(
      group,
      plan,
      ref,
      // The rank bands are cut from the whole image (not read band by band yet).
      wholeImage(image),
      bands,
      encodeOptions.signal,
      (b) => `image rows ${b.start}..${b.end}`,
    );
    lastStats = stats;
    options.onStats?.(stats);
    return output;
  };
  return untiledEncode(encode, () => lastStats);
}
