// `exactTiledEncodeFor(encoder, group)`: halo-exact tiles of a local encoder (TAE without pool
// blocks) dealt to a rank group, as `exactTiledDecodeFor` deals a decoder's: the encode grid's
// tiles with the analysed halo (whole latent units) around their cores, each rank encoding the
// image slices of its tiles with the encoder it loads (`VaeRef.part`) and returning only their
// cores. Equal to the whole encode within float32 tolerance; an encoder with nonlocal ops
// (GroupNorm, attention) is refused before any rank works, naming them.

import type { Encoder } from '../../encode/encoder.js';
import { encodeGrid, sliceImage, untiledEncode, wholeImage, type TiledEncode, type UntiledEncode } from '../../encode/engine.js';
import { throwIfAborted } from '../../errors.js';
import type { ProgramGroup } from '../../ranks/group.js';
import { runExactTiles, type ExactTileStats } from './exact-tiled-decode.js';
import { exactTilingHalo } from './halo.js';

/** Halo-exact tiles of `encoder` dealt to `group`'s ranks (refused, naming the ops, when its graph is not local). */
export function exactTiledEncodeFor(
  encoder: Encoder,
  group: ProgramGroup,
  options: { onStats?: (s: ExactTileStats) => void } = {},
): UntiledEncode<ExactTileStats> {
  const halo = exactTilingHalo(encoder.encoderModel());
  const r = encoder.geometry.spatialRatio;
  let lastStats: ExactTileStats | null = null;
  const encode = async (input: Parameters<TiledEncode>[0], encodeOptions: Parameters<TiledEncode>[1]) => {
    throwIfAborted(encodeOptions.signal);
    // Halo-exact tiles read the image whole (their reads overlap by the halo; not band by band yet).
    const image = wholeImage(input);
    const ref = encoder.rankRef();
    const grid = encodeGrid(encoder, image);
    const { output, stats } = await runExactTiles(group, ref, grid, halo, (read) => sliceImage(image, read, r), encodeOptions);
    lastStats = stats;
    options.onStats?.(stats);
    return output;
  };
  return untiledEncode(encode, () => lastStats);
}
