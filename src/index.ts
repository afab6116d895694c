// Public API: re-exports only.
export * from './errors.js';
export * from './tensor.js';
export { DTYPE_BYTES, type DType, type FloatDType, type StoredTensor } from './weights/dtype.js';
export * from './weights/halfprecision.js';
export * from './weights/safetensors.js';
export { parsePth, readPth, type PthContents } from './weights/pth.js';
export { readWeights } from './weights/load.js';
export * from './weights/synthetic.js';
export * from './weights/bind.js';
export * from './io/npy.js';
export * from './io/latents.js';
