// The HunyuanImage 2.1 VAE family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { hunyuanImageRuntime } from './runtime.js';
import { hunyuanImage } from './spec.js';

export const hunyuanImageFamily = { spec: hunyuanImage, runtime: hunyuanImageRuntime } satisfies Family;
