// `distvae/sources`: from what a user names to a family, a config and weights — the local Hub
// cache, diffusers folders and pipelines, single files in original layouts, config.json — and the
// readers beneath: byte sources (buffers, Blobs, HTTP Range, files), safetensors, .pth, tensors.

export { DIFFUSERS_WEIGHTS_FILE, readVaeSource, vaeSpecOfSource, type VaePart } from '../sources/vae-source.js';
export { readConfigJson } from '../sources/config-file.js';
export { readLatentBatchNorm } from '../sources/latent-statistics.js';
export { openWeights, readBoundWeights, readWeights } from '../sources/weights-file.js';
export { hubCacheDirs, locateVae, parseRepoId, withVariant, type LocateOptions, type VaeLocation } from '../sources/locate.js';
export { singleFileConfig, singleFileLayout, singleFileToDiffusers, type SingleFileLayout } from '../sources/single-file.js';
export { bytesSource, blobSource, httpRangeSource, type ByteSource } from '../bytes/byte-source.js';
export { openFileSource, withFileSource, type FileByteSource } from '../bytes/file-source.js';
export { readTensors, type TensorEntry, type TensorReader } from '../weights/reader.js';
export type { DType, FloatDType, StoredTensor } from '../weights/dtype.js';
export { encodeSafetensors, parseSafetensors, readSafetensors, writeSafetensors } from '../weights/safetensors.js';
export { openPth, parsePth, readPth, type PthContents, type PthReader } from '../weights/pth.js';
