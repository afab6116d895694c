// HunyuanImage loaded as users hold it: a diffusers VAE folder whose config.json `_class_name`
// (AutoencoderKLHunyuanImage) picks the family, its encoder tensors in the same file ignored by
// strict binding; and the `vae/` component of a pipeline in the local Hugging Face cache, by repo
// id, with an fp16 `--variant`. Each decodes bitwise as the same weights given in memory do.

import { sourcesTests } from '../testing/sources.js';
import { hunyuanImageRuntime } from './runtime.js';
import { hunyuanImage } from './spec.js';
import { HUNYUAN_IMAGE_TINY } from './testing/configs.js';

sourcesTests({
  spec: hunyuanImage,
  runtime: hunyuanImageRuntime,
  config: HUNYUAN_IMAGE_TINY,
  extras: [['encoder.conv_in.weight', { dims: [32, 3, 3, 3], data: new Float32Array(32 * 27).fill(0.5) }]],
  extrasName: 'encoder tensors',
  latentDims: [1, 64, 5, 6],
  hub: {
    repo: 'tencent/HunyuanImage-2.1',
    pipeline: 'HunyuanImagePipeline',
    vae: 'AutoencoderKLHunyuanImage',
    transformer: 'HunyuanImageTransformer2DModel',
  },
});
