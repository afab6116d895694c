// LTX-2's encoder loaded as users hold it: a diffusers VAE folder whose config.json `_class_name`
// (AutoencoderKLLTX2Video) picks the family, a single .safetensors of diffusers keys with the
// family named, and the `vae/` component of a pipeline in the local Hugging Face cache by repo id
// with an fp16 `--variant` — each encoding bitwise as the same weights given in memory do.

import { encoderSourcesTests } from '../testing/sources.js';
import { ltx2Runtime } from './runtime.js';
import { ltx2 } from './spec.js';
import { LTX2_DIFREF_TINY } from './testing/configs.js';

encoderSourcesTests({
  spec: ltx2,
  runtime: ltx2Runtime,
  config: LTX2_DIFREF_TINY,
  inputDims: [1, 3, 5, 16, 32],
  hub: {
    repo: 'Lightricks/LTX-2',
    pipeline: 'LTX2Pipeline',
    vae: 'AutoencoderKLLTX2Video',
    transformer: 'LTX2VideoTransformer3DModel',
  },
});
