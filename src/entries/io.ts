// `distvae/io`: files in and out beyond the root's readers and writers — latent formats and
// their scaling and sampling, the .npy codec, image inputs read band by band, image and video
// details, atomic writes, quality figures.

export { COMFY_LATENT_KEY, LATENTS_KEY, type ReadLatentsOptions } from '../io/latents.js';
export { latentScalingOf, scaleLatents, unscaleLatents, type LatentBatchNorm, type LatentScaling } from '../io/latent-scaling.js';
export { encodeNpy, npyHeader, parseNpy, type NpyDType, type NpyWriteOptions } from '../io/npy.js';
export { decodeImage, READABLE_IMAGE_FORMATS } from '../io/image.js';
export {
  channelAffine,
  imageToInput,
  imageValue,
  inputValue,
  sampleToImage,
  type ChannelAffine,
  type ChannelNormalization,
} from '../io/sample-range.js';
export { DEFAULT_FPS, type VideoOptions } from '../io/video.js';
export { AtomicFile, withAtomicFile, writeFileAtomic } from '../bytes/atomic-file.js';
export { checkImage } from '../encode/encoder.js';
export { openImageRows, readAllRows, tensorRows, type RowSource } from '../io/row-source.js';
export { PngRowReader, type PngHeader } from '../io/png-rows.js';
export { MAX_CHUNK_BYTES, MAX_CHUNK_FRAMES, openVideoInput, type VideoInput, type VideoInputOptions } from '../io/video-input.js';
export { LATENT_OUTPUT_EXTENSIONS, latentsOutputReasons, writeLatentsFile, type LatentsOutputOptions } from '../io/latents-out.js';
export { latentMean, normalStream, refuseSamplingWithout, sampleLatents } from '../io/latent-sample.js';
export { outputPathReasons } from '../session/output-path.js';
export type { BoundEncoder } from '../encode/bound-encoder.js';
