// `distvae/io`: files in and out beyond the root's readers and writers — latent formats and
// their scaling, the .npy codec, image and video details, atomic writes, quality figures.

export { COMFY_LATENT_KEY, LATENTS_KEY, type ReadLatentsOptions } from '../io/latents.js';
export {
  latentScalingOf,
  scaleLatents,
  unscaleLatents,
  type LatentBatchNorm,
  type LatentScaling,
} from '../io/latent-scaling.js';
export { encodeNpy, npyHeader, parseNpy, type NpyDType, type NpyWriteOptions } from '../io/npy.js';
export { decodeImage, READABLE_IMAGE_FORMATS, sampleToImage } from '../io/image.js';
export { DEFAULT_FPS, type VideoOptions } from '../io/video.js';
export { AtomicFile, withAtomicFile, writeFileAtomic } from '../bytes/atomic-file.js';
export { checkImage } from '../encode/encoder.js';
export type { BoundEncoder } from '../encode/bound-encoder.js';
