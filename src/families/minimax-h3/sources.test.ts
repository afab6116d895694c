// MiniMax-H3 loaded as users hold it: a diffusers VAE folder whose config.json `_class_name`
// (AutoencoderKLMiniMaxH3) picks the family, its encoder and quant_conv tensors in the same file
// ignored by strict binding; and the `vae/` component of a pipeline in the local Hugging Face cache,
// by repo id, with an fp16 `--variant`. Each decodes bitwise as the same weights given in memory do;
// the encoder loads from those and from a diffusers-key single file with the family, bitwise its
// in-memory encode.
// (MiniMax ships no original single-file layout of its own for this VAE: its release is the
// diffusers folder, so there is no other layout to read.)

import { encoderSourcesTests, sourcesTests } from '../testing/sources.js';
import { miniMaxH3Runtime } from './runtime.js';
import { miniMaxH3 } from './spec.js';
import { MINIMAX_H3_TINY } from './testing/configs.js';

sourcesTests({
  spec: miniMaxH3,
  runtime: miniMaxH3Runtime,
  config: MINIMAX_H3_TINY,
  extras: [
    ['encoder.conv_in.weight', { dims: [16, 3, 3, 3, 3], data: new Float32Array(16 * 81).fill(0.5) }],
    ['quant_conv.weight', { dims: [48, 48, 1, 1, 1], data: new Float32Array(48 * 48).fill(0.25) }],
  ],
  extrasName: 'encoder and quant_conv tensors',
  latentDims: [1, 24, 3, 4, 5],
  hub: {
    repo: 'MiniMaxAI/MiniMax-H3',
    pipeline: 'MiniMaxH3Pipeline',
    vae: 'AutoencoderKLMiniMaxH3',
    transformer: 'MiniMaxH3Transformer3DModel',
  },
});

encoderSourcesTests({
  spec: miniMaxH3,
  runtime: miniMaxH3Runtime,
  config: MINIMAX_H3_TINY,
  inputDims: [1, 3, 5, 16, 20],
  hub: {
    repo: 'MiniMaxAI/MiniMax-H3',
    pipeline: 'MiniMaxH3Pipeline',
    vae: 'AutoencoderKLMiniMaxH3',
    transformer: 'MiniMaxH3Transformer3DModel',
  },
});
