// The decoder graph of what a user names (a checkpoint, or an architecture alone), for locality
// analysis and planning: `distvae analyze` and `shardedDecodeFor`'s users read it without
// building a session. Node only (it resolves paths); a page builds graphs from its own loader.

import { architectureModel, decoderModelOf } from './decoder-model.js';
import { resolveFamily, runtimeOf } from '../families/registry.js';
import type { RawConfig, ResolvedConfig } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { readVaeSource } from '../sources/vae-source.js';

/**
 * The decoder graph of what a user names, for analysis: a checkpoint (`path`, with its family and
 * config as for `loadVae`) with its weights, or an architecture alone (`family` and / or `config`)
 * with zero weights. Refuses a family that does not expose its graph.
 */
export async function decoderGraphOf(source: {
  path?: string;
  family?: string;
  config?: RawConfig;
}): Promise<{ model: ModelProto; config: ResolvedConfig }> {
  if (source.path !== undefined) {
    const read = await readVaeSource({
      path: source.path,
      ...(source.family !== undefined ? { family: source.family } : {}),
      ...(source.config !== undefined ? { config: source.config } : {}),
    });
    return { model: decoderModelOf(read.family, read.runtime, read.config, read.weights), config: read.config };
  }
  const family = resolveFamily(source.family, source.config);
  const config = family.resolveConfig(source.config);
  return { model: architectureModel(family, runtimeOf(family), config), config };
}
