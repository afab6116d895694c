// The latent statistics a checkpoint carries beside the decoder for the pipeline's sake:
// AutoencoderKLFlux2's batch-norm running mean and variance (`bn.running_mean`, `bn.running_var`,
// under the original single-file prefix where the file has one). The decoder never reads them
// (families skip `bn.`); `--latents-scaled` does (io/latent-scaling.ts). Two small tensors are
// read, never the rest of the file.

import { withFileSource } from '../bytes/file-source.js';
import { openWeights } from './weights-file.js';
import { singleFileLayout } from './single-file.js';
import { locationOf, type VaeSource } from './vae-source.js';

/** Flux.2's batch-norm statistics from the source's weights file, or undefined when it holds none (or is synthetic). */
export async function readLatentBatchNorm(source: VaeSource): Promise<{ mean: Float32Array; variance: Float32Array } | undefined> {
  if (!('path' in source)) return undefined;
  return withFileSource(locationOf(source).weightsPath, async (file) => {
    const reader = await openWeights(file);
    const prefix = singleFileLayout(reader.entries)?.prefix ?? '';
    const [meanKey, varKey] = [`${prefix}bn.running_mean`, `${prefix}bn.running_var`];
    if (!reader.entries.has(meanKey) || !reader.entries.has(varKey)) return undefined;
    return { mean: (await reader.readTensor(meanKey)).data, variance: (await reader.readTensor(varKey)).data };
  });
}
