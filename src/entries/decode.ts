// `distvae/decode`: the decode engine's own calls beneath `vae.decode` and the decode session —
// latent checks, the local tiled decode, decodes handed on as bands of rows or chunks of frames,
// the session's option checks and report parts, the fused decoder graph of what a user names, and
// whether a GPU provider's native layers (Dawn, the Vulkan loader, Mesa) may print their own lines.

export { decodeToBands, decodeToFrames, localTiledDecode } from '../decode/engine.js';
export { checkLatents } from '../decode/latents.js';
export type { RankStats, TiledDecode } from '../decode/types.js';
export type { TileRunner } from '../families/runtime-types.js';
export { decoderGraphOf } from '../decode/decoder-graph.js';
export { decodeFilesReasons, OUTPUT_FORMATS, type OptionLabels, type OutputFormat } from '../session/options.js';
export { installRequestedTiling } from '../session/decision.js';
export { alternativeJson, choiceJson, memoryJson, type ChoiceReport, type FileProgress, type MemoryReport } from '../session/report.js';
export { showNativeOutput } from '../runtime/native-output.js';
export { resolvePrecision } from '../decode/vae.js';
