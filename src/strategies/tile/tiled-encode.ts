// `tiledEncodeFor(encoder, group)`: the distributed replacement for an encoder's `tiledEncode`.
// The encode grid (plan/grid.ts, `encode`: windows in input pixels, blend overlap/r latent units)
// goes through the same dealing, tile program, edge exchange and assembly as a tiled decode
// (`distributeTiles`); each rank loads the encoder (`VaeRef.part`) and encodes the image tiles it
// is dealt — local ranks, or queue workers serving the encoder (raw tiles back, blended here) —
// its input band pulled from the image (rows read band by band, or a tensor) as the tile is
// handed out. Bitwise identical to `localTiledEncode` of the same plan.

import { encodeGrid, type EncodeOptions, type TiledEncode, type TileInputOptions } from '../../encode/engine.js';
import { TileBands } from '../../encode/tile-bands.js';
import type { Encoder } from '../../encode/encoder.js';
import type { ProgressCounter } from '../../decode/types.js';
import { throwIfAborted } from '../../errors.js';
import type { RankGroup } from '../../ranks/group.js';
import { distributeTiles, type DistributedDecodeStats } from './tiled-decode.js';

/** Options of `tiledEncodeFor`. */
export interface TiledEncodeForOptions {
  /** Called after every call with its statistics. */
  onStats?: (stats: DistributedDecodeStats) => void;
}

/**
 * The distributed tiling operation of `encoder` on `group`, or null when there is nothing to
 * distribute (one rank, or tiling off). On a queue group the workers must serve this encoder
 * (started with its `VaeRef`, `part: 'encoder'`): a worker holding another VAE fails the encode
 * naming both content hashes.
 */
export function tiledEncodeFor(encoder: Encoder, group: RankGroup, options: TiledEncodeForOptions = {}): TiledEncode | null {
  if (group.size < 2 || !encoder.tiling.enabled) return null;
  return async (image, encodeOptions: EncodeOptions & TileInputOptions & { progress?: ProgressCounter }) => {
    throwIfAborted(encodeOptions.signal);
    const grid = encodeGrid(encoder, image);
    // Each tile's band pulled from the input as the dealer hands the tile out (encode/tile-bands.ts).
    const bands = new TileBands(image, grid.tiles, encoder.geometry.spatialRatio, encodeOptions.reopen);
    const { dims, output, stats } = await distributeTiles(group, encoder.rankRef(), grid, (index) => bands.tile(index), encodeOptions);
    encodeOptions.onBandBytes?.(bands.peakBytesHeld);
    options.onStats?.(stats);
    return { dims, data: output!.data };
  };
}
